package sqlserver

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/adapter/adaptertest"
	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/workload/ingest"
)

// One Iridium SQL server for the whole package, started through the
// engine on first use and stopped by TestMain; every test gets a fresh
// database. In memory: Iridium's disk storage made the same suite 4 times
// slower (its writes slow down as a table grows either way).
var server = &clustertest.SharedCluster{Engine: "sqlserver", Options: cluster.Options{Nodes: 1, Extra: map[string]string{"storage": "memory"}}, Timeout: time.Minute}

func TestMain(m *testing.M) { os.Exit(server.Stop(m.Run())) }

// testPassword is put in every test DSN (Iridium, started without
// credentials, accepts any login): no output may show it.
const testPassword = "pw-s3cr3t-fb"

// engineDSN starts the package's server once and returns the DSN the
// engine gives (standin=iridium: no relay, the adapter rewrites Iridium's
// defects itself) with a password added; it fails the test (skips it
// under -short) when Iridium is not built.
func engineDSN(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(server.Get(t).DSN)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword("fieldbench", testPassword)
	return u.String()
}

// freshDSN returns the DSN of the package's database emptied of the
// ingest table. Iridium SQL has no CREATE DATABASE and one namespace for
// every database name, so the tests that use the server run one after the
// other (none calls t.Parallel) and each starts from an empty database.
func freshDSN(t *testing.T) string {
	t.Helper()
	dsn := engineDSN(t)
	db, err := Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.pool.QueryRowContext(t.Context(),
		"SELECT COUNT(*) FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_NAME = @p1", ingestTable).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n > 0 {
		if _, err := db.pool.ExecContext(t.Context(), "DROP TABLE "+quoteIdent(ingestTable)); err != nil {
			t.Fatal(err)
		}
	}
	return dsn
}

// openFresh opens the emptied database, closed when the test ends.
func openFresh(t *testing.T) *DB {
	t.Helper()
	return adaptertest.Open(t, Open, freshDSN(t))
}

// TestConformance runs the shared conformance suite against Iridium SQL
// through the DSN the engine gives.
func TestConformance(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T) adapter.DB { return openFresh(t) })
}

// TestIridiumNeedsStandin pins why standin=iridium exists: go-mssqldb
// connecting to Iridium without it fails on the pre-login packet type
// (and the error says what to add), and with it both rewrites were made.
// When a later Iridium answers right, this fails and the option can go.
func TestIridiumNeedsStandin(t *testing.T) {
	dsn := engineDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if q.Get("standin") != StandinIridium {
		t.Fatalf("the engine's DSN has no standin=iridium: %s", redact.DSN(dsn))
	}
	q.Del("standin")
	u.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	db, err := Open(ctx, u.String())
	if err == nil {
		db.Close()
		t.Fatal("go-mssqldb connected to Iridium SQL without standin=iridium: the rewrites are no longer needed")
	}
	if !strings.Contains(err.Error(), "expected packet type 4") || !strings.Contains(err.Error(), "add standin=iridium") {
		t.Errorf("direct connection failed otherwise than on the pre-login packet type, or without the hint: %v", err)
	}
	if strings.Contains(err.Error(), testPassword) {
		t.Errorf("error shows the password: %v", err)
	}
	db = openFresh(t)
	info, err := db.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := db.fixes.Counts(); n.PreloginPackets == 0 || n.Collations == 0 {
		t.Errorf("rewrite counts %+v: both rewrites should have been made", n)
	}
	if !strings.HasPrefix(info.Version, "Iridium SQL (reports Microsoft SQL Server 2022") || info.Config["stand_in"] == "" ||
		info.Config["ingest"] != "insert" || info.Config["tds_rewrites"] != StandinNote {
		t.Errorf("info %+v", info)
	}
	for k, v := range info.Config {
		if strings.Contains(v, testPassword) {
			t.Errorf("info %s shows the password", k)
		}
	}
	t.Logf("Info.Version on Iridium SQL: %q", info.Version)
}

// storedRecords reads the ingest table back, the times from their
// microseconds, for adaptertest.IngestStoresExactly.
func storedRecords(db *DB) func(context.Context) ([]ingest.Record, error) {
	return func(ctx context.Context) ([]ingest.Record, error) {
		rows, err := db.pool.QueryContext(ctx, adaptertest.SelectIngestRecords(ingestTable))
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		recs, err := adaptertest.CollectRecords(rows, func() (ingest.Record, error) {
			var r ingest.Record
			var m, rec int64
			err := rows.Scan(&r.ID, &r.Source, &r.Seq, &r.Channel, &m, &r.Tag, &r.Quality, &r.Value, &rec)
			r.MeasuredAt, r.RecordedAt = time.UnixMicro(m).UTC(), time.UnixMicro(rec).UTC()
			return r, err
		})
		if err != nil {
			return nil, err
		}
		return recs, rows.Close()
	}
}

// TestIngestStoresExactly runs concurrent sources with batches that are
// and are not multiples of the INSERT's rows, and one batch per INSERT,
// and checks every stored record against the generator; then a cancelled
// batch stores nothing.
func TestIngestStoresExactly(t *testing.T) {
	rows := defaultInsertRows()
	for _, tc := range []struct {
		name    string
		sources int
		records int64
		batch   int
	}{
		{"transactions of several inserts", 3, 400, 2*rows + 5},
		{"one insert a batch", 4, 60, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openFresh(t)
			s, err := db.Ingest(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			cfg := ingest.RunConfig{Sources: tc.sources, Records: tc.records, Batch: tc.batch, Seed: 11}
			adaptertest.IngestStoresExactly(t, s, cfg, storedRecords(db))
		})
	}
	t.Run("cancelled batch", func(t *testing.T) {
		db := openFresh(t)
		s, err := db.Ingest(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		adaptertest.IngestCancelledBatch(t, s)
	})
}

// TestIngestFailedBatchRollsBack: a batch of several INSERTs whose last
// one fails (a tag too long for its column) leaves nothing stored and the
// connection usable.
func TestIngestFailedBatchRollsBack(t *testing.T) {
	db := openFresh(t)
	s, err := db.Ingest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs := make([]ingest.Record, 2*defaultInsertRows()+1)
	ingest.Fill(recs, 3, 0, 0)
	recs[len(recs)-1].Tag = strings.Repeat("x", 200)
	if err := s.InsertBatch(t.Context(), recs); err == nil {
		t.Fatal("a batch with a 200-character tag was stored")
	}
	if n, err := s.Count(t.Context()); err != nil || n != 0 {
		t.Fatalf("count %d (%v) after a failed batch, want 0", n, err)
	}
	if err := s.InsertBatch(t.Context(), recs[:3]); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Count(t.Context()); err != nil || n != 3 {
		t.Fatalf("count %d (%v), want 3", n, err)
	}
}

func TestDefaultInsertRows(t *testing.T) {
	t.Parallel()
	rows := defaultInsertRows()
	if rows < 10 || rows > maxInsertRows || len(insertSQL(rows)) > maxTextChars || declChars(rows) > maxTextChars {
		t.Fatalf("defaultInsertRows = %d (text %d, declarations %d characters)", rows, len(insertSQL(rows)), declChars(rows))
	}
	if len(insertSQL(rows+1)) <= maxTextChars && declChars(rows+1) <= maxTextChars {
		t.Errorf("%d rows would fit too", rows+1)
	}
	t.Logf("%d records per INSERT", rows)
}

func TestParseDSN(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		dsn     string
		host    string
		port    uint64
		db      string
		ingest  IngestMode
		standin string
		err     string
	}{
		{name: "plain", dsn: "sqlserver://sa:secret@127.0.0.1:1433?database=fb", host: "127.0.0.1", port: 1433, db: "fb", ingest: IngestInsert},
		{name: "bulk and driver params", dsn: "sqlserver://sa:secret@h:14330?database=fb&ingest=bulk&encrypt=disable&dial+timeout=3", host: "h", port: 14330, db: "fb", ingest: IngestBulk},
		{name: "no database", dsn: "sqlserver://sa:secret@h:1", err: "names no database"},
		{name: "no host", dsn: "sqlserver://?database=fb", err: "no host"},
		{name: "instance path", dsn: "sqlserver://sa:secret@h/SQLEXPRESS?database=fb", err: "instance"},
		{name: "bad ingest", dsn: "sqlserver://sa:secret@h:1?database=fb&ingest=copy", err: "want insert or bulk"},
		{name: "wrong scheme", dsn: "mssql://sa:secret@h:1?database=fb", err: "scheme"},
		{name: "rows", dsn: "sqlserver://sa:secret@h:1?database=fb&rows=100", host: "h", port: 1, db: "fb", ingest: IngestInsert},
		{name: "too many rows", dsn: "sqlserver://sa:secret@h:1?database=fb&rows=234", err: "want 1 to 233"},
		{name: "bad driver param", dsn: "sqlserver://sa:secret@h:1?database=fb&encrypt=maybe", err: "DSN parameters"},
		{name: "stand-in", dsn: "sqlserver://sa:secret@h:1?database=fb&encrypt=disable&standin=iridium", host: "h", port: 1, db: "fb", ingest: IngestInsert, standin: StandinIridium},
		{name: "stand-in with TLS", dsn: "sqlserver://sa:secret@h:1?database=fb&standin=iridium", err: "needs encrypt=disable"},
		{name: "unknown stand-in", dsn: "sqlserver://sa:secret@h:1?database=fb&encrypt=disable&standin=babelfish", err: "only stand-in is iridium"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseDSN(tc.dsn)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Fatalf("error shows the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			d := c.Driver
			if d.Host != tc.host || d.Port != tc.port || d.Database != tc.db || c.Database != tc.db || d.User != "sa" || d.Password != "secret" || c.Ingest != tc.ingest || c.Standin != tc.standin {
				t.Errorf("config %+v, driver host %s port %d db %s user %s", c, d.Host, d.Port, d.Database, d.User)
			}
			for _, k := range ownParams {
				if _, ok := d.Parameters[k]; ok {
					t.Errorf("%s= reached the driver", k)
				}
			}
		})
	}
}

func TestRegistered(t *testing.T) {
	t.Parallel()
	a, err := adapter.ForDSN("sqlserver://u:p@h:1?database=x")
	if err != nil || a.Name() != Name {
		t.Fatalf("ForDSN = %v, %v", a, err)
	}
	if got := (Adapter{}).Families(); !slices.Equal(got, []string{"ingest"}) {
		t.Errorf("families %v", got)
	}
	// `fieldbench list` shows Describe: bulk copy must say it is not
	// verified, and the stand-in must be named.
	if d := (Adapter{}).Describe(); !strings.Contains(d, "ingest=bulk and rows above the default: "+NotVerified) || !strings.Contains(d, "Iridium SQL") ||
		!strings.Contains(d, "never needed on a real SQL Server") {
		t.Errorf("Describe = %q", d)
	}
}

// TestOpenErrorHidesPassword: a refused connection's error names the
// server, never the password.
func TestOpenErrorHidesPassword(t *testing.T) {
	t.Parallel()
	port, err := cluster.FreePort(cluster.Loopback)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	_, err = Open(ctx, fmt.Sprintf("sqlserver://sa:%s@127.0.0.1:%d?database=fb&dial+timeout=2", testPassword, port))
	if err == nil {
		t.Fatal("open of a closed port succeeded")
	}
	if strings.Contains(err.Error(), testPassword) {
		t.Errorf("error shows the password: %v", err)
	}
}

// TestBulkNotVerifiedHere: with ingest=bulk, Info marks the path not
// verified, and Iridium fails the bulk copy with an error that says so
// too. When a later Iridium takes it, this fails: verify the path against
// the generator then, and drop the mark.
func TestBulkNotVerifiedHere(t *testing.T) {
	u, err := url.Parse(freshDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("ingest", "bulk")
	u.RawQuery = q.Encode()
	db := adaptertest.Open(t, Open, u.String())
	info, err := db.Info(t.Context())
	if err != nil || info.Config["ingest"] != "bulk ("+NotVerified+")" {
		t.Fatalf("Info = %+v, %v", info, err)
	}
	s, err := db.Ingest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs := make([]ingest.Record, 3)
	ingest.Fill(recs, 1, 0, 0)
	err = s.InsertBatch(t.Context(), recs)
	if err == nil {
		t.Fatal("Iridium SQL took a bulk copy: verify ingest=bulk here and update docs/sqlserver.md")
	}
	if !strings.Contains(err.Error(), NotVerified) {
		t.Errorf("bulk copy error %v does not say %q", err, NotVerified)
	}
	t.Logf("bulk copy on Iridium SQL: %v", err)
}
