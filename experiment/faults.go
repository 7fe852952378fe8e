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
	"github.com/fieldbench/fieldbench/cluster/vnet"
)

// faultState is what the fault actions did and not yet undid, by node:
// the end of the load undoes what is left (a paused server would not
// stop, a partitioned one would fail the audit for a reason the scenario
// did not ask about).
type faultState struct {
	cut, limited, paused, netem map[string]bool
}

func newFaultState() faultState {
	return faultState{cut: map[string]bool{}, limited: map[string]bool{}, paused: map[string]bool{}, netem: map[string]bool{}}
}

// Mechanisms: what each fault action runs here, recorded in the result.
var faultMechanisms = map[string]string{
	"partition": "nftables drop rules (inet fieldbench table, input and output hooks) inside each cut host's network namespace",
	"heal":      "the cut hosts' nftables table deleted",
	"limit":     "tc tbf qdisc on the host's eth0 and on its bridge port (both directions)",
	"unlimit":   "the tbf and netem qdiscs deleted (and toxiproxy's latency toxics removed where delay ran through it)",
	"pause":     "SIGSTOP to the node's server process",
	"resume":    "SIGCONT to the node's server process",
	"delay":     "tc netem qdisc on the host's eth0 (needs the kernel's sch_netem)",
	"loss":      "tc netem qdisc on the host's eth0 (needs the kernel's sch_netem)",
}

// mechanisms lists the mechanisms of the scenario's fault actions, for the
// result header: "partition: ...; heal: ...". viaProxy says the delays
// run through toxiproxy in the load generator (no netem here).
func (sc *Scenario) mechanisms(viaProxy bool) string {
	seen := map[string]bool{}
	var out []string
	for _, a := range sc.Timeline {
		m, ok := faultMechanisms[a.Do]
		if a.Do == "delay" && viaProxy {
			m = proxyMechanism
		}
		if ok && !seen[a.Do] {
			seen[a.Do] = true
			out = append(out, a.Do+": "+m)
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
	nodes := make([]*cluster.Node, 0, len(names))
	for _, name := range names {
		n, err := x.cl.Node(name)
		if err != nil {
			return err
		}
		if networkFaults[a.Do] && n.Netns == "" {
			return fmt.Errorf("%s %s: the node is not on a host of a virtual network", a.Do, name)
		}
		nodes = append(nodes, n)
	}
	fmt.Fprintf(x.stderr, "\n%s %s at %.1fs\n", a.Do, strings.Join(names, ", "), es.s.Since())
	detail, err := x.applyFault(ctx, a, nodes)
	if err != nil {
		return err
	}
	return es.s.Event(a.Do, detail)
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
		var rest []netip.Addr
		var restNames []string
		for _, n := range x.cl.Nodes {
			if !side(n.Name) || n.Netns == "" {
				continue
			}
			if ad, err := netip.ParseAddr(n.Host); err == nil {
				rest = append(rest, ad)
				restNames = append(restNames, n.Name)
			}
		}
		if x.loadHost != nil && side(x.loadHost.Name) {
			rest = append(rest, x.loadHost.Addr)
			restNames = append(restNames, x.loadHost.Name)
		}
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
		return fmt.Sprintf("%s (mechanism: nftables table deleted)", list), errors.Join(errs...)
	case "limit":
		rate, err := vnet.ParseRate(a.Rate)
		if err != nil {
			return "", err
		}
		for _, n := range nodes {
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
			if err := syscall.Kill(n.PID, sig); err != nil {
				return "", fmt.Errorf("%s %s (pid %d): %w", a.Do, n.Name, n.PID, err)
			}
			pids = append(pids, fmt.Sprint(n.PID))
			if a.Do == "pause" {
				x.faults.paused[n.Name] = true
			} else {
				delete(x.faults.paused, n.Name)
			}
		}
		return fmt.Sprintf("%s (mechanism: %s to pid %s)", list, verb, strings.Join(pids, ", ")), nil
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
			if n, err := x.cl.Node(name); err == nil {
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
