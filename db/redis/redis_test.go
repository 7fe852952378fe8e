package redis

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// The package's tests share two servers, each started on first use: a
// 3-master Redis Cluster (every family but ingest) and one standalone
// server (ingest, whose Reset is FLUSHALL, and a microblog run without
// cluster mode). TestMain stops them.
var (
	redisCluster = &clustertest.SharedCluster{Engine: "redis", Options: cluster.Options{Nodes: 3}, Timeout: 90 * time.Second}
	redisSingle  = &clustertest.SharedCluster{Engine: "redis", Options: cluster.Options{Nodes: 1, Extra: map[string]string{"standalone": "1"}}, Timeout: 90 * time.Second}
)

func TestMain(m *testing.M) { os.Exit(redisSingle.Stop(redisCluster.Stop(m.Run()))) }

// dsn returns the DSN of the shared cluster (or standalone server), failing
// the test when redis cannot run here (skipping under -short).
func dsn(t testing.TB, single bool) string {
	t.Helper()
	if single {
		return redisSingle.Get(t).DSN
	}
	return redisCluster.Get(t).DSN
}

func open(t testing.TB, standalone bool) *DB {
	t.Helper()
	db, err := Open(context.Background(), dsn(t, standalone))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestParseDSN(t *testing.T) {
	for _, tc := range []struct {
		dsn     string
		addrs   []string
		cluster bool
		pass    string
		err     string
	}{
		{dsn: "redis://127.0.0.1:7000", addrs: []string{"127.0.0.1:7000"}},
		{dsn: "redis://127.0.0.1:7000?cluster=1&addrs=127.0.0.1:7001,127.0.0.1:7002", addrs: []string{"127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"}, cluster: true},
		{dsn: "redis://u:secret@h:1", addrs: []string{"h:1"}, pass: "secret"},
		{dsn: "redis://h:1?addrs=h:2", err: "cluster=1"},
		{dsn: "redis://h:1/3", err: "database 0"},
		{dsn: "redis://h:1?bogus=1", err: "unknown option"},
		{dsn: "redis://u:secret@", err: "no host"},
		{dsn: "mysql://h:1", err: "redis://"},
	} {
		c, err := ParseDSN(tc.dsn)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "secret") {
				t.Errorf("ParseDSN(%q) = %v, want an error about %q without the password", tc.dsn, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(c.Addrs, tc.addrs) || c.Cluster != tc.cluster || c.Password != tc.pass {
			t.Errorf("ParseDSN(%q) = %+v, %v", tc.dsn, c, err)
		}
	}
}

func TestRegisteredFamilies(t *testing.T) {
	a, err := adapter.ForDSN("redis://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Families(); !slices.Equal(got, []string{"ingest", "microblog", "trajectory", "wiki"}) {
		t.Fatalf("families %v", got)
	}
}

func TestInfoAndSize(t *testing.T) {
	for _, standalone := range []bool{false, true} {
		db := open(t, standalone)
		info, err := db.Info(t.Context())
		if err != nil || info.Name != "redis" || !strings.HasPrefix(info.Version, "7.") || info.Config["appendonly"] != "yes" {
			t.Fatalf("Info = %+v, %v", info, err)
		}
		want := map[bool]string{false: "3", true: "1"}[standalone]
		if info.Config["masters"] != want {
			t.Errorf("standalone=%v: masters %q, want %s", standalone, info.Config["masters"], want)
		}
		if n, err := db.SizeBytes(t.Context()); err != nil || n < 0 {
			t.Fatalf("SizeBytes = %d, %v", n, err)
		}
	}
}

// resetMicroblog removes every microblog key so the next model starts on
// an empty database.
func resetMicroblog(t *testing.T, db *DB) {
	t.Helper()
	if err := db.scanDelete(context.Background(), "mb:*"); err != nil {
		t.Fatal(err)
	}
}

// TestMicroblogModelMismatch loads each model into the 3-master cluster and
// the standalone server: a loaded database refuses every other model (the
// oracle checks are adaptertest's).
func TestMicroblogModelMismatch(t *testing.T) {
	ds, err := microblog.Generate(microblog.GenOptions{Users: 20, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, standalone := range []bool{false, true} {
		for _, m := range microblog.Models {
			t.Run(string(m)+map[bool]string{false: "/cluster", true: "/standalone"}[standalone], func(t *testing.T) {
				ctx := t.Context()
				db := open(t, standalone)
				resetMicroblog(t, db)
				t.Cleanup(func() { resetMicroblog(t, db) })
				s, err := db.Microblog(ctx, m)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if err := s.Populate(ctx, ds); err != nil {
					t.Fatalf("Populate: %v", err)
				}
				for _, other := range microblog.Models {
					if other != m {
						if _, err := db.Microblog(ctx, other); !errors.Is(err, microblog.ErrModelMismatch) {
							t.Errorf("Microblog(%s) on %s data: %v", other, m, err)
						}
					}
				}
			})
		}
	}
}
