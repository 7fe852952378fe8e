package vnet

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"regexp"
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

// Unlimit removes the limit of host's link (its root qdiscs), if any.
func (n Net) Unlimit(ctx context.Context, host string) error {
	var errs []error
	for _, p := range [][2]string{{n.HostNS(host), HostIf}, {n.BridgeNS(), "v" + host}} {
		out, err := tc(ctx, "-n", p[0], "qdisc", "show", "dev", p[1], "root")
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !strings.Contains(string(out), "qdisc tbf") && !strings.Contains(string(out), "qdisc netem") {
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
