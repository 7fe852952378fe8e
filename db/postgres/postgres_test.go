package postgres

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/adapter/adaptertest"
	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// One server per test package: the first test that needs it starts it,
// TestMain stops it (and removes its directory) after every test ran.
var shared = &clustertest.SharedCluster{Engine: "postgres", Options: cluster.Options{Nodes: 1, Extra: testServer}, Timeout: 3 * time.Minute}

// testServer are the settings of the servers the tests start: a test
// server need not survive a power cut.
var testServer = map[string]string{"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}

var dbSeq atomic.Int64

func TestMain(m *testing.M) { os.Exit(shared.Stop(m.Run())) }

// server returns the package's single-node cluster.
func server(t *testing.T) *cluster.Cluster {
	t.Helper()
	return shared.Get(t)
}

// freshDSN creates an empty database (with PostGIS, cloned from the
// cluster's fieldbench database) and drops it when the test ends.
func freshDSN(t *testing.T) string {
	t.Helper()
	c := server(t)
	return freshDSNOn(t, c)
}

func freshDSNOn(t *testing.T, c *cluster.Cluster) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), dbSeq.Add(1))
	admin := strings.Replace(c.DSN, "/fieldbench?", "/postgres?", 1)
	if strings.Contains(admin, "replicas=") {
		admin = admin[:strings.Index(admin, "?")] + "?sslmode=disable"
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Template cloning needs the template to have no other session; retry
	// while another test's clone is in progress.
	for i := 0; ; i++ {
		_, err = conn.Exec(ctx, "create database "+name+" template fieldbench")
		if err == nil || i > 50 || !strings.Contains(err.Error(), "being accessed") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "drop database if exists "+name+" with (force)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	return strings.Replace(c.DSN, "/fieldbench?", "/"+name+"?", 1)
}

// openFresh opens a new, empty database, closed when the test ends.
func openFresh(t *testing.T) *DB {
	t.Helper()
	return adaptertest.Open(t, Open, freshDSN(t))
}

func TestRegistered(t *testing.T) {
	for _, dsn := range []string{"postgres://x@127.0.0.1:1/db", "postgresql://x@127.0.0.1:1/db"} {
		a, err := adapter.ForDSN(dsn)
		if err != nil || a.Name() != Name {
			t.Fatalf("ForDSN(%s) = %v, %v", dsn, a, err)
		}
	}
	got := strings.Join(Adapter{}.Families(), ",")
	if got != "ingest,microblog,trajectory,wiki" {
		t.Errorf("Families = %s", got)
	}
}

func TestParseDSN(t *testing.T) {
	for _, c := range []struct {
		dsn      string
		primary  string
		replicas []string
		fromReps bool
		err      string
	}{
		{dsn: "postgres://u@h:1/d?sslmode=disable", primary: "postgres://u@h:1/d?sslmode=disable"},
		{dsn: "postgres://u:pw@h:1/d?sslmode=disable&replicas=h:2,h:3&read_from=replicas",
			primary: "postgres://u:pw@h:1/d?sslmode=disable", replicas: []string{"postgres://u:pw@h:2/d?sslmode=disable", "postgres://u:pw@h:3/d?sslmode=disable"}, fromReps: true},
		{dsn: "postgres://u@h:1/d?replicas=h:2", primary: "postgres://u@h:1/d", replicas: []string{"postgres://u@h:2/d"}},
		{dsn: "postgres://u@h:1/d?read_from=replicas", err: "lists no replicas"},
		{dsn: "postgres://u@h:1/d?read_from=nearest", err: "want primary or replicas"},
		{dsn: "mysql://u@h:1/d", err: "must start with postgres"},
		{dsn: "postgres:///d", err: "no host"},
	} {
		o, err := ParseDSN(c.dsn)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseDSN(%s) = %v; want error %q", c.dsn, err, c.err)
			}
			if err != nil && strings.Contains(err.Error(), "pw") {
				t.Errorf("error leaks the password: %v", err)
			}
			continue
		}
		if err != nil || o.Primary != c.primary || fmt.Sprint(o.Replicas) != fmt.Sprint(c.replicas) || o.ReadFromReplicas != c.fromReps {
			t.Errorf("ParseDSN(%s) = %+v, %v", c.dsn, o, err)
		}
	}
}

func TestInfoAndSize(t *testing.T) {
	t.Parallel()
	db := openFresh(t)
	info, err := db.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "postgres" || !strings.HasPrefix(info.Version, "15") {
		t.Errorf("Info = %q %q", info.Name, info.Version)
	}
	for _, k := range []string{"shared_buffers", "synchronous_commit", "fsync", "wal_level", "max_connections", "postgis"} {
		if info.Config[k] == "" {
			t.Errorf("Config[%s] missing (%v)", k, info.Config)
		}
	}
	if n, err := db.SizeBytes(t.Context()); err != nil || n <= 0 {
		t.Errorf("SizeBytes = %d, %v", n, err)
	}
}

// TestPartRefusals: parts that cannot join the load are refused before
// they write, and a database loaded whole refuses every part.
func TestPartRefusals(t *testing.T) {
	adaptertest.MicroblogPartRefusals(t, openFresh(t), openFresh(t), microblog.ErrModelMismatch)
}

// TestPartsFromTwoClients loads microblog parts through two handles on one
// database at once, as two processes of a sharded load do: a schema made
// by one is taken as it is by the other (ensureSchema asks for no lock a
// loading part holds).
func TestPartsFromTwoClients(t *testing.T) {
	dsn := freshDSN(t)
	adaptertest.MicroblogPartsTwoClients(t, adaptertest.Open(t, Open, dsn), adaptertest.Open(t, Open, dsn), microblog.ErrModelMismatch)
}
