package couchdb

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/adapter/adaptertest"
	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
	"github.com/fieldbench/fieldbench/db/couchdb/couchapi"
	"github.com/fieldbench/fieldbench/workload/ingest"
	"github.com/fieldbench/fieldbench/workload/microblog"
	"github.com/fieldbench/fieldbench/workload/trajectory"
)

// The package's tests share two pouchdb-server nodes started once by the
// cluster engine (replicating each other); TestMain stops them. A "fresh
// database" is a new database prefix.
var servers = &clustertest.SharedCluster{Engine: "couchdb", Options: cluster.Options{Nodes: 2}, Timeout: 5 * time.Minute}

var prefixes atomic.Int64

func TestMain(m *testing.M) { os.Exit(servers.Stop(m.Run())) }

// node returns the address of node i of the shared pair.
func node(t testing.TB, i int) string {
	t.Helper()
	return servers.Get(t).Nodes[i].Addr()
}

// fresh opens a new, empty prefix with the DSN options opts and drops its
// databases when the test ends.
func fresh(t testing.TB, opts string) *DB {
	t.Helper()
	return freshOn(t, 0, opts)
}

// freshOn is fresh on node i of the pair.
func freshOn(t testing.TB, i int, opts string) *DB {
	t.Helper()
	dsn := fmt.Sprintf("couchdb://%s/t%d_%d", node(t, i), os.Getpid()%10000, prefixes.Add(1))
	if opts != "" {
		dsn += "?" + opts
	}
	db := adaptertest.Open(t, Open, dsn)
	if len(db.nodes) == 1 {
		// Deleting a database that a peer replicates makes pouchdb-server
		// exit: replicated prefixes stay until the servers stop.
		t.Cleanup(func() { dropAll(db) })
	}
	return db
}

// dropAll deletes every database of db's prefix on its servers.
func dropAll(db *DB) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, n := range db.nodes {
		dbs, _ := couchapi.UserDBs(ctx, n)
		for _, d := range dbs {
			if strings.HasPrefix(d, db.cfg.Prefix+"_") {
				_ = n.DeleteDB(ctx, d)
			}
		}
	}
}

// TestConformance runs the shared suite against standalone
// pouchdb-servers (no peers=), the families side by side and their
// databases on the two servers in turn: one server is one Node.js process,
// which the checks kept busy one after the other for 392 s in CI
// (2026-12-02, docs/testing.md).
func TestConformance(t *testing.T) {
	var opened atomic.Int64
	adaptertest.RunParallel(t, func(t *testing.T) adapter.DB { return freshOn(t, int(opened.Add(1)%2), "") })
}

// TestMicroblogPartRefusals: parts that cannot join the load are refused
// before they write.
func TestMicroblogPartRefusals(t *testing.T) {
	adaptertest.MicroblogPartRefusals(t, fresh(t, ""), fresh(t, ""), microblog.ErrModelMismatch)
}

// TestMicroblogBodyReads: a normalized line's bodies read with one POST
// _all_docs {keys}, then with one GET per tweet, give the oracle's answers
// both ways.
func TestMicroblogBodyReads(t *testing.T) {
	adaptertest.BodyReads(t, fresh(t, ""))
}

// TestTrajectoryMango checks the Mango path (spatial=mango) against the
// oracle on two servers that replicate each other: a small dataset
// written by the workload's write clients, then every generated query of
// each type and a sweep of boxes whose Mango candidates must equal the
// grid path's (the suite checks the grid path in full in
// TestConformance; a second full pass would double the package's time).
func TestTrajectoryMango(t *testing.T) {
	db := fresh(t, "spatial=mango&peers="+node(t, 1))
	ctx := t.Context()
	st, err := db.Trajectory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*trajStore)
	g, err := trajectory.New(trajectory.Options{Scale: 0.001, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := trajectory.OracleFor(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := trajectory.WriteClients(s, g, trajectory.Random, 2, 500, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		for range c.Requests() {
			if _, err := c.Do(ctx, c.Next()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if c, err := s.Counts(ctx); err != nil || c != ref.Counts() {
		t.Fatalf("Counts = %+v, %v; want %+v", c, err, ref.Counts())
	}
	opts := trajectory.QueryOptions{N: 40, Radius: trajectory.DefaultRadius, K: trajectory.DefaultK, MaxDist: trajectory.DefaultMaxDist, Seed: 5}
	bad := 0
	for op := trajectory.OpDistance; op <= trajectory.OpRegion; op++ {
		for _, q := range trajectory.MakeQueries(g.City(), op, opts) {
			got, err := q.Run(ctx, s)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if want := ref.Answer(q); !got.Equal(want) {
				t.Errorf("%s: got %s, want %s", q, got, want)
				if bad++; bad > 10 {
					t.FailNow()
				}
			}
		}
	}
	sorted := func(h []trajectory.Hit) []trajectory.Hit {
		slices.SortFunc(h, func(a, b trajectory.Hit) int { return cmp.Compare(a.Cell, b.Cell) })
		return h
	}
	for i, c := range g.City().Cells {
		if i%7 != 0 {
			continue
		}
		r := int64(500 + 300*(i%10))
		x0, y0, x1, y1 := c.Easting-r, c.Northing-r, c.Easting+r, c.Northing+r
		gr, err1 := s.gridCells(ctx, x0, y0, x1, y1)
		mg, err2 := s.mangoCells(ctx, x0, y0, x1, y1)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !slices.Equal(sorted(gr), sorted(mg)) {
			t.Fatalf("box around cell %d (±%d m): grid found %d cells, Mango %d", c.ID, r, len(gr), len(mg))
		}
	}
}

func TestInfoNamesPouchDBServer(t *testing.T) {
	db := fresh(t, "")
	info, err := db.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "pouchdb-server" || info.Version != PouchDBVersion {
		t.Errorf("Info = %s %s: want pouchdb-server %s (never CouchDB)", info.Name, info.Version, PouchDBVersion)
	}
}

// TestReplicatedIngest inserts through the first of two servers, waits
// for the second to hold every record, and checks that Reset empties both
// and that a later insert replicates again.
func TestReplicatedIngest(t *testing.T) {
	db := fresh(t, "peers="+node(t, 1))
	ctx := t.Context()
	st, err := db.Ingest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]ingest.Record, 300)
	ingest.Fill(recs, 4, 0, 0)
	waitCount := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			i, err := db.nodes[1].DBInfo(ctx, db.name(ingestKind))
			if err == nil && i.DocCount == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("second server holds %d records (%v), want %d", i.DocCount, err, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if err := st.InsertBatch(ctx, recs); err != nil {
		t.Fatal(err)
	}
	waitCount(300)
	if err := st.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := st.Count(ctx); err != nil || n != 0 {
		t.Fatalf("Count after Reset = %d, %v; want 0", n, err)
	}
	waitCount(0) // the deletions replicate
	if err := st.InsertBatch(ctx, recs[:10]); err != nil {
		t.Fatal(err)
	}
	waitCount(10)
	time.Sleep(500 * time.Millisecond) // nothing from before the Reset comes back
	if n, err := st.Count(ctx); err != nil || n != 10 {
		t.Errorf("Count = %d, %v; want 10", n, err)
	}
}

func TestIngestStoresExactly(t *testing.T) {
	db := fresh(t, "")
	st, err := db.Ingest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*ingestStore)
	adaptertest.IngestStoresExactly(t, s, ingest.RunConfig{Sources: 3, Records: 500, Batch: 200, Seed: 12}, s.records)
}

func TestParseDSN(t *testing.T) {
	for _, tc := range []struct {
		dsn     string
		nodes   []string
		prefix  string
		pass    string
		spatial Spatial
		err     string
	}{
		{dsn: "couchdb://127.0.0.1:5984", nodes: []string{"127.0.0.1:5984"}, prefix: "fb", spatial: SpatialGrid},
		{dsn: "couchdb://u:secret@h:1/bench?peers=h:2,h:3&spatial=mango", nodes: []string{"h:1", "h:2", "h:3"}, prefix: "bench", pass: "secret", spatial: SpatialMango},
		{dsn: "couchdb://h:1/Bad", err: "prefix"},
		{dsn: "couchdb://h:1?spatial=geo", err: "grid or mango"},
		{dsn: "couchdb://h:1?peers=nohost", err: "peers"},
		{dsn: "couchdb://h:1?pool=0", err: "at least 1"},
		{dsn: "couchdb://h:1?bogus=1", err: "unknown option"},
		{dsn: "couchdb://u:secret@", err: "no host"},
		{dsn: "mongodb://h:1", err: "couchdb://"},
	} {
		t.Run(tc.dsn, func(t *testing.T) {
			c, err := ParseDSN(tc.dsn)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.err)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Errorf("error %q shows the password", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(c.Nodes, ",") != strings.Join(tc.nodes, ",") || c.Prefix != tc.prefix || c.Password != tc.pass || c.Spatial != tc.spatial {
				t.Errorf("got %+v", c)
			}
		})
	}
}

// TestFailoverOnRefused names a closed port first: requests move on to the
// next server the DSN names (a refused connection was never applied).
func TestFailoverOnRefused(t *testing.T) {
	up := node(t, 0)
	closed, err := cluster.FreePort(cluster.Loopback)
	if err != nil {
		t.Fatal(err)
	}
	db := adaptertest.Open(t, Open, fmt.Sprintf("couchdb://%s:%d/t%d_f?peers=%s", cluster.Loopback, closed, os.Getpid()%10000, up))
	if info, err := db.Info(t.Context()); err != nil || info.Name != "pouchdb-server" {
		t.Fatalf("Info through the second server = %+v, %v", info, err)
	}
	if got := db.cur.Load(); got != 1 {
		t.Errorf("requests go to server %d, want 1 (the first refused)", got)
	}
	// The refused dial went through the first server's backoff; the
	// second server serves, so the database is not down.
	if st := db.Reconnects(); st.Failed != 1 || st.Dials < 2 || st.Down {
		t.Errorf("Reconnects = %+v, want 1 refused dial of at least 2 and not Down (the second server serves)", st)
	}
}
