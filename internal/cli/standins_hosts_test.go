package cli_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/db/rethinkdb"
	"github.com/fieldbench/fieldbench/db/sqlserver"
)

// TestStandInsHosts: the single-node stand-ins on hosts, one subtest per
// engine. `cluster up ENGINE --network hosts` puts the node on a host of
// its own (198.18.0.1), its server listening on that address and its
// engine's standard port only; `run ingest` from load host load1 (the
// binary re-executed inside it) inserts its records without an error;
// the adapter opens with load host load2's dial, as an experiment's
// in-process load does (for rethinkdb through netdial.Relay:
// rethinkdb-go has no dial hook); a node that can be killed is killed and restarted on its host;
// status names the node's address, the server it really is and the
// host's counters; down leaves no namespace and no server.
func TestStandInsHosts(t *testing.T) {
	for _, tc := range []struct {
		engine, node, dsn string
		status            []string // what status must say besides the counters
		killable          bool
	}{
		{"rethinkdb", "reqlite1", "rethinkdb://198.18.0.1:28015/fieldbench",
			[]string{"198.18.0.1:28015  standalone  up", "server=reqlite " + rethinkdb.ReqliteVersion}, false},
		{"sqlserver", "iridium1", "sqlserver://fieldbench@198.18.0.1:1433?database=fieldbench&encrypt=disable&standin=iridium",
			[]string{"198.18.0.1:1433  standalone  up", "server=Iridium SQL " + sqlserver.IridiumVersion}, true},
	} {
		t.Run(tc.engine, func(t *testing.T) {
			start := time.Now()
			h := upOnHosts(t, tc.dsn, tc.engine)
			t.Logf("up: %v", time.Since(start).Round(10*time.Millisecond))
			start = time.Now()
			// A minute for the test's own requests.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			n := h.node(tc.node)
			// Every listening socket of the node's host is the server's,
			// on the host's address and the standard port.
			if got := listeners(t, n.Netns); len(got) != 1 || !got[n.Addr()] {
				t.Errorf("the host of %s listens on %v, want %s only", tc.node, got, n.Addr())
			}

			res := filepath.Join(h.base, "results")
			if code, out, stderr := runBin(t, h.bin, "run", "ingest", "--sources", "1", "--records", "50", "--batch", "50",
				"--load-host", h.dir, "--results", res); code != 0 || !strings.Contains(stderr, "on load host load1 (198.18.1.1") {
				t.Fatalf("run ingest: exit %d\n%s\n%s", code, out, stderr)
			}
			assertRanOnLoad1(t, onlyRun(t, res))

			// The run removed load1; load2 now, with this process's dial
			// through it, as an experiment's in-process load has.
			load := h.loadHost(ctx, 2)
			restore := dialThrough(load)
			_, db, err := adapter.Open(ctx, tc.dsn)
			if err != nil {
				t.Fatalf("the adapter with load2's dial: %v", err)
			}
			if err := db.Close(); err != nil {
				t.Error(err)
			}
			restore()

			if tc.killable {
				h.killRestart(tc.node)
			}
			h.status(tc.status...)
			h.down()
			t.Logf("after up: %v", time.Since(start).Round(10*time.Millisecond))
		})
	}
}
