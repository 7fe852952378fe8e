package experiment

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"syscall"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/budget"
	"github.com/fieldbench/fieldbench/cluster/vnet"
	"github.com/fieldbench/fieldbench/probe"
)

// faultState is what the fault actions did and not yet undid, by node:
// the end of the load undoes what is left (a paused server would not
// stop, a partitioned one would fail the audit for a reason the scenario
// did not ask about).
type faultState struct {
	cut, limited, paused, netem map[string]bool
	// between maps each host of a limit between two groups to every host
	// of that limit, both groups: an unlimit of one of them undoes the
	// whole limit (half of one would still limit one direction).
	between map[string][]string
	// sharedLink is every host of the limit that runs over one shared
	// link (link: shared), both groups, sorted; nil when none holds. A
	// network has one such link (vnet.LinkSites).
	sharedLink []string
}

func newFaultState() faultState {
	return faultState{cut: map[string]bool{}, limited: map[string]bool{}, paused: map[string]bool{}, netem: map[string]bool{},
		between: map[string][]string{}}
}

// withLinks is names and, for each that holds a limit between groups,
// every host of that limit; sorted, each once.
func (f faultState) withLinks(names []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		for _, m := range append([]string{n}, f.between[n]...) {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Mechanisms: what each fault action runs here, recorded in the result.
var faultMechanisms = map[string]string{
	"partition":    "nftables drop rules (inet fieldbench table, input and output hooks) inside each cut host's network namespace",
	"heal":         "the cut hosts' nftables table deleted",
	"limit":        "tc tbf qdisc on the host's eth0 and on its bridge port (both directions)",
	"limit-shared": "one shared link between the two groups: a second bridge (br1) in the network's bridge namespace joined to br0 by one veth pair with a tc tbf qdisc on each end (each direction shaped once), and the bridge ports of the hosts of nodes moved onto br1; every packet between the groups crosses the pair, so the rate is the two groups' total (hosts in neither group stay on br0, on from's side)",
	"limit-from":   "tc htb qdisc on the eth0 of every host of both groups: u32 filters (match ip dst ADDR/32) send what goes to the other group's addresses into a class at the rate (with a tbf leaf), the rest into a default class at 100gbit (not limited); each host's egress, so both directions",
	"unlimit":      "the tbf, htb and netem qdiscs deleted (and toxiproxy's latency toxics removed where delay ran through it; a shared link's hosts moved back to br0 and its bridge and veth pair deleted)",
	"pause":        "SIGSTOP to the node's server process and every process it forked",
	"resume":       "SIGCONT to the node's server process",
	"delay":        "tc netem qdisc on the host's eth0 (needs the kernel's sch_netem)",
	"loss":         "tc netem qdisc on the host's eth0 (needs the kernel's sch_netem)",
}

// mechanisms lists the mechanisms of the scenario's fault actions, for the
// result header: "partition: ...; heal: ...". viaProxy says the delays
// run through toxiproxy in the load generator (no netem here).
func (sc *Scenario) mechanisms(viaProxy bool) string {
	seen := map[string]bool{}
	var out []string
	for _, a := range sc.Timeline {
		key := a.Do
		if a.Do == "limit" && len(a.From) > 0 {
			key = "limit-from"
			if a.Link == LinkShared {
				key = "limit-shared"
			}
		}
		m, ok := faultMechanisms[key]
		if a.Do == "delay" && viaProxy {
			m = proxyMechanism
		}
		if ok && !seen[key] {
			seen[key] = true
			label := map[string]string{"limit-from": "limit with from", "limit-shared": "limit with from, link: shared"}[key]
			if label == "" {
				label = key
			}
			out = append(out, label+": "+m)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// needsNetem reports whether the timeline delays or drops packets.
func (sc *Scenario) needsNetem() bool {
	for _, a := range sc.Timeline {
		if a.Do == "delay" || a.Do == "loss" {
			return true
		}
	}
	return false
}

// fault performs one fault action and records it as an event whose detail
// says what was done and how.
func (es *expSession) fault(ctx context.Context, a Action) error {
	x := es.x
	x.mu.Lock()
	defer x.mu.Unlock()
	names := a.Nodes
	if len(names) == 0 { // an undo of everything
		names = x.faults.of(undoes[a.Do])
	}
	if a.Do == "unlimit" {
		names = x.faults.withLinks(names)
	}
	nodes := make([]*cluster.Node, 0, len(names))
	for _, name := range names {
		n, err := x.faultHost(name, a)
		if err != nil {
			return err
		}
		if networkFaults[a.Do] && n.Netns == "" {
			return fmt.Errorf("%s %s: the node is not on a host of a virtual network", a.Do, name)
		}
		nodes = append(nodes, n)
	}
	from := ""
	if len(a.From) > 0 {
		from = " from " + strings.Join(a.From, ", ")
	}
	fmt.Fprintf(x.stderr, "\n%s %s%s at %.1fs\n", a.Do, strings.Join(names, ", "), from, es.s.Since())
	detail, err := x.applyFault(ctx, a, nodes)
	if err != nil {
		return err
	}
	return es.s.Event(a.Do, detail)
}

// faultHost is the node name, or, where a may name it (a limit between
// groups, unlimit), the load host as a node of no process: its name, its
// address as Host and its namespace as Netns.
func (x *expRun) faultHost(name string, a Action) (*cluster.Node, error) {
	if lh := x.loadHost; lh != nil && name == lh.Name && a.hostsMayIncludeLoad() {
		return &cluster.Node{Name: lh.Name, Host: lh.Addr.String(), Netns: lh.NS}, nil
	}
	n, err := x.cl.Node(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", a.Do, err)
	}
	return n, nil
}

// of lists the nodes a fault (partition, limit, pause) holds now. limit
// includes the nodes delayed or dropping packets (netem, or the delay's
// toxiproxy fallback): unlimit undoes those too, so an unlimit of
// everything must find them, not pass over them as nothing to undo.
func (f faultState) of(fault string) []string {
	ms := map[string][]map[string]bool{"partition": {f.cut}, "limit": {f.limited, f.netem}, "pause": {f.paused}}[fault]
	seen := map[string]bool{}
	var out []string
	for _, m := range ms {
		for n := range m {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

// cutPeers is what a partition cuts nodes off from: the addresses of the
// hosts of others on the side (each once), with the names of the nodes
// there. A node that shares a cut node's host (HBase's REST gateway and
// master) is on neither side: its address is the cut host's own, and
// dropping it would cut the host off from itself (the master from its own
// ZooKeeper), not from the network.
func cutPeers(nodes, others []*cluster.Node, side func(name string) bool) ([]netip.Addr, []string) {
	own := map[string]bool{}
	for _, n := range nodes {
		own[n.Host] = true
	}
	seen := map[netip.Addr]bool{}
	var addrs []netip.Addr
	var names []string
	for _, n := range others {
		if !side(n.Name) || n.Netns == "" || own[n.Host] {
			continue
		}
		ad, err := netip.ParseAddr(n.Host)
		if err != nil {
			continue
		}
		names = append(names, n.Name)
		if !seen[ad] {
			seen[ad] = true
			addrs = append(addrs, ad)
		}
	}
	return addrs, names
}

// applyFault does a's fault on nodes; x.mu is held.
func (x *expRun) applyFault(ctx context.Context, a Action, nodes []*cluster.Node) (string, error) {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	list := strings.Join(names, ", ")
	if len(nodes) == 0 {
		list = "nothing to undo"
	}
	vn := vnet.ForDir(x.cl.Dir)
	switch a.Do {
	case "partition":
		in := map[string]bool{}
		for _, n := range names {
			in[n] = true
		}
		// The other side: the hosts named in from, else every other host.
		side := func(name string) bool { return !in[name] }
		if len(a.From) > 0 {
			side = func(name string) bool { return slices.Contains(a.From, name) }
		}
		others := x.cl.Nodes
		if x.loadHost != nil {
			others = append(slices.Clip(others), &cluster.Node{Name: x.loadHost.Name, Host: x.loadHost.Addr.String(), Netns: x.loadHost.NS})
		}
		rest, restNames := cutPeers(nodes, others, side)
		if len(rest) == 0 {
			return "", fmt.Errorf("partition %s from %s: none of those hosts is on the network", list, strings.Join(a.From, ", "))
		}
		for _, n := range nodes {
			if err := vnet.Cut(ctx, n.Netns, rest); err != nil {
				return "", err
			}
			x.faults.cut[n.Name] = true
		}
		return fmt.Sprintf("%s cut off from %s, both ways (mechanism: nftables drop rules in the cut hosts' namespaces)", list, strings.Join(restNames, ", ")), nil
	case "heal":
		var errs []error
		for _, n := range nodes {
			if err := vnet.Uncut(ctx, n.Netns); err != nil {
				errs = append(errs, err)
				continue
			}
			delete(x.faults.cut, n.Name)
		}
		detail := fmt.Sprintf("%s (mechanism: nftables table deleted)", list)
		if h, ok := x.eng.(cluster.Healer); ok && len(nodes) > 0 && len(errs) == 0 {
			if err := h.Healed(ctx, x.cl, names); err != nil {
				errs = append(errs, err)
			} else {
				detail += "; " + h.HealNote()
			}
		}
		return detail, errors.Join(errs...)
	case "limit":
		rate, err := vnet.ParseRate(a.Rate)
		if err != nil {
			return "", err
		}
		if len(a.From) > 0 {
			return x.limitBetween(ctx, a, nodes, rate)
		}
		for _, n := range nodes {
			if l := x.faults.between[n.Name]; l != nil {
				return "", fmt.Errorf("limit %s: it is limited between two groups (%s): unlimit it first", n.Name, strings.Join(l, ", "))
			}
			if err := vn.Limit(ctx, n.Name, rate); err != nil {
				return "", err
			}
			x.faults.limited[n.Name] = true
		}
		return fmt.Sprintf("%s at %s (%d bit/s) both ways (mechanism: tc tbf on eth0 and the bridge port)", list, a.Rate, rate), nil
	case "unlimit":
		var errs []error
		how := "tc qdiscs deleted"
		if x.delays != nil {
			how += "; toxiproxy latency toxics removed"
		}
		if l := x.faults.sharedLink; l != nil && slices.ContainsFunc(names, func(n string) bool { return slices.Contains(l, n) }) {
			if err := vn.UnlinkSites(ctx); err != nil {
				return "", fmt.Errorf("unlimit %s: %w", strings.Join(l, ", "), err)
			}
			x.faults.sharedLink = nil
			how += "; the shared link undone: hosts moved back to br0, br1 and its veth pair deleted"
		}
		for _, n := range nodes {
			if err := vn.Unlimit(ctx, n.Name); err != nil {
				errs = append(errs, err)
				continue
			}
			if x.delays != nil && x.faults.netem[n.Name] {
				if err := x.delays.undelay(n.Name); err != nil {
					errs = append(errs, err)
					continue
				}
			}
			delete(x.faults.limited, n.Name)
			delete(x.faults.netem, n.Name)
			delete(x.faults.between, n.Name)
			// A node whose budget sets its link (net=) goes back to that
			// rate, not to an unlimited link.
			if rate := x.cl.Budget.For(n.Name).Net; rate > 0 {
				if err := vn.Limit(ctx, n.Name, rate); err != nil {
					errs = append(errs, err)
					continue
				}
				how += fmt.Sprintf("; %s back at its budget's %s", n.Name, budget.Budget{Net: rate})
			}
		}
		return fmt.Sprintf("%s (mechanism: %s)", list, how), errors.Join(errs...)
	case "pause", "resume":
		sig, verb := syscall.SIGSTOP, "SIGSTOP"
		if a.Do == "resume" {
			sig, verb = syscall.SIGCONT, "SIGCONT"
		}
		var pids []string
		for _, n := range nodes {
			if n.PID <= 0 || !cluster.Alive(n.PID) {
				return "", fmt.Errorf("%s %s: the node's server is not running", a.Do, n.Name)
			}
			who, err := signalServer(n.PID, sig)
			if err != nil {
				return "", fmt.Errorf("%s %s (pid %d): %w", a.Do, n.Name, n.PID, err)
			}
			pids = append(pids, who)
			if a.Do == "pause" {
				x.faults.paused[n.Name] = true
			} else {
				delete(x.faults.paused, n.Name)
			}
		}
		return fmt.Sprintf("%s (mechanism: %s to %s)", list, verb, strings.Join(pids, ", ")), nil
	case "delay", "loss":
		if x.delays != nil {
			if a.Do == "loss" { // refused before the load (netemOrProxy); never silently skipped
				return "", fmt.Errorf("loss %s: no netem in this kernel and loss has no proxy fallback", list)
			}
			for _, n := range nodes {
				if err := x.delays.delay(n.Name, a.Delay.D()); err != nil {
					return "", err
				}
				x.faults.netem[n.Name] = true
			}
			return fmt.Sprintf("%s: delay %s (mechanism: toxiproxy latency toxic on what each node sends to load host %s, in the load generator; node-to-node traffic not delayed; no netem in this kernel)",
				list, a.Delay.D(), x.loadHostName()), nil
		}
		args := []string{"delay", a.Delay.D().String()}
		if a.Do == "loss" {
			args = []string{"loss", a.Loss}
		}
		for _, n := range nodes {
			if err := vnet.Netem(ctx, n.Netns, args...); err != nil {
				return "", fmt.Errorf("%s %s: %w (a delaying proxy is not built; see docs/network.md)", a.Do, n.Name, err)
			}
			x.faults.netem[n.Name] = true
		}
		return fmt.Sprintf("%s: %s (mechanism: tc netem on eth0)", list, strings.Join(args, " ")), nil
	}
	return "", fmt.Errorf("unknown fault %q", a.Do)
}

// limitBetween limits the bandwidth between nodes (a's nodes, the load
// host among them maybe) and the hosts of a.From to rate, each way, and
// nothing else (vnet.LimitBetween); x.mu is held. A host already limited
// between groups may be limited again between the same two groups (a new
// rate); between others it is refused: the new qdisc would replace its
// half of the old limit and leave the other half limiting one way.
func (x *expRun) limitBetween(ctx context.Context, a Action, nodes []*cluster.Node, rate uint64) (string, error) {
	group := func(ns []*cluster.Node) ([]vnet.Host, []string, error) {
		hs := make([]vnet.Host, 0, len(ns))
		names := make([]string, 0, len(ns))
		for _, n := range ns {
			ad, err := netip.ParseAddr(n.Host)
			if err != nil {
				return nil, nil, fmt.Errorf("limit %s: its address: %w", n.Name, err)
			}
			hs = append(hs, vnet.Host{Name: n.Name, NS: n.Netns, Addr: ad})
			names = append(names, n.Name)
		}
		return hs, names, nil
	}
	others := make([]*cluster.Node, 0, len(a.From))
	for _, name := range a.From {
		n, err := x.faultHost(name, a)
		if err != nil {
			return "", err
		}
		if n.Netns == "" {
			return "", fmt.Errorf("limit from %s: the node is not on a host of a virtual network", name)
		}
		others = append(others, n)
	}
	ga, na, err := group(nodes)
	if err != nil {
		return "", err
	}
	gb, nb, err := group(others)
	if err != nil {
		return "", err
	}
	all := append(slices.Clone(na), nb...)
	sort.Strings(all)
	for _, h := range all {
		if l := x.faults.between[h]; l != nil && !slices.Equal(l, all) {
			return "", fmt.Errorf("limit %s from %s: %s is limited between other groups (%s): unlimit it first",
				strings.Join(na, ", "), strings.Join(nb, ", "), h, strings.Join(l, ", "))
		}
	}
	vn := vnet.ForDir(x.cl.Dir)
	if a.Link == LinkShared {
		return x.linkSites(ctx, vn, na, nb, all, a, rate)
	}
	if x.faults.sharedLink != nil { // these groups' shared link, checked above: now per host
		if err := vn.UnlinkSites(ctx); err != nil {
			return "", fmt.Errorf("limit %s from %s: undo their shared link: %w", strings.Join(na, ", "), strings.Join(nb, ", "), err)
		}
		x.faults.sharedLink = nil
	}
	if err := vn.LimitBetween(ctx, ga, gb, rate); err != nil {
		return "", fmt.Errorf("limit %s from %s: %w", strings.Join(na, ", "), strings.Join(nb, ", "), err)
	}
	for _, h := range all {
		x.faults.limited[h] = true
		x.faults.between[h] = all
	}
	return fmt.Sprintf("%s from %s at %s (%d bit/s) each way, per host; inside each group and to other hosts not limited (mechanism: %s)",
		strings.Join(na, ", "), strings.Join(nb, ", "), a.Rate, rate, faultMechanisms["limit-from"]), nil
}

// linkSites puts the hosts na behind one shared link to the rest of the
// network at rate (vnet.LinkSites), the groups checked by limitBetween;
// x.mu is held. Every limit of those hosts is removed first: a per-host
// qdisc besides the link would shape the same bytes twice. A second
// shared link of other groups is refused (one per network).
func (x *expRun) linkSites(ctx context.Context, vn vnet.Net, na, nb, all []string, a Action, rate uint64) (string, error) {
	if l := x.faults.sharedLink; l != nil && !slices.Equal(l, all) {
		return "", fmt.Errorf("limit %s from %s over a shared link: %s share one already (one per network): unlimit them first",
			strings.Join(na, ", "), strings.Join(nb, ", "), strings.Join(l, ", "))
	}
	for _, h := range all {
		if err := vn.Unlimit(ctx, h); err != nil {
			return "", err
		}
	}
	if err := vn.LinkSites(ctx, na, rate); err != nil {
		return "", fmt.Errorf("limit %s from %s over a shared link: %w", strings.Join(na, ", "), strings.Join(nb, ", "), err)
	}
	for _, h := range all {
		x.faults.limited[h] = true
		x.faults.between[h] = all
	}
	x.faults.sharedLink = all
	// The hosts of neither group stay on br0: on from's side of the link.
	var rest []string
	for _, n := range x.cl.Nodes {
		if n.Netns != "" && !slices.Contains(all, n.Name) {
			rest = append(rest, n.Name)
		}
	}
	if x.loadHost != nil && !slices.Contains(all, x.loadHost.Name) {
		rest = append(rest, x.loadHost.Name)
	}
	side := ""
	if len(rest) > 0 {
		side = "; " + strings.Join(rest, ", ") + ", in neither group, on the side of " + strings.Join(nb, ", ")
	}
	return fmt.Sprintf("%s from %s at %s (%d bit/s) each way over ONE shared link: the two groups' total%s (mechanism: %s)",
		strings.Join(na, ", "), strings.Join(nb, ", "), a.Rate, rate, side, faultMechanisms["limit-shared"]), nil
}

// undoFaults resumes, heals and unlimits every node a fault action left
// so: at the end of the load, and before the cluster stops. It returns
// what it undid ("" for nothing).
func (x *expRun) undoFaults(ctx context.Context) (string, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.cl == nil {
		return "", nil
	}
	var did []string
	var errs []error
	for _, u := range []struct{ undo, fault string }{{"resume", "pause"}, {"heal", "partition"}, {"unlimit", "limit"}} {
		names := x.faults.of(u.fault)
		if len(names) == 0 {
			continue
		}
		var nodes []*cluster.Node
		for _, name := range names {
			if n, err := x.faultHost(name, Action{Do: u.undo}); err == nil {
				nodes = append(nodes, n)
			}
		}
		if _, err := x.applyFault(ctx, Action{Do: u.undo}, nodes); err != nil {
			errs = append(errs, err)
		}
		did = append(did, u.undo+" "+strings.Join(names, ", "))
	}
	return strings.Join(did, "; "), errors.Join(errs...)
}

// loadHostName names the load host for an event's detail.
func (x *expRun) loadHostName() string {
	if x.loadHost == nil {
		return "(none)"
	}
	return x.loadHost.Name
}

// signalServer sends sig to a node's server and to every process it
// forked (its descendants, from /proc), the server first: stopped, it
// forks no new one meanwhile; it says how many. Why the children: a
// server that forks a process per connection (PostgreSQL's backends, its
// WAL sender and receiver; each calls setsid, so no process group holds
// them) went on serving every open connection while only its postmaster
// was stopped: faults-postgres.yaml's paused replica answered 40
// operations a second through its pause (2026-11-29).
func signalServer(pid int, sig syscall.Signal) (string, error) {
	if err := syscall.Kill(pid, sig); err != nil {
		return "", err
	}
	kids, err := probe.Descendants(pid)
	if err != nil {
		return "", fmt.Errorf("the server's child processes: %w", err)
	}
	var errs []error
	for _, k := range kids {
		// A child may have ended since the listing: not an error.
		if err := syscall.Kill(k, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("child %d: %w", k, err))
		}
	}
	return fmt.Sprintf("pid %d and its %d child process(es)", pid, len(kids)), errors.Join(errs...)
}
