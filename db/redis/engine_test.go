package redis

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/budget"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

// upRedis starts a cluster of the redis engine for the test alone
// (clustertest.OwnClusterContext) and gives the engine as its own type,
// whose methods beyond cluster.Engine (Status, Add, Kill, Restart) the
// tests call.
func upRedis(t *testing.T, opts cluster.Options, timeout time.Duration) (context.Context, redisEngine, *cluster.Cluster) {
	t.Helper()
	ctx, e, c := clustertest.OwnClusterContext(t, Name, opts, timeout)
	re, ok := e.(redisEngine)
	if !ok {
		t.Fatalf("engine %s is a %T, not a redisEngine", Name, e)
	}
	return ctx, re, c
}

func statusOf(t *testing.T, e redisEngine, c *cluster.Cluster) []cluster.NodeStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := e.Status(ctx, c)
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	return st
}

func clusterClient(c *cluster.Cluster) *goredis.ClusterClient {
	var addrs []string
	for _, n := range c.Nodes {
		addrs = append(addrs, n.Addr())
	}
	return goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs, DisableIdentity: true, Protocol: 2})
}

func TestRedisStandaloneUpStatusDown(t *testing.T) {
	t.Parallel()
	_, e, c := upRedis(t, cluster.Options{Nodes: 1, Extra: map[string]string{"standalone": "1"}}, 90*time.Second)
	if len(c.Nodes) != 1 || c.DSN != "redis://"+c.Nodes[0].Addr() || c.Version == "" {
		t.Fatalf("cluster %+v dsn %q version %q", c.Nodes, c.DSN, c.Version)
	}
	st := statusOf(t, e, c)
	if len(st) != 1 || st[0].State != "up" || st[0].Role != "master" || st[0].Detail["keys"] != "0" {
		t.Fatalf("status %+v", st)
	}
	conf, err := os.ReadFile(c.Nodes[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"bind 127.0.0.1\n", "appendonly yes\n", "save \"\"\n", "protected-mode no\n"} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("config lacks %q:\n%s", want, conf)
		}
	}
	pid := c.Nodes[0].PID
	if err := e.Down(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if cluster.Alive(pid) {
		t.Fatal("server alive after Down")
	}
	if st := statusOf(t, e, c); st[0].State != "stopped" {
		t.Fatalf("status after Down: %+v", st)
	}
}

func sumSlots(t *testing.T, st []cluster.NodeStatus) (masters, slots int) {
	t.Helper()
	for _, s := range st {
		if s.State != "up" {
			continue
		}
		if s.Detail["cluster_state"] != "ok" {
			t.Errorf("%s: cluster_state %q", s.Name, s.Detail["cluster_state"])
		}
		if s.Role == "master" {
			masters++
			n, _ := strconv.Atoi(s.Detail["slots"])
			slots += n
		}
	}
	return masters, slots
}

func TestRedisThreeMasters(t *testing.T) {
	t.Parallel()
	_, e, c := upRedis(t, cluster.Options{Nodes: 3}, 90*time.Second)
	st := statusOf(t, e, c)
	if m, s := sumSlots(t, st); m != 3 || s != redisSlots {
		t.Fatalf("%d masters owning %d slots, want 3 and %d: %+v", m, s, redisSlots, st)
	}
	for _, n := range c.Nodes {
		if len(n.Ports) != 1 || n.Ports[0] != n.Port+redisBusOffset {
			t.Errorf("%s: bus port %v", n.Name, n.Ports)
		}
	}
	if !strings.Contains(c.DSN, "cluster=1") || !strings.Contains(c.DSN, "addrs=") {
		t.Errorf("DSN %q", c.DSN)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Write through one node (following MOVED by hand would be the client's
	// job: write the key on the node that owns its slot), read through the
	// cluster client.
	cc := clusterClient(c)
	defer cc.Close()
	for i := range 50 {
		k := fmt.Sprintf("k%d", i)
		owner, err := cc.MasterForKey(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if err := owner.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		v, err := cc.Get(ctx, fmt.Sprintf("k%d", i)).Int()
		if err != nil || v != i {
			t.Fatalf("k%d = %d, %v", i, v, err)
		}
	}
	keys := 0
	for _, s := range statusOf(t, e, c) {
		n, _ := strconv.Atoi(s.Detail["keys"])
		keys += n
	}
	if keys != 50 {
		t.Fatalf("DBSIZE summed over nodes = %d, want 50", keys)
	}
}

// TestRedisAddRebalance grows a two-master cluster holding keys by one
// master: it gets slots, nothing is lost.
func TestRedisAddRebalance(t *testing.T) {
	t.Parallel()
	_, e, c := upRedis(t, cluster.Options{Nodes: 2}, 90*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a bound, loose for a loaded machine
	defer cancel()
	cc := clusterClient(c)
	defer cc.Close()
	const keys = 500
	for i := range keys {
		if err := cc.Set(ctx, fmt.Sprintf("key:%d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now()
	n, err := e.Add(ctx, c)
	if err != nil {
		t.Fatalf("Add: %v", err)
	}
	t.Logf("add-node + rebalance of %d keys: %v", keys, time.Since(t0))
	clustertest.WaitSettled(t, e, c, time.Minute)
	st := statusOf(t, e, c)
	m, s := sumSlots(t, st)
	if m != 3 || s != redisSlots {
		t.Fatalf("after Add: %d masters owning %d slots: %+v", m, s, st)
	}
	for _, x := range st {
		if x.Name == n.Name {
			if sl, _ := strconv.Atoi(x.Detail["slots"]); sl < redisSlots/4 || x.Detail["migrating"] != "0" {
				t.Fatalf("new master %s: %+v", n.Name, x)
			}
			if k, _ := strconv.Atoi(x.Detail["keys"]); k == 0 {
				t.Fatalf("new master %s holds no keys: %+v", n.Name, x)
			}
		}
	}
	cc2 := clusterClient(c)
	defer cc2.Close()
	for i := range keys {
		v, err := cc2.Get(ctx, fmt.Sprintf("key:%d", i)).Int()
		if err != nil || v != i {
			t.Fatalf("key:%d after rebalance = %d, %v", i, v, err)
		}
	}
}

// TestRedisKillFailoverRestart kills a master of a cluster with one replica
// per master: its replica takes over within a bounded time, the data stays
// readable, and the restarted node rejoins (as a replica).
func TestRedisKillFailoverRestart(t *testing.T) {
	t.Parallel()
	_, e, c := upRedis(t, cluster.Options{Nodes: 3, Extra: map[string]string{"replicas": "1", "node-timeout": "1000"}}, 90*time.Second)
	if len(c.Nodes) != 6 {
		t.Fatalf("%d nodes, want 6", len(c.Nodes))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a bound, loose for a loaded machine
	defer cancel()
	cc := clusterClient(c)
	defer cc.Close()
	for i := range 200 {
		if err := cc.Set(ctx, fmt.Sprintf("key:%d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// WAIT: the replicas have the writes before the kill. Each WAIT blocks
	// at most 1 s, below the client's 3 s read timeout (a WAIT of 5 s met
	// an i/o timeout on a loaded machine); it is repeated until the
	// replica acknowledges or the test's deadline passes.
	if err := cc.ForEachMaster(ctx, func(ctx context.Context, m *goredis.Client) error {
		for {
			n, err := m.Do(ctx, "WAIT", 1, 1000).Int()
			if err == nil && n >= 1 {
				return nil
			}
			if ctx.Err() != nil {
				return fmt.Errorf("%s: no replica acknowledged the writes: %v, %w", m.Options().Addr, err, ctx.Err())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}); err != nil {
		t.Fatal(err)
	}
	// fieldbench's own adapter, opened before the kill: its client must
	// learn the new master from its failed operations, not from the slot
	// map's once-a-minute reload (adapter/redis reloadOnNetError).
	db, err := Open(ctx, c.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var victim *cluster.Node
	for _, n := range c.Nodes {
		if n.Role == "master" {
			victim = n
			break
		}
	}
	if err := e.Kill(ctx, c, victim.Name); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	for {
		ms, err := redisMasters(ctx, c)
		if err == nil && len(ms) == 3 && !slices.Contains(ms, victim.Addr()) {
			break
		}
		if time.Since(t0) > time.Minute {
			t.Fatalf("no failover within 60 s: masters %v, %v", ms, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("failover took %v", time.Since(t0))
	if err := waitClusterOK(ctx, c, 0, time.Minute); err != nil {
		t.Fatal(err)
	}
	if st := statusOf(t, e, c); st[0].State != "stopped" {
		t.Errorf("killed node status %+v", st[0])
	}
	// The adapter's client learns the new topology from its first failed
	// operations: every key is read back well within go-redis's own
	// reload interval (a minute, counted from the client's first
	// command, which was less than a minute ago), with no ReloadState
	// from here.
	ac := db.Client()
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; i < 200; {
		v, err := ac.Get(ctx, fmt.Sprintf("key:%d", i)).Int()
		if err == nil && v == i {
			i++
			continue
		}
		if err == nil || time.Now().After(deadline) {
			t.Fatalf("key:%d after failover through the adapter = %d, %v (30 s after the failover)", i, v, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := e.Restart(ctx, c, victim.Name); err != nil {
		t.Fatal(err)
	}
	if victim.Role != "replica" || !cluster.Alive(victim.PID) {
		t.Fatalf("restarted %s: role %q pid %d", victim.Name, victim.Role, victim.PID)
	}
	if err := waitClusterOK(ctx, c, 6, time.Minute); err != nil {
		t.Fatal(err)
	}
}

// Redis limits its servers, masters × (1 + replicas); a replicas option
// beyond the limit is its options' to refuse, not multiplied here.
func TestRedisNodeLimitCountsReplicas(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		nodes    int
		replicas string
		want     string
	}{
		{17, "3", "redis: 17 master(s) × (1 + 3 replicas) = 68 servers is more than the 64 this machine can run: each Redis server is a process with a client port, a cluster bus port, an append-only file and a log; 64 servers (masters × (1 + replicas)) already outnumber this machine's cores many times over"},
		{16, "3", ""},
		{32, "1", ""},
		{33, "1", "redis: 33 master(s) × (1 + 1 replicas) = 66 servers is more than the 64"},
		{2, "100", ""},
		{65, "100", "redis: 65 node(s) is more than the 64"},
		{65, "0", "redis: 65 node(s) is more than the 64"},
		{3, "x", ""},
	} {
		err := cluster.CheckNodes("redis", tc.nodes, map[string]string{"replicas": tc.replicas})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("--nodes %d replicas=%s: %v", tc.nodes, tc.replicas, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("--nodes %d replicas=%s: %v, want %q", tc.nodes, tc.replicas, err, tc.want)
		}
	}
}

// TestRedisBudget is the scale model's check (issue 44): `cluster up redis
// --nodes 2 --budget cpu=0.2 --budget redis2:cpu=0.5,memory=256MiB,disk=40MiB/s` holds
// each redis-server in a control group of its budget from its start; a
// node killed and restarted is back in its group, a node added gets the
// cluster's budget, status says each budget (and redis2's disk I/O
// against its rate), and the teardown leaves no group behind.
func TestRedisBudget(t *testing.T) {
	t.Parallel()
	plan, err := budget.ParsePlan([]string{"cpu=0.2", "redis2:cpu=0.5,memory=256MiB,disk=40MiB/s"})
	if err != nil {
		t.Fatal(err)
	}
	clustertest.SkipWithoutBudgets(t, plan.For("redis2"))
	ctx, e, c := upRedis(t, cluster.Options{Nodes: 2, Budget: plan}, 90*time.Second)
	groups := clustertest.CheckHeld(t, c)
	if len(groups) != 2 {
		t.Fatalf("%d groups for 2 nodes", len(groups))
	}
	if err := e.Kill(ctx, c, "redis1"); err != nil {
		t.Fatal(err)
	}
	if err := e.Restart(ctx, c, "redis1"); err != nil {
		t.Fatal(err)
	}
	n, err := e.Add(ctx, c)
	if err != nil {
		t.Fatalf("Add: %v", err)
	}
	groups = clustertest.CheckHeld(t, c)
	if len(groups) != 3 || n.Cgroup == nil {
		t.Fatalf("after a restart and an add: %d groups, the added node's %v", len(groups), n.Cgroup)
	}
	st := statusOf(t, e, c)
	cluster.AddBudgets(c, st)
	want := map[string]string{"redis1": "cpu=0.2", "redis2": "cpu=0.5,memory=256MiB,disk=40MiB/s", n.Name: "cpu=0.2"}
	for _, s := range st {
		if s.Detail["budget"] != want[s.Name] {
			t.Errorf("%s: status budget %q, want %q", s.Name, s.Detail["budget"], want[s.Name])
		}
		if io, ok := s.Detail["disk_io"]; ok != (s.Name == "redis2") || (ok && !strings.HasSuffix(io, " at most 40MiB/s")) {
			t.Errorf("%s: status disk_io %q, want it for redis2's disk rate alone", s.Name, io)
		}
	}
	if err := cluster.Teardown(ctx, c); err != nil {
		t.Fatal(err)
	}
	clustertest.CheckRemoved(t, groups)
}
