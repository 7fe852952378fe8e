package experiment

import (
	"context"
	"io"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/vnet"
)

// TestLinkDelays: a real redis-server on a host of a virtual network, a
// go-redis client of one pooled connection opened from a load host
// through linkDelays; the round trip of PING before any delay, while
// toxiproxy's latency toxic is in force (on the connection already open),
// after a second delay replaces the first, and after the undo. Root only,
// like the other tests on hosts; a few seconds.
func TestLinkDelays(t *testing.T) {
	if err := vnet.Check(); err != nil {
		t.Skipf("virtual network tests create network namespaces: %v", err)
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server not installed: %v", err)
	}
	ctx := context.Background()
	dir := t.TempDir()
	vn := vnet.ForDir(dir)
	if err := vn.Create(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := vnet.ForDir(dir).Destroy(context.Background()); err != nil {
			t.Errorf("destroy the network: %v", err)
		}
		if out, _ := exec.Command("ip", "netns", "list").Output(); strings.Contains(string(out), vn.ID) {
			t.Errorf("namespaces of %s left:\n%s", vn.ID, out)
		}
	})
	node, err := vn.AddHost(ctx, "node1", vnet.NodeAddr(1))
	if err != nil {
		t.Fatal(err)
	}
	load, err := vn.AddHost(ctx, "load1", vnet.LoadAddr(1))
	if err != nil {
		t.Fatal(err)
	}
	argv := vnet.Command(node.NS, "redis-server", "--bind", node.Addr.String(), "--port", "6379",
		"--save", "", "--appendonly", "no", "--protected-mode", "no")
	srv := exec.Command(argv[0], argv[1:]...)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // before the network's teardown (cleanups run last first)
		_ = srv.Process.Kill()
		_ = srv.Wait()
	})
	addr := net.JoinHostPort(node.Addr.String(), "6379")

	d := newLinkDelays(map[string]string{"node1": node.Addr.String()})
	rdb := redis.NewClient(&redis.Options{
		Addr:     addr,
		PoolSize: 1, MinIdleConns: 0, MaxRetries: -1,
		Dialer: func(ctx context.Context, _, addr string) (net.Conn, error) { return d.dial(ctx, load.NS, addr) },
	})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err = rdb.Ping(ctx).Err(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server in %s not answering through the proxy: %v", node.NS, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// rtts is 5 PING round trips, sorted.
	rtts := func() []time.Duration {
		var out []time.Duration
		for range 5 {
			t0 := time.Now()
			if err := rdb.Ping(ctx).Err(); err != nil {
				t.Fatalf("PING: %v", err)
			}
			out = append(out, time.Since(t0))
		}
		slices.Sort(out)
		return out
	}
	for _, ph := range []struct {
		name string
		act  func() error
		min  time.Duration // every round trip at least this (the toxic's delay)
		max  time.Duration // the median below this (0: no bound)
	}{
		{"before", func() error { return nil }, 0, 100 * time.Millisecond},
		{"delay 150ms", func() error { return d.delay("node1", 150*time.Millisecond) }, 150 * time.Millisecond, 0},
		{"replaced by 300ms", func() error { return d.delay("node1", 300*time.Millisecond) }, 300 * time.Millisecond, 0},
		{"undone", func() error { return d.undelay("node1") }, 0, 100 * time.Millisecond},
	} {
		if err := ph.act(); err != nil {
			t.Fatalf("%s: %v", ph.name, err)
		}
		r := rtts()
		t.Logf("%s: PING round trips %v", ph.name, r)
		if r[0] < ph.min {
			t.Errorf("%s: shortest round trip %v, want at least %v", ph.name, r[0], ph.min)
		}
		if ph.max > 0 && r[len(r)/2] >= ph.max {
			t.Errorf("%s: median round trip %v, want below %v", ph.name, r[len(r)/2], ph.max)
		}
	}
	if st := rdb.PoolStats(); st.Misses != 1 {
		t.Errorf("pool opened %d connections, want the one (a delay must reach a connection already open)", st.Misses)
	}

	// Which mechanism the experiment picks: netem where the kernel has it
	// (no proxy), else the proxy for a delay and an error for a loss.
	cl := &cluster.Cluster{Dir: dir, Nodes: []*cluster.Node{{Name: "node1", Host: node.Addr.String(), Netns: node.NS}}}
	hasNetem := vnet.Netem(ctx, load.NS, "delay", "1ms") == nil
	if hasNetem {
		if err := vn.Unlimit(ctx, load.Name); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		do        string
		wantProxy bool
		wantErr   string
	}{
		{"delay", !hasNetem, ""},
		{"loss", false, map[bool]string{false: "loss has no fallback", true: ""}[hasNetem]},
	} {
		x := &expRun{sc: &Scenario{Timeline: []Action{{Do: tc.do}}}, cl: cl, stderr: io.Discard}
		got, err := x.netemOrProxy(ctx, vn, load)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s (netem %v): error %v, want one containing %q", tc.do, hasNetem, err, tc.wantErr)
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s (netem %v): %v", tc.do, hasNetem, err)
		case (got != nil) != tc.wantProxy:
			t.Errorf("%s (netem %v): proxy %v, want %v", tc.do, hasNetem, got != nil, tc.wantProxy)
		}
	}

	for _, bad := range []struct {
		name string
		err  error
		want string
	}{
		{"unknown node", d.delay("node9", 50*time.Millisecond), "not a node on the virtual network"},
		{"under a millisecond", d.delay("node1", 500*time.Microsecond), "whole milliseconds"},
	} {
		if bad.err == nil || !strings.Contains(bad.err.Error(), bad.want) {
			t.Errorf("%s: error %v, want one containing %q", bad.name, bad.err, bad.want)
		}
	}
}
