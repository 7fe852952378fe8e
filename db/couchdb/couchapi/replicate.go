package couchapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// Replication between standalone servers: every node pulls each replicated
// database from every other node through a continuous replication written
// as a document in its own _replicator database, so a write accepted by any
// node reaches all of them (multi-master, asynchronous, CouchDB's
// deterministic conflict winner). This is how two real CouchDB servers are
// kept in step too; a CouchDB 2+ cluster shards and replicates its
// databases itself and needs none of it.
//
// Documents are named ReplPrefix + db + "-from-" + source + "-" + a unique
// suffix and are never deleted: pouchdb-server 4.2.0 exits (an unhandled
// rejection in its replicator) when a _replicator document is deleted, so a
// replication that must start again gets a new document, and one that
// stopped (its database was dropped, its source died) stays as a harmless
// record: if it starts again it copies the same database.

// ReplPrefix starts the _id of every _replicator document fieldbench writes.
const ReplPrefix = "fieldbench-"

// replDoc is a _replicator document. The fieldbench_* fields name the
// database and source server without credentials, so documents can be
// found again; the server keeps them as they are.
type replDoc struct {
	ID         string `json:"_id,omitempty"`
	Rev        string `json:"_rev,omitempty"`
	Source     string `json:"source"`
	Target     string `json:"target"`
	Continuous bool   `json:"continuous"`
	DB         string `json:"fieldbench_db"`
	From       string `json:"fieldbench_source"`
}

var replSeq atomic.Int64

// dbURL is the URL of database db on c, with c's credentials in it (a
// replication runs inside the server, which must log in to its peer).
func (c *Client) dbURL(db string) string {
	u, err := url.Parse(c.Base)
	if err != nil {
		return c.Base + Path(db)
	}
	if c.User != "" {
		u.User = url.UserPassword(c.User, c.Password)
	}
	u.Path = "/" + db
	return u.String()
}

func hostOf(base string) string {
	if u, err := url.Parse(base); err == nil && u.Host != "" {
		return u.Host
	}
	return base
}

// pull writes on dst the document that pulls db from src.
func pull(ctx context.Context, src, dst *Client, db string) error {
	return replicateOn(ctx, dst, src, dst, db)
}

// replicateOn writes, on the node host, the document of a continuous
// replication of db from src to dst.
func replicateOn(ctx context.Context, host, src, dst *Client, db string) error {
	id := fmt.Sprintf("%s%s-from-%s-%x-%d", ReplPrefix, db, hostOf(src.Base), time.Now().UnixNano(), replSeq.Add(1))
	d := replDoc{ID: id, Source: src.dbURL(db), Target: dst.dbURL(db), Continuous: true, DB: db, From: src.Base}
	if err := host.Do(ctx, http.MethodPost, "/_replicator", nil, d, nil); err != nil {
		return fmt.Errorf("replicate %s from %s to %s: %w", db, src.Base, dst.Base, err)
	}
	return nil
}

// replDocs lists dst's fieldbench replication documents that keep.
func replDocs(ctx context.Context, dst *Client, keep func(replDoc) bool) ([]replDoc, error) {
	var res struct {
		Rows []struct {
			Doc *replDoc `json:"doc"`
		} `json:"rows"`
	}
	q := url.Values{"include_docs": {"true"}, "startkey": {`"` + ReplPrefix + `"`}, "endkey": {`"` + ReplPrefix + "\ufff0\""}}
	if err := dst.Do(ctx, http.MethodGet, "/_replicator/_all_docs", q, nil, &res); err != nil {
		return nil, fmt.Errorf("list replications on %s: %w", dst.Base, err)
	}
	var out []replDoc
	for _, r := range res.Rows {
		if r.Doc != nil && keep(*r.Doc) {
			out = append(out, *r.Doc)
		}
	}
	return out, nil
}

// CreateReplicated creates db on every node and makes every node pull it
// continuously from every other. With renew false, a node that has a
// document pulling db from a source keeps it; with renew true (after the
// database was dropped, whose replications stopped with it) new documents
// are written for every pair. With one node it only creates the database.
func CreateReplicated(ctx context.Context, nodes []*Client, db string, renew bool) error {
	for _, n := range nodes {
		if err := n.CreateDB(ctx, db); err != nil {
			return fmt.Errorf("create database %s on %s: %w", db, n.Base, err)
		}
	}
	if len(nodes) < 2 {
		return nil
	}
	for _, dst := range nodes {
		from := map[string]bool{}
		if !renew {
			have, err := replDocs(ctx, dst, func(d replDoc) bool { return d.DB == db })
			if err != nil {
				return err
			}
			for _, d := range have {
				from[d.From] = true
			}
		}
		for _, src := range nodes {
			if src != dst && !from[src.Base] {
				if err := pull(ctx, src, dst, db); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// DropReplicated deletes db on every node, so that no node sends its copy
// back to the others (deleting a database is not itself replicated); the
// replications of db stop with it. CreateReplicated with renew starts
// them again. Not while a replication reads db on pouchdb-server 4.2.0:
// its _changes handler then fails and the server exits (seen here), so
// the adapter empties replicated databases document by document instead.
func DropReplicated(ctx context.Context, nodes []*Client, db string) error {
	var errs []error
	for _, n := range nodes {
		if err := n.DeleteDB(ctx, db); err != nil {
			errs = append(errs, fmt.Errorf("delete database %s on %s: %w", db, n.Base, err))
		}
	}
	return errors.Join(errs...)
}

// Retrigger starts again the replications from restarted to every other
// node: a continuous pull stops for good when its source dies
// (pouchdb-server does not retry it), while restarted's own pulls start
// again from its _replicator database when it starts. The new documents
// are written on restarted itself, as pushes: a new pull written on the
// other node while its replicator still held the dead one (same source and
// target) was never started (seen twice on a loaded machine), while the
// restarted node's replicator is fresh. Each database gets one new
// document per node.
func Retrigger(ctx context.Context, nodes []*Client, restarted *Client) error {
	for _, dst := range nodes {
		if dst.Base == restarted.Base {
			continue
		}
		docs, err := replDocs(ctx, dst, func(d replDoc) bool { return d.From == restarted.Base })
		if err != nil {
			return err
		}
		done := map[string]bool{}
		for _, d := range docs {
			if done[d.DB] {
				continue
			}
			done[d.DB] = true
			if err := replicateOn(ctx, restarted, restarted, dst, d.DB); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReplicatedDBs lists the databases that node replicates under fieldbench
// documents, sorted as the server returns them, without duplicates.
func ReplicatedDBs(ctx context.Context, node *Client) ([]string, error) {
	docs, err := replDocs(ctx, node, func(replDoc) bool { return true })
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, d := range docs {
		if !seen[d.DB] {
			seen[d.DB] = true
			out = append(out, d.DB)
		}
	}
	return out, nil
}

// UserDBs are the server's databases without the system ones (_users,
// _replicator...).
func UserDBs(ctx context.Context, node *Client) ([]string, error) {
	all, err := node.AllDBs(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range all {
		if !strings.HasPrefix(d, "_") {
			out = append(out, d)
		}
	}
	return out, nil
}
