package redis

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
	"github.com/fieldbench/fieldbench/cluster/vnet"
)

func needHosts(t *testing.T) {
	t.Helper()
	if err := vnet.Check(); err != nil {
		t.Skipf("Redis on hosts needs network namespaces: %v", err)
	}
}

// hostsClusterClient reaches a cluster on hosts from inside the first
// node's host, as a client on the network would.
func hostsClusterClient(c *cluster.Cluster) *goredis.ClusterClient {
	var addrs []string
	for _, n := range c.Nodes {
		addrs = append(addrs, n.Addr())
	}
	first := c.Nodes[0]
	return goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs, DisableIdentity: true, Protocol: 2,
		Dialer: func(ctx context.Context, _, addr string) (net.Conn, error) { return first.Dial(ctx, addr) }})
}

// assertNoNetwork checks that nothing of dir's virtual network remains.
func assertNoNetwork(t *testing.T, dir string) {
	t.Helper()
	n := vnet.ForDir(dir)
	nss, err := n.Namespaces()
	if err != nil || len(nss) > 0 {
		t.Errorf("namespaces left: %v %v", nss, err)
	}
	out, _ := exec.Command("ip", "netns", "list").Output()
	if strings.Contains(string(out), n.ID) {
		t.Errorf("ip netns list still names %s:\n%s", n.ID, out)
	}
	out, _ = exec.Command("ip", "-o", "link", "show").Output()
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "vredis") || strings.Contains(l, n.ID) {
			t.Errorf("root namespace link of the network: %s", l)
		}
	}
}

// TestRedisOnHosts starts a 3-master Redis Cluster on hosts: each node on
// its own address and the standard ports, reachable from the network and
// not from this machine's namespace; status shows addresses and counters;
// kill, restart and add work; Down leaves nothing of the network.
func TestRedisOnHosts(t *testing.T) {
	needHosts(t)
	_, e, c := upRedis(t, cluster.Options{Nodes: 3, Network: cluster.NetworkHosts}, 90*time.Second)
	if !c.OnHosts() {
		t.Fatalf("network %q", c.Network)
	}
	for i, n := range c.Nodes {
		want := vnet.NodeAddr(i + 1).String()
		if n.Host != want || n.Port != 6379 || len(n.Ports) != 1 || n.Ports[0] != 16379 || n.Netns != vnet.ForDir(c.Dir).HostNS(n.Name) {
			t.Errorf("%s: %s:%d %v in %q, want %s:6379 bus 16379 in its host", n.Name, n.Host, n.Port, n.Ports, n.Netns, want)
		}
		if !strings.Contains(c.DSN, n.Addr()) {
			t.Errorf("DSN %q lacks %s", c.DSN, n.Addr())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cc := hostsClusterClient(c)
	defer cc.Close()
	for i := range 100 {
		if err := cc.Set(ctx, fmt.Sprintf("key:%d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// From this machine's own namespace the address reaches no node: the
	// connection either fails or (a gateway that accepts anything) never
	// answers as Redis.
	plain := goredis.NewClient(&goredis.Options{Addr: c.Nodes[0].Addr(), DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1, DisableIdentity: true, Protocol: 2})
	if err := plain.Ping(ctx).Err(); err == nil {
		t.Errorf("node %s answered from the root namespace", c.Nodes[0].Addr())
	}
	plain.Close()

	st := statusOf(t, e, c)
	if m, s := sumSlots(t, st); m != 3 || s != redisSlots {
		t.Fatalf("%d masters owning %d slots: %+v", m, s, st)
	}
	for _, s := range st {
		if !strings.HasPrefix(s.Addr, "198.18.0.") || s.Detail["net_rx_packets"] == "" || s.Detail["net_tx_bytes"] == "0" {
			t.Errorf("status %+v: want a 198.18.0.x address and the host's counters", s)
		}
	}

	victim := c.Nodes[2]
	if err := e.Kill(ctx, c, victim.Name); err != nil {
		t.Fatal(err)
	}
	if cluster.Alive(victim.PID) {
		t.Fatal("killed node alive")
	}
	if err := e.Restart(ctx, c, victim.Name); err != nil {
		t.Fatal(err)
	}
	if err := waitClusterOK(ctx, c, 3, time.Minute); err != nil {
		t.Fatal(err)
	}
	n, err := e.Add(ctx, c)
	if err != nil {
		t.Fatalf("Add: %v", err)
	}
	if n.Host != vnet.NodeAddr(4).String() || n.Port != 6379 {
		t.Errorf("added node at %s", n.Addr())
	}
	clustertest.WaitSettled(t, e, c, time.Minute)
	cc2 := hostsClusterClient(c)
	defer cc2.Close()
	for i := range 100 {
		v, err := cc2.Get(ctx, fmt.Sprintf("key:%d", i)).Int()
		if err != nil || v != i {
			t.Fatalf("key:%d after kill, restart and add = %d, %v", i, v, err)
		}
	}
	if err := e.Down(ctx, c); err != nil {
		t.Fatal(err)
	}
	assertNoNetwork(t, c.Dir)
}

// TestRedisOnHostsInterrupted cancels Up once the network exists: the
// cleanup `cluster up` does (stop what was spawned, then Down) leaves no
// namespace and no server.
func TestRedisOnHostsInterrupted(t *testing.T) {
	needHosts(t)
	e := redisEngine{}
	if err := e.Check(); err != nil {
		t.Skipf("redis not installed: %v", err)
	}
	dir := t.TempDir()
	prepared, err := cluster.Prepare(dir, "redis")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the second host exists: mid-start.
		for !vnet.Exists(vnet.ForDir(dir).HostNS("redis2")) {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	c, err := e.Up(ctx, dir, cluster.Options{Nodes: 3, Network: cluster.NetworkHosts})
	cancel()
	if err == nil {
		t.Fatal("Up was not interrupted")
	}
	t.Logf("Up: %v", err)
	if _, err := cluster.StopSpawned(dir, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if c == nil {
		c = prepared
	}
	if err := e.Down(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if pids, _ := cluster.Spawned(dir); len(pids) > 0 {
		t.Errorf("servers still running: %v", pids)
	}
	assertNoNetwork(t, dir)
}

// TestRedisOnHostsCrash leaves a running cluster behind as a crashed
// fieldbench would (its saved state lost), and cleans up from the
// directory alone, as `cluster down` does with the state Prepare wrote.
func TestRedisOnHostsCrash(t *testing.T) {
	needHosts(t)
	e := redisEngine{}
	if err := e.Check(); err != nil {
		t.Skipf("redis not installed: %v", err)
	}
	dir := t.TempDir()
	if _, err := cluster.Prepare(dir, "redis"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := e.Up(ctx, dir, cluster.Options{Nodes: 1, Network: cluster.NetworkHosts})
	if err != nil {
		_, _ = cluster.StopSpawned(dir, time.Second)
		_ = cluster.DestroyNetwork(ctx, dir)
		t.Fatal(err)
	}
	// A single node announces its host's address (not "", which a client
	// on another host would dial as itself).
	cl := nodeClient(c.Nodes[0])
	slots, err := cl.Do(ctx, "CLUSTER", "SLOTS").Slice()
	cl.Close()
	if err != nil || len(slots) != 1 || !strings.Contains(fmt.Sprint(slots[0]), c.Nodes[0].Host+" 6379") {
		t.Errorf("CLUSTER SLOTS of a single node on a host: %+v %v, want %s", slots, err, c.Nodes[0].Addr())
	}
	pid := c.Nodes[0].PID // the rest of c is lost
	if !cluster.Alive(pid) {
		t.Fatal("server not running")
	}
	loaded, err := cluster.Load(dir) // Prepare's state: no node
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Down(ctx, loaded); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.StopSpawned(dir, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if cluster.Alive(pid) {
		t.Errorf("server pid %d still running", pid)
		_ = cluster.Kill(pid)
	}
	assertNoNetwork(t, dir)
}
