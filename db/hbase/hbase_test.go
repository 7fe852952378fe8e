package hbase

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/adapter/adaptertest"
	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
	"github.com/fieldbench/fieldbench/workload/ingest"
	"github.com/fieldbench/fieldbench/workload/microblog"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// The package's tests share one HBase (master with one in-process region
// server, and the REST gateway) started once; TestMain stops it.
var server = &clustertest.SharedCluster{Engine: "hbase", Options: cluster.Options{Nodes: 1}, Timeout: 6 * time.Minute,
	// The gateway's first requests set up its connection to the cluster
	// (slow on a loaded machine): pay that here, under the start's limit,
	// not in the first test's.
	Ready: func(ctx context.Context, c *cluster.Cluster) error {
		start := time.Now()
		db, err := Open(ctx, c.DSN+"/conf")
		if err != nil {
			return err
		}
		defer db.Close()
		if err := db.ensureTable(ctx, "warmup", "w"); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "hbase: answering %v after its start\n", time.Since(start).Round(time.Millisecond))
		return nil
	}}

func TestMain(m *testing.M) { os.Exit(server.Stop(m.Run())) }

// dsn returns the shared server's DSN in namespace ns ("" = default).
func dsn(t testing.TB, ns string) string {
	t.Helper()
	c := server.Get(t)
	if ns == "" {
		return c.DSN
	}
	return c.DSN + "/" + ns
}

// openFresh opens the shared server with the family tables dropped.
func openFresh(t testing.TB, ns string) *DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	db, err := Open(ctx, dsn(t, ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, tb := range []string{wikiTable, ingestTable, mbMeta, mbTweets, mbFollows, mbLines, mbPending, trajRecords, trajCells} {
		if err := db.dropTable(ctx, tb); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

// TestConformance runs the shared suite; a fresh database is the shared
// server in namespace "conf" with the family tables dropped.
func TestConformance(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T) adapter.DB { return openFresh(t, "conf") })
}

// TestPopulatePartRefusals: a part loaded twice, a part of another number
// of parts or of another model, and a part of a dataset loaded whole are
// refused (the suite checks the loading itself).
func TestPopulatePartRefusals(t *testing.T) {
	adaptertest.MicroblogPartRefusals(t, openFresh(t, "parta"), openFresh(t, "partb"), microblog.ErrModelMismatch)
}

// TestMicroblogBodyReads: a normalized line's bodies read with one
// multi-get, then with one GET per tweet, give the oracle's answers both
// ways.
func TestMicroblogBodyReads(t *testing.T) {
	adaptertest.BodyReads(t, openFresh(t, "bodies"))
}

func TestParseDSN(t *testing.T) {
	for _, tc := range []struct {
		dsn, addr, ns, err string
	}{
		{dsn: "hbase://127.0.0.1:8080", addr: "127.0.0.1:8080", ns: "default"},
		{dsn: "hbase://127.0.0.1:8080/bench", addr: "127.0.0.1:8080", ns: "bench"},
		{dsn: "hbase://127.0.0.1:8080/bench?timeout=5s&conns=4", addr: "127.0.0.1:8080", ns: "bench"},
		{dsn: "hbase://127.0.0.1", err: "host:port"},
		{dsn: "hbase://h:1/a-b", err: "namespace"},
		{dsn: "hbase://h:1?bogus=1", err: "unknown option"},
		{dsn: "hbase://h:1?conns=0", err: "conns"},
		{dsn: "redis://h:1", err: "hbase://"},
	} {
		c, err := ParseDSN(tc.dsn)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseDSN(%q) = %+v, %v; want an error about %q", tc.dsn, c, err, tc.err)
			}
			continue
		}
		if err != nil || c.Addr != tc.addr || c.Namespace != tc.ns {
			t.Errorf("ParseDSN(%q) = %+v, %v", tc.dsn, c, err)
		}
	}
}

func TestRegisteredFamilies(t *testing.T) {
	a, err := adapter.ForDSN("hbase://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Families(); !slices.Equal(got, []string{"ingest", "microblog", "trajectory", "wiki"}) {
		t.Fatalf("families %v", got)
	}
}

// TestScanMergesPages checks scan across pages smaller than a row (a row
// with 4 cells read 2 cells a page) and the refused Populate of an
// existing id, against the real server.
func TestScanMergesPages(t *testing.T) {
	db := openFresh(t, "")
	ctx := t.Context()
	s, err := db.Wiki(ctx)
	if err != nil {
		t.Fatal(err)
	}
	arts := []wiki.Article{{ID: 1, Title: "a", Body: "xx"}, {ID: 2, Title: "b", Body: "yyy"}, {ID: 3, Title: "c", Body: ""}}
	if _, err := s.Populate(ctx, &sliceSource{a: arts}); err != nil {
		t.Fatal(err)
	}
	var keys []string
	cells := 0
	err = db.scan(ctx, wikiTable, scanSpec{Batch: 2}, func(r row) error {
		keys = append(keys, string(r.Key))
		cells += len(r.Cells)
		return nil
	})
	if err != nil || len(keys) != 3 || cells != 12 || keys[0] != wikiKey(1) || keys[2] != wikiKey(3) {
		t.Fatalf("scan = %v (%d cells), %v; want 3 rows of 4 cells", keys, cells, err)
	}
	// A bounded scan is one stateless request; it must give the same rows.
	keys, cells = nil, 0
	err = db.scan(ctx, wikiTable, scanSpec{Start: wikiKey(2), End: wikiKey(9), Limit: 2}, func(r row) error {
		keys = append(keys, string(r.Key))
		cells += len(r.Cells)
		return nil
	})
	if err != nil || len(keys) != 2 || cells != 8 || keys[0] != wikiKey(2) || keys[1] != wikiKey(3) {
		t.Fatalf("stateless scan = %v (%d cells), %v; want rows 2 and 3 of 4 cells", keys, cells, err)
	}
	if _, err := s.Populate(ctx, &sliceSource{a: arts[1:2]}); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("Populate of an existing id = %v; want refused", err)
	}
	c, err := s.Counts(ctx)
	if err != nil || c != (wiki.Counts{Articles: 3, Bytes: 5, MaxID: 3}) {
		t.Errorf("Counts = %+v, %v", c, err)
	}
	ist, err := db.Ingest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := ist.Count(ctx); err != nil || n != 0 {
		t.Errorf("ingest Count of a fresh table = %d, %v", n, err)
	}
	var _ ingest.Store = ist
}

type sliceSource struct {
	a []wiki.Article
	i int
}

func (s *sliceSource) Next() (wiki.Article, error) {
	if s.i >= len(s.a) {
		return wiki.Article{}, io.EOF
	}
	s.i++
	return s.a[s.i-1], nil
}

// TestTrajKeysSort checks that grid-square keys sort as (gx, gy) do,
// negative squares included, and that trajGridOf floors.
func TestTrajKeysSort(t *testing.T) {
	for _, tc := range []struct{ v, g int64 }{{0, 0}, {999, 0}, {1000, 1}, {-1, -1}, {-1000, -1}, {-1001, -2}} {
		if got := trajGridOf(tc.v); got != tc.g {
			t.Errorf("trajGridOf(%d) = %d, want %d", tc.v, got, tc.g)
		}
	}
	sq := [][2]int64{{-2_000_000, 5}, {-3, -3}, {-3, 0}, {-1, 7}, {0, -1}, {0, 0}, {0, 1}, {2, -9}, {2_000_000, -2_000_000}}
	for i := 1; i < len(sq); i++ {
		a, b := trajSquare(sq[i-1][0], sq[i-1][1]), trajSquare(sq[i][0], sq[i][1])
		if len(a) != 16 || a >= b {
			t.Errorf("trajSquare%v = %q, not before trajSquare%v = %q", sq[i-1], a, sq[i], b)
		}
	}
}
