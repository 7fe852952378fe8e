package experiment

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
)

// hostsBase is a valid scenario on hosts, without its timeline.
const hostsBase = "name: x\nworkload: {name: microblog}\ncluster: {engine: redis, nodes: 3, network: hosts, options: {replicas: \"1\"}}\n"

func TestParseFaults(t *testing.T) {
	sc, err := Parse([]byte(hostsBase + `timeline:
  - {at: 10s, do: partition, nodes: [redis1]}
  - {at: 20s, do: heal}
  - {at: 30s, do: limit, nodes: [redis2, redis3], rate: 10mbit}
  - {at: 40s, do: unlimit, nodes: [redis2]}
  - {at: 50s, do: pause, nodes: [redis4]}
  - {at: 60s, do: resume, nodes: [redis4]}
  - {at: 70s, do: delay, nodes: [redis5], delay: 50ms}
  - {at: 80s, do: loss, nodes: [redis5], loss: 5%}
`))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Cluster.Network != "hosts" || sc.Timeline[2].Rate != "10mbit" || sc.Timeline[6].Delay.D() != 50*time.Millisecond || sc.Timeline[7].Loss != "5%" {
		t.Errorf("parsed: %+v %+v", sc.Cluster, sc.Timeline)
	}
	for _, tc := range []struct {
		viaProxy bool
		want     []string
	}{
		{false, []string{"partition: nftables", "limit: tc tbf", "pause: SIGSTOP", "delay: tc netem", "loss: tc netem"}},
		{true, []string{"partition: nftables", "delay: toxiproxy latency toxic", "node-to-node traffic not delayed", "loss: tc netem"}},
	} {
		m := sc.mechanisms(tc.viaProxy)
		for _, want := range tc.want {
			if !strings.Contains(m, want) {
				t.Errorf("mechanisms(%v) %q lack %q", tc.viaProxy, m, want)
			}
		}
	}
	if !sc.needsNetem() {
		t.Error("needsNetem false with delay and loss in the timeline")
	}
}

// TestParseFaultErrors: every wrong fault action is refused before
// anything starts, with a message naming what is wrong.
func TestParseFaultErrors(t *testing.T) {
	loop := "name: x\nworkload: {name: microblog}\ncluster: {engine: redis, nodes: 3}\n"
	cases := []struct{ name, yaml, want string }{
		{"unknown node", hostsBase + "timeline: [{at: 1s, do: partition, nodes: [redis9]}]\n", `no node "redis9"`},
		{"partition of nothing", hostsBase + "timeline: [{at: 1s, do: partition}]\n", "partition of nothing"},
		{"partition by count", hostsBase + "timeline: [{at: 1s, do: partition, count: 1}]\n", "takes nodes (names), not count"},
		{"limit without rate", hostsBase + "timeline: [{at: 1s, do: limit, nodes: [redis1]}]\n", "limit needs rate"},
		{"bad rate", hostsBase + "timeline: [{at: 1s, do: limit, nodes: [redis1], rate: fast}]\n", `rate "fast"`},
		{"rate on another action", hostsBase + "timeline: [{at: 1s, do: pause, nodes: [redis1], rate: 1mbit}]\n", "rate: only for limit"},
		{"delay without delay", hostsBase + "timeline: [{at: 1s, do: delay, nodes: [redis1]}]\n", "delay needs delay"},
		{"bad loss", hostsBase + "timeline: [{at: 1s, do: loss, nodes: [redis1], loss: lots}]\n", `"lots": want a share`},
		{"pause without nodes", hostsBase + "timeline: [{at: 1s, do: pause}]\n", "pause needs nodes"},
		{"node twice", hostsBase + "timeline: [{at: 1s, do: partition, nodes: [redis1, redis1]}]\n", "redis1 named twice"},
		{"partition on loopback", loop + "timeline: [{at: 1s, do: partition, nodes: [redis1]}]\n", "add network: hosts"},
		{"limit on loopback", loop + "timeline: [{at: 1s, do: limit, nodes: [redis1], rate: 1mbit}]\n", "needs the nodes on hosts"},
		{"fault without cluster", "name: x\nworkload: {name: microblog}\ntimeline: [{at: 1s, do: pause, nodes: [a]}]\n", "needs a cluster the scenario starts"},
		{"from on another action", hostsBase + "timeline: [{at: 1s, do: pause, nodes: [redis1], from: [redis2]}]\n", "from: only for partition"},
		{"from overlaps nodes", hostsBase + "timeline: [{at: 1s, do: partition, nodes: [redis1], from: [redis1]}]\n", "cannot be cut off from itself"},
		{"from on heal", hostsBase + "timeline: [{at: 1s, do: heal, from: [redis2]}]\n", "from: only for partition and limit"},
		{"limit groups overlap", hostsBase + "timeline: [{at: 1s, do: limit, nodes: [redis1, redis2], from: [redis2], rate: 1mbit}]\n", "the two groups of a limit must not overlap"},
		{"limit from without rate", hostsBase + "timeline: [{at: 1s, do: limit, nodes: [redis1], from: [redis2]}]\n", "limit needs rate"},
		{"limit from unknown host", hostsBase + "timeline: [{at: 1s, do: limit, nodes: [redis1], from: [load2], rate: 1mbit}]\n", `no node "load2"`},
		{"load host in a limit's nodes without from", hostsBase + "timeline: [{at: 1s, do: limit, nodes: [load1], rate: 1mbit}]\n", `no node "load1"`},
		{"load host in a partition's nodes", hostsBase + "timeline: [{at: 1s, do: partition, nodes: [load1]}]\n", `no node "load1"`},
		{"limit from on loopback", loop + "timeline: [{at: 1s, do: limit, nodes: [redis1], from: [redis2], rate: 1mbit}]\n", "needs the nodes on hosts"},
		{"link without from", hostsBase + "timeline: [{at: 1s, do: limit, nodes: [redis1], rate: 1mbit, link: shared}]\n", "link: only for limit with from"},
		{"link on partition", hostsBase + "timeline: [{at: 1s, do: partition, nodes: [redis1], from: [redis2], link: shared}]\n", "link: only for limit with from"},
		{"unknown link", hostsBase + "timeline: [{at: 1s, do: limit, nodes: [redis1], from: [redis2], rate: 1mbit, link: wan}]\n", `link: "wan": want shared`},
		{"from unknown host", hostsBase + "timeline: [{at: 1s, do: partition, nodes: [redis1], from: [load9]}]\n", `no node "load9"`},
		{"bad network", "name: x\nworkload: {name: microblog}\ncluster: {engine: redis, nodes: 3, network: wifi}\n", `cluster.network: "wifi"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestPartitionFrom: a partition from named hosts, nodes or the load
// host, parses.
func TestPartitionFrom(t *testing.T) {
	sc, err := Parse([]byte(hostsBase + "timeline: [{at: 1s, do: partition, nodes: [redis1, redis2], from: [redis3, load1]}, {at: 2s, do: heal}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sc.Timeline[0].From, ","); got != "redis3,load1" {
		t.Fatalf("from = %q", got)
	}
}

// TestPauseOnLoopback: pause and resume act on processes, not the
// network: a loopback cluster may pause.
func TestPauseOnLoopback(t *testing.T) {
	_, err := Parse([]byte("name: x\nworkload: {name: microblog}\ncluster: {engine: redis, nodes: 3}\ntimeline: [{at: 1s, do: pause, nodes: [redis2]}, {at: 2s, do: resume}]\n"))
	if err != nil {
		t.Fatal(err)
	}
}

// TestFaultStateOf: an undo of everything finds every node its fault
// holds; unlimit also undoes delay and loss, so a delayed node is one
// "limit" holds (else `unlimit` with no nodes left the delay in force).
func TestFaultStateOf(t *testing.T) {
	f := newFaultState()
	f.cut["a"] = true
	f.limited["b"] = true
	f.netem["b"] = true
	f.netem["c"] = true
	f.paused["d"] = true
	for _, tc := range []struct {
		fault string
		want  string
	}{
		{"partition", "a"},
		{"limit", "b,c"},
		{"pause", "d"},
	} {
		if got := strings.Join(f.of(tc.fault), ","); got != tc.want {
			t.Errorf("of(%s) = %q, want %q", tc.fault, got, tc.want)
		}
	}
}

// TestLimitFrom: a limit between two groups parses, either group may hold
// the load host, its undo may name it, and the result's mechanisms say
// htb between the groups besides the host-wide limit's tbf.
func TestLimitFrom(t *testing.T) {
	for _, tc := range []struct {
		name, timeline string
		nodes, from    string
		mechanisms     []string
	}{
		{"nodes apart", "[{at: 1s, do: limit, nodes: [redis1, redis2], from: [redis3], rate: 10mbit}, {at: 2s, do: unlimit, nodes: [redis1, redis2]}]",
			"redis1,redis2", "redis3", []string{"limit with from: tc htb", "u32 filters", "unlimit: the tbf, htb and netem"}},
		{"the load host with some nodes", "[{at: 1s, do: limit, nodes: [redis1, load1], from: [redis2, redis3], rate: 1mbps}, {at: 2s, do: unlimit, nodes: [redis1, load1]}]",
			"redis1,load1", "redis2,redis3", []string{"limit with from: tc htb"}},
		{"the load host on the other side", "[{at: 1s, do: limit, nodes: [redis1], from: [load1], rate: 500kbit}, {at: 2s, do: unlimit}]",
			"redis1", "load1", []string{"limit with from: tc htb"}},
		{"both forms", "[{at: 1s, do: limit, nodes: [redis1], rate: 1mbit}, {at: 2s, do: limit, nodes: [redis2], from: [redis3], rate: 1mbit}]",
			"redis1", "", []string{"limit: tc tbf", "limit with from: tc htb"}},
		{"one shared link", "[{at: 1s, do: limit, nodes: [redis1, load1], from: [redis2, redis3], rate: 10mbit, link: shared}, {at: 2s, do: unlimit}]",
			"redis1,load1", "redis2,redis3", []string{"limit with from, link: shared: one shared link", "veth pair", "unlimit: the tbf"}},
		{"per host said", "[{at: 1s, do: limit, nodes: [redis1], from: [redis2], rate: 10mbit, link: per-host}]",
			"redis1", "redis2", []string{"limit with from: tc htb"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := Parse([]byte(hostsBase + "timeline: " + tc.timeline + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			a := sc.Timeline[0]
			if got := strings.Join(a.Nodes, ","); got != tc.nodes {
				t.Errorf("nodes = %q, want %q", got, tc.nodes)
			}
			if got := strings.Join(a.From, ","); got != tc.from {
				t.Errorf("from = %q, want %q", got, tc.from)
			}
			m := sc.mechanisms(false)
			for _, want := range tc.mechanisms {
				if !strings.Contains(m, want) {
					t.Errorf("mechanisms %q lack %q", m, want)
				}
			}
		})
	}
}

// TestFaultStateWithLinks: an unlimit of one host of a limit between
// groups takes every host of that limit, both groups; other names pass
// as they are.
func TestFaultStateWithLinks(t *testing.T) {
	f := newFaultState()
	link := []string{"a1", "a2", "b1", "load1"}
	for _, h := range link {
		f.limited[h] = true
		f.between[h] = link
	}
	f.limited["c"] = true
	for _, tc := range []struct{ names, want string }{
		{"a1", "a1,a2,b1,load1"},
		{"load1,c", "a1,a2,b1,c,load1"},
		{"c", "c"},
		{"", ""},
	} {
		var names []string
		if tc.names != "" {
			names = strings.Split(tc.names, ",")
		}
		if got := strings.Join(f.withLinks(names), ","); got != tc.want {
			t.Errorf("withLinks(%s) = %q, want %q", tc.names, got, tc.want)
		}
	}
}

// TestCutPeers: a partition cuts each other host's address once, names
// every node there, and never cuts a host off from its own address (the
// HBase master and REST gateway share a host).
func TestCutPeers(t *testing.T) {
	nodes := []*cluster.Node{
		{Name: "master", Host: "198.18.0.1", Netns: "ns-m"},
		{Name: "rest", Host: "198.18.0.1", Netns: "ns-m"},
		{Name: "rs1", Host: "198.18.0.2", Netns: "ns-1"},
		{Name: "rs2", Host: "198.18.0.3", Netns: "ns-2"},
		{Name: "load1", Host: "198.18.1.1", Netns: "ns-l"},
		{Name: "old", Host: "127.0.0.1"},
	}
	pick := func(names ...string) []*cluster.Node {
		var out []*cluster.Node
		for _, n := range nodes {
			if slices.Contains(names, n.Name) {
				out = append(out, n)
			}
		}
		return out
	}
	for _, tc := range []struct {
		cut, from []string // from empty: every other host
		addrs     string
		names     string
	}{
		{[]string{"rs1"}, nil, "198.18.0.1 198.18.0.3 198.18.1.1", "master rest rs2 load1"},
		{[]string{"rest"}, []string{"load1"}, "198.18.1.1", "load1"},
		{[]string{"rest"}, nil, "198.18.0.2 198.18.0.3 198.18.1.1", "rs1 rs2 load1"},
		{[]string{"rs1", "rs2"}, []string{"master", "rest"}, "198.18.0.1", "master rest"},
	} {
		in := map[string]bool{}
		for _, n := range tc.cut {
			in[n] = true
		}
		side := func(name string) bool { return !in[name] }
		if len(tc.from) > 0 {
			side = func(name string) bool { return slices.Contains(tc.from, name) }
		}
		addrs, names := cutPeers(pick(tc.cut...), nodes, side)
		var got []string
		for _, a := range addrs {
			got = append(got, a.String())
		}
		if g := strings.Join(got, " "); g != tc.addrs || strings.Join(names, " ") != tc.names {
			t.Errorf("cut %v from %v: %s (%v), want %s (%s)", tc.cut, tc.from, g, names, tc.addrs, tc.names)
		}
	}
}
