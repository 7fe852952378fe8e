package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/vnet"
)

// hostsCluster is a cluster a test brought up on hosts with the
// fieldbench binary and drives through its commands, as a user would:
// the harness of the tests of each engine on hosts (its steps: up with
// the DSN checked, load hosts, kill and restart, status, down).
type hostsCluster struct {
	t   *testing.T
	bin string
	// base is the test's directory (world-searchable: servers that drop
	// root must reach their directories); dir, the cluster's, is in it.
	base, dir string
}

// upOnHosts skips t unless engine can start on hosts here
// (needHostsEngine), runs `cluster up ENGINE ARGS --network hosts` in a
// new directory and fails t unless it exits 0 and prints the DSN line of
// dsn (as shown: a password as xxxxx). When t ends the cluster is stopped
// and its network removed, whatever the up did, and the directory is
// removed, or kept for its logs when t failed.
func upOnHosts(t *testing.T, dsn, engine string, args ...string) *hostsCluster {
	t.Helper()
	needHostsEngine(t, engine)
	h := &hostsCluster{t: t, bin: fieldbenchBin(t), base: worldSearchableDir(t, "fieldbench-hosts-"+engine+"-")}
	h.dir = filepath.Join(h.base, engine)
	t.Cleanup(func() { // registered first, so it runs after the cluster's down
		if !t.Failed() {
			os.RemoveAll(h.base)
		} else {
			t.Logf("cluster directory kept: %s", h.dir)
		}
	})
	code, out, stderr := upHosts(t, h.bin, h.dir, append([]string{engine}, args...)...)
	if code != 0 || !strings.Contains(out, "DSN: "+dsn+"\n") {
		t.Fatalf("up: exit %d, want DSN %s\n%s\n%s", code, dsn, out, stderr)
	}
	return h
}

// cluster runs `fieldbench cluster ARGS --dir DIR`, fails t unless it
// exits 0 and returns its output.
func (h *hostsCluster) cluster(args ...string) string {
	h.t.Helper()
	code, out, stderr := runBin(h.t, h.bin, append(append([]string{"cluster"}, args...), "--dir", h.dir)...)
	if code != 0 {
		h.t.Fatalf("cluster %s: exit %d\n%s\n%s", strings.Join(args, " "), code, out, stderr)
	}
	return out
}

// killRestart kills node and starts it again on its host (`cluster kill`,
// `cluster restart`).
func (h *hostsCluster) killRestart(node string) {
	h.t.Helper()
	h.cluster("kill", node)
	h.cluster("restart", node)
}

// node is node name of the cluster as its state file has it now.
func (h *hostsCluster) node(name string) *cluster.Node {
	h.t.Helper()
	c, err := cluster.Load(h.dir)
	if err != nil {
		h.t.Fatal(err)
	}
	n, err := c.Node(name)
	if err != nil {
		h.t.Fatal(err)
	}
	return n
}

// loadHost adds load host loadI (198.18.1.I) to the cluster's network.
func (h *hostsCluster) loadHost(ctx context.Context, i int) vnet.Host {
	h.t.Helper()
	load, err := vnet.ForDir(h.dir).AddHost(ctx, "load"+strconv.Itoa(i), vnet.LoadAddr(i))
	if err != nil {
		h.t.Fatal(err)
	}
	return load
}

// dialFromLoad1 adds load host load1 and points fieldbench's default dial
// at it until the test ends, as an experiment's in-process load does.
func (h *hostsCluster) dialFromLoad1(ctx context.Context) vnet.Host {
	h.t.Helper()
	load := h.loadHost(ctx, 1)
	h.t.Cleanup(dialThrough(load))
	return load
}

// loadAndRun loads microblog with users users and runs it from load host
// load1 (loadAndRunOnLoadHostUsers), its results in the test's directory.
func (h *hostsCluster) loadAndRun(users string) {
	h.t.Helper()
	loadAndRunOnLoadHostUsers(h.t, h.bin, h.dir, filepath.Join(h.base, "results"), users)
}

// status fails t for each of want that `cluster status` lacks, the hosts'
// counters and the network line included (statusHas).
func (h *hostsCluster) status(want ...string) string {
	h.t.Helper()
	return statusHas(h.t, h.bin, h.dir, want...)
}

// down runs `cluster down` and fails t for anything of the cluster left
// (downAndAssertGone).
func (h *hostsCluster) down() {
	h.t.Helper()
	downAndAssertGone(h.t, h.bin, h.dir)
}
