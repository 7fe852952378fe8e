package rethinkdb

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/adapter/adaptertest"
	"github.com/fieldbench/fieldbench/adapter/netdial"
	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/workload/ingest"
	"github.com/fieldbench/fieldbench/workload/trajectory"
)

// The package's tests share one reqlite server, started by the rethinkdb
// engine (through its start script) on first use and stopped by
// TestMain; every test works in a database of its own.
var server = &clustertest.SharedCluster{Engine: "rethinkdb", Options: cluster.Options{Nodes: 1}, Timeout: 5 * time.Minute}

func TestMain(m *testing.M) { os.Exit(server.Stop(m.Run())) }

// addr returns the shared server's host:port.
func addr(t testing.TB) string { return server.Get(t).Nodes[0].Addr() }

var databases atomic.Int64

// openFresh opens a new database on the shared server, dropped when the
// test ends.
func openFresh(t testing.TB, opts string) *DB {
	t.Helper()
	name := fmt.Sprintf("fbt_%d_%d", os.Getpid()%100000, databases.Add(1))
	db := adaptertest.Open(t, Open, "rethinkdb://"+addr(t)+"/"+name+"?"+opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = db.Drop(ctx)
	})
	return db
}

// TestConformance runs the shared suite against reqlite, each family in a
// fresh database.
func TestConformance(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T) adapter.DB { return openFresh(t, "") })
}

// TestInfoSaysReqlite: a result measured here must say reqlite, with its
// version, and never call itself RethinkDB; what reqlite cannot show is
// marked.
func TestInfoSaysReqlite(t *testing.T) {
	db := openFresh(t, "parts=4")
	info, err := db.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "reqlite" || info.Version != ReqliteVersion {
		t.Errorf("Info = %s %s, want reqlite %s", info.Name, info.Version, ReqliteVersion)
	}
	if info.Config["stand_in"] == "" || info.Config["parts"] != "4" || !strings.Contains(info.Config["not_verified"], NotVerified) {
		t.Errorf("Info.Config = %v: want the stand-in note, parts and what is %s", info.Config, NotVerified)
	}
}

// TestIngestStoresExactly reads the records back: every record once, each
// field as generated (microsecond times and doubles through JSON).
func TestIngestStoresExactly(t *testing.T) {
	db := openFresh(t, "")
	s, err := db.Ingest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.IngestStoresExactly(t, s, ingest.RunConfig{Sources: 3, Records: 200, Batch: 64, Seed: 4}, db.StoredRecords)
}

// TestTrajectorySingleTable: parts=1 (the study's single records table,
// what a real RethinkDB would use) answers the region query as the
// hourly tables do.
func TestTrajectorySingleTable(t *testing.T) {
	db := openFresh(t, "parts=1")
	ctx := t.Context()
	s, err := db.Trajectory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g, err := trajectory.New(trajectory.Options{Scale: 0.0003, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := trajectory.OracleFor(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]trajectory.Record, g.Len())
	for i := range recs {
		recs[i] = g.Record(int64(i))
	}
	if err := s.Write(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if names, err := db.tableList(ctx); err != nil || len(names) != 2 {
		t.Errorf("tables = %v, %v; want traj_cells and one records table", names, err)
	}
	found := 0
	for _, q := range trajectory.MakeQueries(g.City(), trajectory.OpRegion, trajectory.QueryOptions{N: 20, Seed: 5}) {
		got, err := q.Run(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		want := ref.Answer(q)
		if !got.Equal(want) {
			t.Errorf("%s: got %s, want %s", q, got, want)
		}
		if want.Found {
			found++
		}
	}
	if found == 0 {
		t.Error("no region query found records: the check checks nothing")
	}
}

func TestParseDSN(t *testing.T) {
	t.Parallel()
	def := Config{Address: "127.0.0.1:28015", User: "admin", Database: "fieldbench", Parts: 168, Timeout: 30 * time.Second}
	with := func(f func(*Config)) Config { c := def; f(&c); return c }
	tests := []struct {
		dsn     string
		want    Config
		wantErr string
	}{
		{"rethinkdb://127.0.0.1:28015", def, ""},
		{"rethinkdb://127.0.0.1:28015/", def, ""},
		{"rethinkdb://127.0.0.1:28015/db_1?parts=1&timeout=5s", with(func(c *Config) { c.Database, c.Parts, c.Timeout = "db_1", 1, 5*time.Second }), ""},
		{"rethinkdb://bob:secret@127.0.0.1:28015/db", with(func(c *Config) { c.User, c.Password, c.Database = "bob", "secret", "db" }), ""},
		{"rethinkdb://127.0.0.1:28015/db?parts=0", Config{}, "want 1..168"},
		{"rethinkdb://127.0.0.1:28015/db?parts=169", Config{}, "want 1..168"},
		{"rethinkdb://127.0.0.1:28015/db?timeout=0s", Config{}, "positive"},
		{"rethinkdb://127.0.0.1:28015/db?nosuch=1", Config{}, "unknown option"},
		{"rethinkdb://127.0.0.1:28015/a-b", Config{}, "database"},
		{"rethinkdb://u:secret@127.0.0.1/db", Config{}, "must look like"},
		{"rethinkdb://u:secret@/db", Config{}, "must look like"},
		{"mongodb://h:1/db", Config{}, "must look like"},
	}
	for _, tt := range tests {
		got, err := ParseDSN(tt.dsn)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseDSN(%q) error %v, want one containing %q", redact.DSN(tt.dsn), err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("ParseDSN error shows the password: %v", err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseDSN(%q) = %+v, %v; want %+v", redact.DSN(tt.dsn), got, err, tt.want)
		}
	}
}

func TestHourOfWeek(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		day  trajectory.Weekday
		slot int
		want int
	}{{trajectory.Monday, 0, 0}, {trajectory.Monday, 11, 0}, {trajectory.Monday, 12, 1}, {trajectory.Sunday, 287, 167}} {
		if got := hourOfWeek(tt.day, tt.slot); got != tt.want {
			t.Errorf("hourOfWeek(%d, %d) = %d, want %d", tt.day, tt.slot, got, tt.want)
		}
	}
}

// TestDescribeMarksNotVerified: `fieldbench list` shows the adapter's
// description, which must name the stand-in and what it cannot show.
func TestDescribeMarksNotVerified(t *testing.T) {
	t.Parallel()
	d := Adapter{}.Describe()
	if !strings.Contains(d, NotVerified+": ") || !strings.Contains(d, "reqlite") || !strings.Contains(d, "persistence") {
		t.Errorf("Describe() = %q", d)
	}
}

// TestOpenErrorsHideThePassword: a server that does not answer gives an
// error without the password.
func TestOpenErrorsHideThePassword(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	db, err := Open(ctx, "rethinkdb://u:secret@127.0.0.1:1/db?timeout=1s")
	if err == nil {
		db.Close()
		t.Fatal("Open of a closed port succeeded")
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("Open error shows the password: %v", err)
	}
}

// TestOpenThroughLoadHostDial: with a load host's dial in place (netdial.Set,
// as an experiment on hosts does), the driver, which has no dial hook,
// reaches the server through that dial (the relay), and Close ends the
// relay; without one, the driver dials on its own.
func TestOpenThroughLoadHostDial(t *testing.T) {
	target := addr(t)
	var dials atomic.Int64
	var d net.Dialer
	restore := netdial.Set(func(ctx context.Context, network, a string) (net.Conn, error) {
		if a == target {
			dials.Add(1)
		}
		return d.DialContext(ctx, network, a)
	})
	db := openFresh(t, "")
	if db.relay == nil || dials.Load() == 0 {
		t.Fatalf("relay %v, %d dials of %s through the hook: want the relay and its dials", db.relay, dials.Load(), target)
	}
	var got []int
	if err := db.all(t.Context(), r.Expr([]int{1, 2}), &got); err != nil || len(got) != 2 || got[1] != 2 {
		t.Errorf("a query through the relay: %v, %v", got, err)
	}
	restore()
	plain := openFresh(t, "")
	if plain.relay != nil {
		t.Error("a relay without a load host's dial")
	}
}
