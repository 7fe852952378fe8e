// Package clustertest starts the real servers that tests run against:
// SharedCluster, one cluster for all the tests of a package, and
// OwnCluster, one for a test alone, both through cluster's engines; and
// KilledServerRedial, an adapter's reconnection against a node killed and
// restarted. It stands above both cluster and adapter, so that the
// adapters' conformance suite (adapter/adaptertest) needs no cluster: an
// adapter's test package starts its server here and hands the DSN on.
package clustertest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
)

// SharedCluster is one cluster that all the tests of an adapter's package
// share: its engine starts it on the first Get, in a temporary directory,
// and the package's TestMain stops it with Stop. Tests then work in
// databases (keyspaces, prefixes) of their own on it.
//
//	var server = &clustertest.SharedCluster{Engine: "rethinkdb", Options: cluster.Options{Nodes: 1}, Timeout: 5 * time.Minute}
//
//	func TestMain(m *testing.M) { os.Exit(server.Stop(m.Run())) }
type SharedCluster struct {
	Engine  string
	Options cluster.Options
	// Timeout bounds starting it (a first install or build included).
	Timeout time.Duration
	// Ready, when set, runs once the cluster is up, under the same
	// Timeout: work every test would otherwise pay in its own first
	// request (a gateway's first connection to its cluster, say).
	Ready func(ctx context.Context, c *cluster.Cluster) error

	once sync.Once
	err  error
	e    cluster.Engine
	c    *cluster.Cluster
	dir  string
}

// Get returns the running cluster, starting it on first use. When the
// engine cannot run on this machine (its Check fails) or the cluster does
// not start, the test fails; under -short it is skipped instead.
func (s *SharedCluster) Get(t testing.TB) *cluster.Cluster {
	t.Helper()
	s.once.Do(func() {
		begin := time.Now()
		s.err = s.start()
		// scripts/testtimes reads this line: what the test waited on.
		t.Logf("waits on: %s, %d node(s) (started in %.1f s)", s.Engine, s.Options.Nodes, time.Since(begin).Seconds())
	})
	if s.err != nil {
		if testing.Short() {
			t.Skipf("%v", s.err)
		}
		t.Fatalf("start %s: %v", s.Engine, s.err)
	}
	return s.c
}

// NoServers, set to 1, makes every start of a cluster here fail:
// scripts/test.sh sets it for the packages it runs beside the ones that
// start servers, so a package that starts one among them says so instead
// of starving the servers of the other stream.
const NoServers = "FIELDBENCH_TEST_NO_SERVERS"

func (s *SharedCluster) start() error {
	if os.Getenv(NoServers) == "1" {
		return fmt.Errorf("this package starts a %s cluster but runs among the packages that start no server (%s=1): add it to servers in scripts/test.sh", s.Engine, NoServers)
	}
	e, err := cluster.Get(s.Engine)
	if err != nil {
		return err
	}
	if err := e.Check(); err != nil {
		return fmt.Errorf("%s cannot run here (run scripts/install-servers.sh): %w", s.Engine, err)
	}
	s.e = e
	if s.dir, err = os.MkdirTemp("", "fb-"+s.Engine+"-adapter-*"); err != nil {
		return err
	}
	// World-searchable: a server running as a user of its own
	// (PostgreSQL's) must reach its node directories.
	if err := os.Chmod(s.dir, 0o755); err != nil {
		return err
	}
	// The state file first, so that a server whose start is cut short is
	// still found and stopped (cluster.SpawnLog).
	if _, err := cluster.Prepare(s.dir, e.Name()); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
	defer cancel()
	if s.c, err = e.Up(ctx, s.dir, s.Options); err != nil || s.Ready == nil {
		return err
	}
	return s.Ready(ctx, s.c)
}

// Stop stops the cluster if it was started, removes its directory when
// code (the tests' exit code) is 0 and keeps it for its logs otherwise,
// and returns code.
func (s *SharedCluster) Stop(code int) int {
	if s.c != nil {
		// The one teardown (the engine's Down, then what the SpawnLog
		// still lists, the virtual network and the control groups of a
		// budget), as `cluster down` does.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_ = cluster.Teardown(ctx, s.c)
		cancel()
	}
	if s.dir != "" && code == 0 {
		os.RemoveAll(s.dir)
	}
	return code
}

// OwnCluster starts a cluster for the test alone (one it kills, or of
// another shape than the package's shared one) as SharedCluster.Get does,
// failing the test (skipping it under -short) when it cannot, and stops it
// when the test ends, keeping its directory for the logs when the test
// failed. It returns the engine too, for tests that stop or restart nodes.
func OwnCluster(t testing.TB, engine string, opts cluster.Options, timeout time.Duration) (cluster.Engine, *cluster.Cluster) {
	t.Helper()
	s := &SharedCluster{Engine: engine, Options: opts, Timeout: timeout}
	t.Cleanup(func() { // registered first: a cluster whose start failed is stopped too
		code := 0
		if t.Failed() {
			code = 1
			if s.dir != "" {
				t.Logf("cluster directory kept: %s", s.dir)
			}
		}
		s.Stop(code)
	})
	c := s.Get(t)
	return s.e, c
}

// OwnClusterContext is OwnCluster with a context that ends after timeout
// (or when the test does): the bound of the test's own requests to its
// cluster, as an engine's tests in a database folder (db/<name>) take it.
func OwnClusterContext(t testing.TB, engine string, opts cluster.Options, timeout time.Duration) (context.Context, cluster.Engine, *cluster.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	t.Cleanup(cancel)
	e, c := OwnCluster(t, engine, opts, timeout)
	return ctx, e, c
}
