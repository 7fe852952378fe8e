package experiment

import (
	"fmt"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/vnet"
)

// The fault actions: each with its undo.
//
//	partition  nodes: cut off from every other host (nodes and load hosts), both ways;
//	           with from: [hosts], from those hosts only (two groups apart, or
//	           the load host cut off from a minority of the nodes)
//	heal       nodes: end their partition (none named: every partition)
//	limit      nodes, rate: the bandwidth of each node's link, both ways;
//	           with from: [hosts], the bandwidth between the hosts of nodes and
//	           those of from only, each way (two data centres); either group
//	           may hold the load host; link: shared makes it one link between the
//	           two groups (the rate their total) instead of each host's own
//	unlimit    nodes: remove their limit (none named: every limit); a node
//	           limited with from takes the whole limit, both groups, with it
//	pause      nodes: SIGSTOP the node's server process
//	resume     nodes: SIGCONT it (none named: every paused node)
//	delay      nodes, delay: netem delay on each node's link where the kernel has
//	           netem; else toxiproxy's latency toxic on the load's connections to
//	           each node (linkdelay.go); undone by unlimit
//	loss       nodes, loss: netem loss on each node's link (netem only)

// networkFaults need the nodes on hosts of a virtual network.
var networkFaults = map[string]bool{"partition": true, "heal": true, "limit": true, "unlimit": true, "delay": true, "loss": true}

// faultActions are the actions of this file.
var faultActions = map[string]bool{"partition": true, "heal": true, "limit": true, "unlimit": true,
	"pause": true, "resume": true, "delay": true, "loss": true}

// hostsMayIncludeLoad reports whether a's nodes may name the load host
// (load1) besides nodes: a limit between two groups, where either group
// may be the clients' side, and unlimit, its undo.
func (a Action) hostsMayIncludeLoad() bool {
	return a.Do == "limit" && len(a.From) > 0 || a.Do == "unlimit"
}

// The values of a limit's link.
const (
	LinkShared  = "shared"
	LinkPerHost = "per-host"
)

// undoes names each fault's undo: an undo with no nodes undoes every
// node's.
var undoes = map[string]string{"heal": "partition", "unlimit": "limit", "resume": "pause"}

// checkFault checks a fault action's nodes, rate, delay and loss, and the
// keys of those that are no fault's.
func (sc *Scenario) checkFault(where string, a Action, bad func(string, ...any)) {
	if a.Rate != "" && a.Do != "limit" {
		bad("%s.rate: only for limit", where)
	}
	if a.Delay != 0 && a.Do != "delay" {
		bad("%s.delay: only for the delay action", where)
	}
	if a.Loss != "" && a.Do != "loss" {
		bad("%s.loss: only for the loss action", where)
	}
	if len(a.From) > 0 && a.Do != "partition" && a.Do != "limit" {
		bad("%s.from: only for partition and limit (the other side: the hosts the nodes are cut off from, or limited to)", where)
	}
	switch {
	case a.Link != "" && (a.Do != "limit" || len(a.From) == 0):
		bad("%s.link: only for limit with from (how the link between the two groups is made)", where)
	case a.Link != "" && a.Link != LinkShared && a.Link != LinkPerHost:
		bad("%s.link: %q: want %s (one link, the rate the two groups' total) or %s (each host's traffic to the other group shaped on its own, the default)", where, a.Link, LinkShared, LinkPerHost)
	}
	if !faultActions[a.Do] {
		return
	}
	c := sc.Cluster
	switch {
	case c == nil || c.External():
		bad("%s: %s needs a cluster the scenario starts (it acts on the nodes' hosts and processes)", where, a.Do)
	case networkFaults[a.Do] && c.Network != cluster.NetworkHosts:
		bad("%s: %s needs the nodes on hosts of a virtual network: add network: hosts to cluster (docs/network.md)", where, a.Do)
	}
	if a.Count > 0 {
		bad("%s: %s takes nodes (names), not count", where, a.Do)
	}
	if _, undo := undoes[a.Do]; !undo && len(a.Nodes) == 0 {
		switch a.Do {
		case "partition":
			bad("%s: partition of nothing: name the nodes to cut off from the rest (nodes: [redis1])", where)
		default:
			bad("%s: %s needs nodes (names)", where, a.Do)
		}
	}
	seen := map[string]bool{}
	for _, n := range a.Nodes {
		if seen[n] {
			bad("%s.nodes: %s named twice", where, n)
		}
		seen[n] = true
	}
	other := map[string]bool{}
	for _, n := range a.From {
		switch {
		case seen[n] && a.Do == "limit":
			bad("%s.from: %s is in nodes too: the two groups of a limit must not overlap", where, n)
		case seen[n]:
			bad("%s.from: %s is in nodes too: a host cannot be cut off from itself", where, n)
		case other[n]:
			bad("%s.from: %s named twice", where, n)
		}
		other[n] = true
	}
	switch a.Do {
	case "limit":
		if a.Rate == "" {
			bad("%s: limit needs rate (the link's bandwidth, e.g. rate: 10mbit)", where)
		} else if _, err := vnet.ParseRate(a.Rate); err != nil {
			bad("%s.rate: %v", where, err)
		}
	case "delay":
		if a.Delay <= 0 {
			bad("%s: delay needs delay (the latency to add, e.g. delay: 50ms)", where)
		}
	case "loss":
		if _, err := parseLoss(a.Loss); err != nil {
			bad("%s.loss: %v", where, err)
		}
	}
}

// parseLoss reads a share of packets like "5%" (0 < share <= 100).
func parseLoss(s string) (float64, error) {
	var v float64
	if _, err := fmt.Sscanf(s, "%g%%", &v); err != nil || v <= 0 || v > 100 {
		return 0, fmt.Errorf("%q: want a share of packets like 5%%, above 0%% and at most 100%%", s)
	}
	return v, nil
}
