package vnet

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Network faults, each made inside the namespaces of one network and
// nowhere else (never the root namespace):
//
//   - Cut: an nftables table (inet fieldbench) in a host's namespace that
//     drops every packet to and from the addresses given, on its input and
//     output hooks. Every packet between the host and those addresses
//     passes through the host's own stack, so rules in the cut hosts alone
//     cut both directions. Uncut deletes the table.
//   - Limit: a tbf qdisc (token bucket) on the host's eth0 (what it sends)
//     and on its bridge port (what it receives): the bandwidth of its
//     link, both ways. Unlimit deletes both root qdiscs.
//   - LimitBetween: a limit on the link between two groups of hosts only
//     (two data centres): on every host of both groups, an htb qdisc on
//     eth0 whose filters send what goes to the other group into a class
//     at the rate, and the rest to a default class that is not limited.
//     Unlimit deletes it like the others. Each host gets the rate: two
//     hosts of a group sending at once get twice it.
//   - LinkSites: one shared link between two sites, whatever the number
//     of hosts: a second bridge in the bridge namespace, joined to the
//     first by a veth pair shaped with tbf at both ends, and one site's
//     bridge ports moved onto it. UnlinkSites moves them back and deletes
//     the bridge and the pair.
//   - Netem: a netem qdisc (delay, loss) on eth0, where the kernel has the
//     qdisc; where it has not, an error that says so.

// cutTable is the nftables table a cut lives in.
const cutTable = "fieldbench"

// Cut drops every packet between host ns and the addresses peers, both
// ways, replacing any cut ns had. It needs the nft command.
func Cut(ctx context.Context, ns string, peers []netip.Addr) error {
	if len(peers) == 0 {
		return fmt.Errorf("cut %s: no address to cut it from", ns)
	}
	if _, err := exec.LookPath("nft"); err != nil {
		return errors.New("nft not found in PATH: install the Debian package nftables")
	}
	if err := Uncut(ctx, ns); err != nil {
		return err
	}
	var els []string
	for _, p := range peers {
		if !p.Is4() || !Block.Contains(p) {
			return fmt.Errorf("cut %s: %s is not an address of the virtual network (%s)", ns, p, Block)
		}
		els = append(els, p.String())
	}
	script := fmt.Sprintf(`table inet %[1]s {
  set cut { type ipv4_addr; elements = { %[2]s } }
  chain input { type filter hook input priority 0; policy accept; ip saddr @cut drop; }
  chain output { type filter hook output priority 0; policy accept; ip daddr @cut drop; }
}
`, cutTable, strings.Join(els, ", "))
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft in %s: %w: %s", ns, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Uncut removes the cut of host ns, if any.
func Uncut(ctx context.Context, ns string) error {
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "nft", "list", "tables").CombinedOutput()
	if err != nil {
		return fmt.Errorf("nft list tables in %s: %w: %s", ns, err, strings.TrimSpace(string(out)))
	}
	if !strings.Contains(string(out), "table inet "+cutTable) {
		return nil
	}
	if out, err := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "nft", "delete", "table", "inet", cutTable).CombinedOutput(); err != nil {
		return fmt.Errorf("nft delete table in %s: %w: %s", ns, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// tc runs one tc command.
func tc(ctx context.Context, args ...string) ([]byte, error) {
	out, err := exec.CommandContext(ctx, "tc", args...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("tc %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// rateRE reads a rate as tc writes one: a number and a unit, bits (bit,
// kbit, mbit, gbit) or bytes (bps, kbps, mbps, gbps) per second.
var rateRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(bit|kbit|mbit|gbit|bps|kbps|mbps|gbps)$`)

// ParseRate reads a bandwidth like 10mbit or 1mbps (tc's units: mbit is
// 10^6 bits, mbps 10^6 bytes per second) in bits per second.
func ParseRate(s string) (uint64, error) {
	m := rateRE.FindStringSubmatch(strings.ToLower(strings.TrimSpace(s)))
	if m == nil {
		return 0, fmt.Errorf("rate %q: want a number and a unit: bit, kbit, mbit, gbit (bits per second) or bps, kbps, mbps, gbps (bytes per second), e.g. 10mbit", s)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, fmt.Errorf("rate %q: %w", s, err)
	}
	mult := map[string]float64{"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "bps": 8, "kbps": 8e3, "mbps": 8e6, "gbps": 8e9}[m[2]]
	bits := v * mult
	if bits < 8000 || bits > 100e9 {
		return 0, fmt.Errorf("rate %q: between 8kbit and 100gbit", s)
	}
	return uint64(bits), nil
}

// Limit caps the bandwidth of host's link to rate bits per second both
// ways: a tbf qdisc on its eth0 (what it sends) and on its bridge port in
// the bridge namespace (what it receives). The bucket holds 10 ms of the
// rate, at least two full frames; a packet waits at most 100 ms for its
// tokens before it is dropped.
func (n Net) Limit(ctx context.Context, host string, rate uint64) error {
	burst := max(rate/8/100, 3200)
	args := func(ns, dev string) []string {
		return []string{"-n", ns, "qdisc", "replace", "dev", dev, "root", "tbf",
			"rate", strconv.FormatUint(rate, 10) + "bit", "burst", strconv.FormatUint(burst, 10), "latency", "100ms"}
	}
	if _, err := tc(ctx, args(n.HostNS(host), HostIf)...); err != nil {
		return err
	}
	if _, err := tc(ctx, args(n.BridgeNS(), "v"+host)...); err != nil {
		_ = n.Unlimit(context.WithoutCancel(ctx), host)
		return err
	}
	return nil
}

// The classes of LimitBetween's htb qdisc (handle 1:): what goes to the
// other group, and the rest.
const (
	// CrossClass is the class at the limit's rate.
	CrossClass = "1:20"
	// OpenClass is the default class, at openRate.
	OpenClass = "1:10"
)

// openRate is the rate of LimitBetween's default class: 100 gbit/s, more
// than a veth pair carries on the machines this runs on, so the class
// exists (it counts what it sends) without being a limit.
const openRate = "100gbit"

// LimitBetween caps the bandwidth between the hosts of group a and those
// of group b to rate bits per second, each way, and leaves every other
// path of those hosts (inside a group, to any third host) as it was: two
// data centres joined by a narrow link. On every host of both groups it
// puts an htb qdisc on eth0: a default class at 100 gbit/s (OpenClass,
// not a limit), and a class at the rate (CrossClass) that u32 filters
// (match ip dst ADDR/32) fill with what the host sends to each address of
// the other group. The cross class's bucket holds 10 ms of the rate (at
// least two full frames), and its leaf, a tbf like Limit's, lets a packet
// wait 100 ms.
//
// Why eth0's egress alone, and not the bridge port as Limit does: every
// byte from a to b leaves a host of a through its eth0, where a's qdisc
// shapes it, and every byte from b to a leaves a host of b through its
// eth0, where b's shapes it; both directions are limited once. Limit
// shapes the bridge port because it limits one host and what reaches it
// from hosts that are not limited; here both ends are. A qdisc on the
// bridge ports too would shape the same bytes twice.
//
// The rate is each host's, not a shared link's: two hosts of a sending
// to b at once get rate each. LinkSites is the shared link: all the cross
// traffic through one device.
//
// A host holds one limit: LimitBetween first removes what Limit,
// LimitBetween or Netem left on it. The groups may not share a host or an
// address, and every address must be in Block. On an error, the hosts
// already limited are unlimited again.
func (n Net) LimitBetween(ctx context.Context, a, b []Host, rate uint64) (err error) {
	if len(a) == 0 || len(b) == 0 {
		return fmt.Errorf("limit between groups: both need a host (got %d and %d)", len(a), len(b))
	}
	names, addrs := map[string]int{}, map[netip.Addr]int{}
	for side, g := range [][]Host{a, b} {
		for _, h := range g {
			if !h.Addr.Is4() || !Block.Contains(h.Addr) {
				return fmt.Errorf("limit between groups: host %s's address %s is not an address of the virtual network (%s)", h.Name, h.Addr, Block)
			}
			if s, ok := names[h.Name]; ok && s != side {
				return fmt.Errorf("limit between groups: host %s is in both groups", h.Name)
			}
			if s, ok := addrs[h.Addr]; ok && s != side {
				return fmt.Errorf("limit between groups: address %s is in both groups", h.Addr)
			}
			names[h.Name], addrs[h.Addr] = side, side
		}
	}
	var done []string
	defer func() {
		if err != nil {
			for _, h := range done {
				_ = n.Unlimit(context.WithoutCancel(ctx), h)
			}
		}
	}()
	for _, g := range [][2][]Host{{a, b}, {b, a}} {
		for _, h := range g[0] {
			if err := n.Unlimit(ctx, h.Name); err != nil {
				return err
			}
			done = append(done, h.Name)
			if err := n.crossLimit(ctx, h.Name, g[1], rate); err != nil {
				return fmt.Errorf("limit %s to the other group: %w", h.Name, err)
			}
		}
	}
	return nil
}

// crossLimit puts LimitBetween's htb qdisc on host's eth0, with a filter
// per host of others, in one tc batch.
//
// The cross class's leaf is a tbf at the same rate, not a fifo: veth
// hands the qdisc GSO packets of up to 64 KiB, which a byte fifo sized to
// 100 ms of a slow rate drops whole (every time: the connection stalls),
// and htb charges whole, in lumps; tbf cuts such a packet into frames as
// it queues it, so the htb class above sees frames.
func (n Net) crossLimit(ctx context.Context, host string, others []Host, rate uint64) error {
	burst := max(rate/8/100, 3200)
	r := strconv.FormatUint(rate, 10) + "bit"
	var b strings.Builder
	fmt.Fprintf(&b, "qdisc replace dev %s root handle 1: htb default %s\n", HostIf, strings.TrimPrefix(OpenClass, "1:"))
	fmt.Fprintf(&b, "class add dev %s parent 1: classid %s htb rate %s ceil %s burst 1mb cburst 1mb quantum 60000\n", HostIf, OpenClass, openRate, openRate)
	fmt.Fprintf(&b, "class add dev %s parent 1: classid %s htb rate %s ceil %s burst %d cburst %d quantum 60000\n", HostIf, CrossClass, r, r, burst, burst)
	fmt.Fprintf(&b, "qdisc add dev %s parent %s handle 20: tbf rate %s burst %d latency 100ms\n", HostIf, CrossClass, r, burst)
	for _, o := range others {
		fmt.Fprintf(&b, "filter add dev %s parent 1: protocol ip prio 1 u32 match ip dst %s/32 flowid %s\n", HostIf, o.Addr, CrossClass)
	}
	cmd := exec.CommandContext(ctx, "tc", "-n", n.HostNS(host), "-batch", "-")
	cmd.Stdin = strings.NewReader(b.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("tc -batch in %s: %w: %s", n.HostNS(host), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ClassBytes is the bytes class (e.g. CrossClass) of host's eth0 qdisc
// has sent, from tc's statistics.
func (n Net) ClassBytes(ctx context.Context, host, class string) (uint64, error) {
	out, err := tc(ctx, "-n", n.HostNS(host), "-s", "class", "show", "dev", HostIf, "classid", class)
	if err != nil {
		return 0, err
	}
	m := sentRE.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("class %s of %s: no Sent line in tc's output: %s", class, host, strings.TrimSpace(string(out)))
	}
	v, err := strconv.ParseUint(string(m[1]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("class %s of %s: %w", class, host, err)
	}
	return v, nil
}

// sentRE reads tc -s's "Sent 1234 bytes".
var sentRE = regexp.MustCompile(`Sent ([0-9]+) bytes`)

// Unlimit removes the limit of host's link (its root qdiscs: Limit's tbf,
// LimitBetween's htb, Netem's netem), if any.
func (n Net) Unlimit(ctx context.Context, host string) error {
	var errs []error
	for _, p := range [][2]string{{n.HostNS(host), HostIf}, {n.BridgeNS(), "v" + host}} {
		out, err := tc(ctx, "-n", p[0], "qdisc", "show", "dev", p[1], "root")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !strings.Contains(string(out), "qdisc tbf") && !strings.Contains(string(out), "qdisc netem") && !strings.Contains(string(out), "qdisc htb") {
			continue
		}
		if _, err := tc(ctx, "-n", p[0], "qdisc", "del", "dev", p[1], "root"); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ErrNoNetem is wrapped by Netem's error where the kernel has no netem
// qdisc: delay and loss cannot be made by tc here.
var ErrNoNetem = errors.New("netem not available (this kernel has no sch_netem qdisc: tc cannot delay or drop packets here)")

// Netem puts a netem qdisc with args (e.g. delay 50ms, loss 5%) on host
// ns's eth0. It fails with ErrNoNetem where the kernel lacks the qdisc:
// never a silent no-op.
func Netem(ctx context.Context, ns string, args ...string) error {
	out, err := tc(ctx, append([]string{"-n", ns, "qdisc", "replace", "dev", HostIf, "root", "netem"}, args...)...)
	if err != nil && strings.Contains(string(out), "qdisc kind is unknown") {
		return fmt.Errorf("%w: %v", ErrNoNetem, err)
	}
	return err
}

// The shared link between two sites (LinkSites): a second bridge in the
// bridge namespace, joined to the first by one veth pair whose two ends
// are shaped, each on its egress, so each direction of the link is shaped
// once.
const (
	// SiteBridge is the second bridge, that of the site LinkSites moves.
	SiteBridge = "br1"
	// LinkMain is the link's end on Bridge (its egress: what goes from
	// the rest of the network to the moved site), LinkSite its end on
	// SiteBridge (what goes from the moved site to the rest).
	LinkMain = "lnk0"
	LinkSite = "lnk1"
)

// LinkSites puts the hosts named site behind one shared link of rate bits
// per second each way: the two data centres of a WAN. It makes a second
// bridge (SiteBridge) in the bridge namespace, joins it to the first by a
// veth pair (LinkMain on Bridge, LinkSite on SiteBridge) with a tbf qdisc
// on each end (Limit's bucket: 10 ms of the rate, at least 3,200 bytes,
// 100 ms latency), then moves the bridge ports of site's hosts onto
// SiteBridge (`ip link set vNAME master br1`). Every packet between a host
// of site and any other host now crosses the pair: the rate is the total
// of all the hosts of both sites, as on a real link between two sites,
// where LimitBetween gives each host its own rate. The hosts keep their
// addresses, interfaces and connections: only the switch port they plug
// into changes (both bridges learn the moved addresses again from the
// next packets, flooding until then).
//
// Every host not in site stays on Bridge, on the other side of the link
// (a host added while the link holds joins Bridge too). The link is made
// at a limit and not when the hosts are made, so a network without a
// limit is the plain one bridge of the package comment, and a scenario
// declares its sites where it limits them.
//
// One link per network: LinkSites first undoes an existing link
// (UnlinkSites), unless it already holds exactly site, in which case only
// the rate changes. Nothing of it is outside the bridge namespace, so
// deleting that namespace (Destroy: `cluster down`, the next Create after
// a crash or an interrupted start) deletes the bridge and the pair too.
// On an error, the link is undone.
func (n Net) LinkSites(ctx context.Context, site []string, rate uint64) (err error) {
	if len(site) == 0 {
		return errors.New("shared link: no host to put behind it")
	}
	ns := n.BridgeNS()
	if !Exists(ns) {
		return fmt.Errorf("shared link: the network %s does not exist", n.ID)
	}
	want := map[string]bool{}
	for _, h := range site {
		if !hostName.MatchString(h) {
			return fmt.Errorf("shared link: host name %q", h)
		}
		want["v"+h] = true
	}
	shape := func() error {
		burst := strconv.FormatUint(max(rate/8/100, 3200), 10)
		r := strconv.FormatUint(rate, 10) + "bit"
		for _, dev := range []string{LinkMain, LinkSite} {
			if _, err := tc(ctx, "-n", ns, "qdisc", "replace", "dev", dev, "root", "tbf", "rate", r, "burst", burst, "latency", "100ms"); err != nil {
				return err
			}
		}
		return nil
	}
	cur, ok, err := n.SitePorts(ctx)
	if err != nil {
		return err
	}
	if ok && len(cur) == len(want) && allIn(cur, want) {
		return shape()
	}
	if ok {
		if err := n.UnlinkSites(ctx); err != nil {
			return err
		}
	}
	defer func() {
		if err != nil {
			_ = n.UnlinkSites(context.WithoutCancel(ctx))
		}
	}()
	for _, args := range [][]string{
		{"-n", ns, "link", "add", SiteBridge, "type", "bridge"},
		{"-n", ns, "link", "add", LinkMain, "type", "veth", "peer", "name", LinkSite},
		{"-n", ns, "link", "set", LinkMain, "master", Bridge},
		{"-n", ns, "link", "set", LinkSite, "master", SiteBridge},
	} {
		if err := ip(ctx, args...); err != nil {
			return fmt.Errorf("shared link: %w", err)
		}
	}
	// Shaped before any host moves: no packet crosses unshaped.
	if err := shape(); err != nil {
		return fmt.Errorf("shared link: %w", err)
	}
	for _, dev := range []string{SiteBridge, LinkMain, LinkSite} {
		if err := ip(ctx, "-n", ns, "link", "set", dev, "up"); err != nil {
			return fmt.Errorf("shared link: %w", err)
		}
	}
	for _, h := range site {
		if err := ip(ctx, "-n", ns, "link", "set", "v"+h, "master", SiteBridge); err != nil {
			return fmt.Errorf("shared link: move host %s behind it: %w", h, err)
		}
	}
	return nil
}

func allIn(s []string, set map[string]bool) bool {
	for _, v := range s {
		if !set[v] {
			return false
		}
	}
	return true
}

// SitePorts lists the host ports (vNAME) on SiteBridge, sorted; false
// when there is no shared link.
func (n Net) SitePorts(ctx context.Context) ([]string, bool, error) {
	ns := n.BridgeNS()
	if err := exec.CommandContext(ctx, "ip", "-n", ns, "link", "show", "dev", SiteBridge).Run(); err != nil {
		return nil, false, nil
	}
	out, err := exec.CommandContext(ctx, "ip", "-n", ns, "-o", "link", "show", "master", SiteBridge).Output()
	if err != nil {
		return nil, true, fmt.Errorf("ports of %s in %s: %w", SiteBridge, ns, err)
	}
	var ports []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		p := strings.TrimSuffix(strings.SplitN(f[1], "@", 2)[0], ":")
		if p != LinkSite {
			ports = append(ports, p)
		}
	}
	sort.Strings(ports)
	return ports, true, nil
}

// UnlinkSites undoes LinkSites: the ports on SiteBridge go back to
// Bridge, then the pair and SiteBridge are deleted. It finds all of it by
// name (after a crash too); no link is no error.
func (n Net) UnlinkSites(ctx context.Context) error {
	ports, ok, err := n.SitePorts(ctx)
	if err != nil || !ok {
		return err
	}
	ns := n.BridgeNS()
	var errs []error
	for _, p := range ports {
		if err := ip(ctx, "-n", ns, "link", "set", p, "master", Bridge); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 { // a host left on br1 would be cut off by its deletion
		return fmt.Errorf("shared link: move the hosts back: %w", errors.Join(errs...))
	}
	if err := exec.CommandContext(ctx, "ip", "-n", ns, "link", "show", "dev", LinkMain).Run(); err == nil {
		if err := ip(ctx, "-n", ns, "link", "del", LinkMain); err != nil { // its peer goes with it
			errs = append(errs, err)
		}
	}
	if err := ip(ctx, "-n", ns, "link", "del", SiteBridge); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// LinkBytes is the bytes the shared link has carried from the moved site
// (LinkSite's qdisc) and to it (LinkMain's), from tc's statistics.
func (n Net) LinkBytes(ctx context.Context) (fromSite, toSite uint64, err error) {
	read := func(dev string) (uint64, error) {
		out, err := tc(ctx, "-n", n.BridgeNS(), "-s", "qdisc", "show", "dev", dev, "root")
		if err != nil {
			return 0, err
		}
		m := sentRE.FindSubmatch(out)
		if m == nil {
			return 0, fmt.Errorf("qdisc of %s: no Sent line in tc's output: %s", dev, strings.TrimSpace(string(out)))
		}
		return strconv.ParseUint(string(m[1]), 10, 64)
	}
	if fromSite, err = read(LinkSite); err != nil {
		return 0, 0, err
	}
	if toSite, err = read(LinkMain); err != nil {
		return 0, 0, err
	}
	return fromSite, toSite, nil
}
