package mariadb

import (
	"context"
	"fmt"
	"net/url"
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
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// One server for the whole package, started on first use and stopped by
// TestMain; every test gets a fresh database in it.
var server = &clustertest.SharedCluster{Engine: "mariadb", Options: cluster.Options{Nodes: 1}, Timeout: 2 * time.Minute}

var dbSeq atomic.Int64

func TestMain(m *testing.M) { os.Exit(server.Stop(m.Run())) }

// serverDSN starts the package's server once; it fails the test (skips it
// under -short) when MariaDB cannot run here.
func serverDSN(t *testing.T) string {
	t.Helper()
	return server.Get(t).DSN
}

// freshDSN creates an empty database fieldbench_tN and returns its DSN; the
// database is dropped when the test ends.
func freshDSN(t *testing.T) string {
	t.Helper()
	base := serverDSN(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("fieldbench_t%d", dbSeq.Add(1))
	db, err := Open(t.Context(), base)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.first().ExecContext(t.Context(), "create database "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db, err := Open(context.Background(), base)
		if err == nil {
			db.first().ExecContext(context.Background(), "drop database if exists "+name)
			db.Close()
		}
	})
	u.Path = "/" + name
	return u.String()
}

// openFresh opens a new, empty database, closed when the test ends.
func openFresh(t *testing.T) *DB {
	t.Helper()
	return adaptertest.Open(t, Open, freshDSN(t))
}

func TestParseDSN(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		dsn     string
		addrs   []string
		db      string
		params  map[string]string
		timeout time.Duration
		err     string
	}{
		{name: "single", dsn: "mariadb://u:secret@127.0.0.1:3307/fb", addrs: []string{"127.0.0.1:3307"}, db: "fb", timeout: 10 * time.Second},
		{name: "mysql scheme default port", dsn: "mysql://u:secret@localhost/fb", addrs: []string{"localhost:3306"}, db: "fb", timeout: 10 * time.Second},
		{name: "galera nodes", dsn: "mariadb://u:secret@127.0.0.1:1/fb?nodes=127.0.0.1:2,127.0.0.1:3", addrs: []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}, db: "fb", timeout: 10 * time.Second},
		{name: "driver and session params", dsn: "mariadb://u:secret@h:1/fb?timeout=3s&wsrep_sync_wait=1", addrs: []string{"h:1"}, db: "fb", params: map[string]string{"wsrep_sync_wait": "1"}, timeout: 3 * time.Second},
		{name: "no database", dsn: "mariadb://u:secret@h:1/", err: "names no database"},
		{name: "no host", dsn: "mariadb:///fb", err: "no host"},
		{name: "wrong scheme", dsn: "postgres://u:secret@h:1/fb", err: "scheme"},
		{name: "adapter-owned param", dsn: "mariadb://u:secret@h:1/fb?parseTime=true", err: "set by the adapter"},
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
			var addrs []string
			for _, n := range c.Nodes {
				addrs = append(addrs, n.Addr)
				if n.DBName != tc.db || n.Passwd != "secret" || n.User != "u" || !n.InterpolateParams || !n.ClientFoundRows || n.Timeout != tc.timeout {
					t.Errorf("config %+v", n)
				}
				for k, v := range tc.params {
					if n.Params[k] != v {
						t.Errorf("param %s = %q, want %q", k, n.Params[k], v)
					}
				}
				if _, ok := n.Params["nodes"]; ok {
					t.Error("nodes= reached the driver")
				}
			}
			if !slices.Equal(addrs, tc.addrs) {
				t.Errorf("addrs %v, want %v", addrs, tc.addrs)
			}
		})
	}
}

func TestRegistered(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"mariadb://u:p@h:1/db", "mysql://u:p@h:1/db"} {
		a, err := adapter.ForDSN(s)
		if err != nil || a.Name() != Name {
			t.Fatalf("ForDSN(%s) = %v, %v", redact.DSN(s), a, err)
		}
	}
	if got := (Adapter{}).Families(); !slices.Equal(got, []string{"ingest", "microblog", "trajectory", "wiki"}) {
		t.Errorf("families %v", got)
	}
}

func TestInfoAndSize(t *testing.T) {
	t.Parallel()
	db := openFresh(t)
	info, err := db.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info.Version, "MariaDB") || info.Config["innodb_buffer_pool_size"] != "134217728" || info.Config["servers"] != "1" {
		t.Errorf("info %+v", info)
	}
	for k, v := range info.Config {
		if strings.Contains(v, dsnPasswordOf(t, serverDSN(t))) {
			t.Errorf("info %s shows the password", k)
		}
	}
	t.Logf("MariaDB %s, config %v", info.Version, info.Config)
	s, err := db.Microblog(t.Context(), microblog.Normalized)
	if err != nil {
		t.Fatal(err)
	}
	empty, err := db.SizeBytes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ds, _ := microblog.Generate(microblog.GenOptions{Users: 200, Seed: 1})
	if err := s.Populate(t.Context(), ds); err != nil {
		t.Fatal(err)
	}
	full, err := db.SizeBytes(t.Context())
	if err != nil || full <= empty {
		t.Fatalf("size %d after populate, %d before (%v)", full, empty, err)
	}
	t.Logf("size: empty schema %d bytes, 200 users normalized %d bytes", empty, full)
	if m, _ := db.Info(t.Context()); m.Config["microblog_model"] != "normalized" {
		t.Errorf("info after populate lacks the model: %v", m.Config)
	}
}

func dsnPasswordOf(t *testing.T, dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := u.User.Password()
	return p
}
