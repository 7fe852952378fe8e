package cassandra

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

var _ microblog.PartLoader = (*DB)(nil)

// PopulatePart implements microblog.PartLoader. Several processes, each
// with its own DB and no word from the others, may load parts of one
// dataset into one keyspace at once:
//
//   - the tables are created IF NOT EXISTS through one coordinator that
//     every process picks alike (schemaHost), then schema agreement;
//   - the model is recorded by a lightweight transaction (INSERT ... IF NOT
//     EXISTS), so the first part to start decides it and a part of another
//     model is refused with microblog.ErrModelMismatch;
//   - the part's rows are inserts of fixed keys, never a truncation;
//   - once they are acknowledged the part is recorded in mb_parts, and the
//     part that then reads all N parts recorded writes the users and
//     follows counts that mark the dataset whole (two finishing together
//     write the same).
//
// The records of parts, the model and the counts are written and read at
// QUORUM whatever the DSN's consistency: a part recorded is then seen by
// every later read, so of two parts finishing together at least the later
// finds both.
func (db *DB) PopulatePart(ctx context.Context, model microblog.Model, ds *microblog.Dataset, part microblog.Part) error {
	if _, err := microblog.ParseModel(string(model)); err != nil {
		return fmt.Errorf("cassandra: %w: %w", adapter.ErrUnsupported, err)
	}
	if ds == nil {
		return errors.New("cassandra: load part: nil dataset")
	}
	if err := part.Validate(ds); err != nil {
		return err
	}
	if err := db.createPartTables(ctx); err != nil {
		return err
	}
	parts, err := db.loadedParts(ctx)
	if err != nil {
		return err
	}
	if err := part.CheckRecorded(parts); err != nil {
		return fmt.Errorf("cassandra: %w", err)
	}
	meta, err := db.readMeta(ctx)
	if err != nil {
		return err
	}
	if have := meta["model"]; have != "" && have != string(model) {
		return mismatch(have, model)
	}
	if _, whole := meta["users"]; whole && len(parts) == 0 {
		return fmt.Errorf("cassandra: part %s: the dataset was loaded whole: %w", part, microblog.ErrPartLoaded)
	}
	if err := db.recordModel(ctx, model); err != nil {
		return err
	}
	s := &mbStore{db: db, model: model}
	if err := s.load(ctx, ds, part); err != nil {
		return s.errf("load part %s: %w", part, err)
	}
	q := "INSERT INTO " + db.t("mb_parts") + " (bucket, part) VALUES (0, ?)"
	if err := db.s.Query(q, part.String()).Consistency(gocql.Quorum).Idempotent(true).RetryPolicy(populateRetry).ExecContext(ctx); err != nil {
		return fmt.Errorf("cassandra: record part %s: %w", part, err)
	}
	if parts, err = db.loadedParts(ctx); err != nil {
		return err
	}
	if !part.Complete(parts) {
		return nil
	}
	q = "INSERT INTO " + db.t("mb_meta") + " (k, v) VALUES (?, ?)"
	for _, kv := range [][2]string{{"users", strconv.Itoa(ds.Users)}, {"follows", strconv.FormatInt(ds.Whole().Follows, 10)}} {
		if err := db.s.Query(q, kv[0], kv[1]).Consistency(gocql.Quorum).Idempotent(true).RetryPolicy(populateRetry).ExecContext(ctx); err != nil {
			return fmt.Errorf("cassandra: record the whole dataset's counts: %w", err)
		}
	}
	return nil
}

// mismatch is the error of a part of model loaded into a keyspace that
// holds (or is being loaded with) the model have.
func mismatch(have string, model microblog.Model) error {
	return fmt.Errorf("cassandra: %w: the keyspace holds (or is being loaded with) the %s model; load the %s model into a fresh keyspace",
		microblog.ErrModelMismatch, have, model)
}

// createPartTables creates the microblog tables, as Microblog does, but
// through schemaHost: two coordinators each creating a table that neither
// has yet can give it two ids, a schema disagreement Cassandra does not
// resolve by itself (reads then fail with INCOMPATIBLE_SCHEMA); one
// coordinator runs the statements one after the other, and IF NOT EXISTS
// makes the second a no-op. Only when the driver has no connection to that
// host is the driver's choice used: after a timeout the host may still
// apply the statement, and a second coordinator would race it. The parts
// of one process create the tables one at a time.
func (db *DB) createPartTables(ctx context.Context) error {
	db.partSchema.Lock()
	defer db.partSchema.Unlock()
	host := db.schemaHost()
	return db.createTablesWith(ctx, func(name, stmt string) error {
		err := db.s.Query(stmt).Consistency(gocql.All).SetHostID(host).ExecContext(ctx)
		if errors.Is(err, gocql.ErrNoConnections) && host != "" {
			err = db.s.Query(stmt).Consistency(gocql.All).ExecContext(ctx)
		}
		if err != nil {
			return fmt.Errorf("cassandra: %s: %w", firstWords(stmt, 6), err)
		}
		if err := db.awaitSchema(ctx, stmt); err != nil {
			return err
		}
		return db.awaitTable(ctx, name)
	}, mbTables...)
}

// awaitTable waits, at most tableWait, until every node up knows table
// name. Schema agreement alone is not enough here: a part whose CREATE ...
// IF NOT EXISTS found the table already made by another part changed
// nothing, and the driver's agreement check, asked before the other's
// change had reached the node it asks, saw every node agree on the old
// schema; the part's next read then went to a node without the table
// ("table mb_parts does not exist", seen on a 3-node cluster).
func (db *DB) awaitTable(ctx context.Context, name string) error {
	wctx, cancel := context.WithTimeout(ctx, tableWait)
	defer cancel()
	const q = "SELECT table_name FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?"
	for _, h := range db.s.GetHosts() {
		if !h.IsUp() || h.HostID() == "" {
			continue
		}
		for {
			var got string
			err := db.s.Query(q, db.ks, name).SetHostID(h.HostID()).Consistency(gocql.One).ScanContext(wctx, &got)
			if err == nil && got == name {
				break
			}
			select {
			case <-wctx.Done():
				return fmt.Errorf("cassandra: node %s does not know table %s.%s after %s (%v)", h.ConnectAddress(), db.ks, name, tableWait, err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// tableWait bounds awaitTable.
const tableWait = 30 * time.Second

// schemaHost is the host id every process loading parts picks for its
// schema statements: the smallest id of the hosts up, as the driver sees
// the ring ("" when it knows none).
func (db *DB) schemaHost() string {
	var ids []string
	for _, h := range db.s.GetHosts() {
		if h.IsUp() && h.HostID() != "" {
			ids = append(ids, h.HostID())
		}
	}
	if len(ids) == 0 {
		return ""
	}
	return slices.Min(ids)
}

// loadedParts reads the parts recorded (at QUORUM, retried as readMeta).
func (db *DB) loadedParts(ctx context.Context) ([]string, error) {
	it := db.s.Query("SELECT part FROM " + db.t("mb_parts") + " WHERE bucket = 0").Consistency(gocql.Quorum).Idempotent(true).RetryPolicy(populateRetry).IterContext(ctx)
	var parts []string
	var p string
	for it.Scan(&p) {
		parts = append(parts, p)
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: read loaded parts: %w", err)
	}
	return parts, nil
}

// readMeta reads mb_meta (at QUORUM; a read, retried like the load's
// writes when a stalled replica times it out).
func (db *DB) readMeta(ctx context.Context) (map[string]string, error) {
	it := db.s.Query("SELECT k, v FROM " + db.t("mb_meta")).Consistency(gocql.Quorum).Idempotent(true).RetryPolicy(populateRetry).IterContext(ctx)
	meta := map[string]string{}
	var k, v string
	for it.Scan(&k, &v) {
		meta[k] = v
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("cassandra: read microblog metadata: %w", err)
	}
	return meta, nil
}

// recordModel records model unless a model is recorded, by a lightweight
// transaction, and refuses another model recorded before.
//
// Parts that start together contend for the same Paxos row, and a node
// stalled by a long GC pause can leave a round short of a quorum; the
// coordinator then answers with a write timeout whose outcome is unknown.
// Running the same INSERT ... IF NOT EXISTS again is harmless (it applies
// now or reports the model that did), so the query is marked idempotent
// and retried with backoff like the load's other writes.
func (db *DB) recordModel(ctx context.Context, model microblog.Model) error {
	q := "INSERT INTO " + db.t("mb_meta") + " (k, v) VALUES ('model', ?) IF NOT EXISTS"
	prev := map[string]any{}
	applied, err := db.s.Query(q, string(model)).Consistency(gocql.Quorum).SerialConsistency(gocql.Serial).
		Idempotent(true).RetryPolicy(populateRetry).MapScanCASContext(ctx, prev)
	if err != nil {
		return fmt.Errorf("cassandra: record microblog model: %w", err)
	}
	if applied {
		return nil
	}
	if have, _ := prev["v"].(string); have != string(model) {
		return mismatch(have, model)
	}
	return nil
}
