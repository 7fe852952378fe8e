package cluster

import (
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster/vnet"
	"github.com/fieldbench/fieldbench/probe"
)

// loadHostChild names what TestLoadHostChild does when RunOnLoadHost runs
// this test binary on a load host: exit with that code, or "kill" itself.
const loadHostChild = "FIELDBENCH_TEST_LOAD_HOST_CHILD"

// TestLoadHostChild is the child of TestRunOnLoadHost, and nothing
// without its variable.
func TestLoadHostChild(t *testing.T) {
	what := os.Getenv(loadHostChild)
	if what == "" {
		return
	}
	if _, on := probe.CurrentLoadHost(); !on {
		os.Exit(99) // not told it is on a load host
	}
	if what == "kill" {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Minute)
	}
	code, _ := strconv.Atoi(what)
	os.Exit(code)
}

// needHosts skips a test where network namespaces cannot be made (not
// root, no ip): a load host is one.
func needHosts(t *testing.T) {
	t.Helper()
	if err := vnet.Check(); err != nil {
		t.Skipf("a load host needs network namespaces: %v", err)
	}
}

// RunOnLoadHost runs the program on load host loadK of the cluster's
// network, told so by probe.LoadHostEnv, returns its exit code (-1 when a
// signal ended it) and removes the host afterwards; a load host that
// exists already is refused.
func TestRunOnLoadHost(t *testing.T) {
	needHosts(t)
	dir := t.TempDir()
	n := vnet.ForDir(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := n.Create(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Destroy(context.Background()) })
	c := &Cluster{Engine: "redis", Dir: dir}
	args := []string{"-test.run=^TestLoadHostChild$"}
	for _, tc := range []struct {
		child string
		want  int
	}{{"0", 0}, {"3", 3}, {"kill", -1}} {
		t.Setenv(loadHostChild, tc.child)
		var stderr strings.Builder
		exit, err := RunOnLoadHost(ctx, c, 2, args, io.Discard, &stderr)
		if err != nil || exit != tc.want {
			t.Errorf("child %s: exit %d, %v; want %d", tc.child, exit, err, tc.want)
		}
		if !strings.Contains(stderr.String(), "on load host load2 (198.18.1.2") {
			t.Errorf("child %s: said %q", tc.child, stderr.String())
		}
		if vnet.Exists(n.HostNS("load2")) {
			t.Fatalf("child %s: load host load2 left after the child ended", tc.child)
		}
	}
	if _, err := n.AddHost(ctx, "load3", vnet.LoadAddr(3)); err != nil {
		t.Fatal(err)
	}
	if _, err := RunOnLoadHost(ctx, c, 3, args, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), "load host load3 of "+dir+" exists already") {
		t.Errorf("a load host in use: %v, want it refused", err)
	}
}
