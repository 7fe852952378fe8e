// Package vnet builds the virtual network a cluster's "hosts" live on:
// each host is a Linux network namespace of its own holding a loopback
// interface and one virtual Ethernet interface (eth0) with one address
// from 198.18.0.0/15, the block RFC 2544 reserves for benchmarking. The
// other end of every host's veth pair is a port of one bridge (br0) that
// lives in a namespace of fieldbench's own, the network's "switch".
//
//	root namespace      (nothing of the network: no link, route or rule)
//	fbn-ID              br0 ── vredis1 ── vredis2 ── vload1 ...
//	fbn-ID-redis1       lo, eth0 198.18.0.1/15   (peer of vredis1)
//	fbn-ID-redis2       lo, eth0 198.18.0.2/15   (peer of vredis2)
//	fbn-ID-load1        lo, eth0 198.18.1.1/15   (peer of vload1)
//
// Nothing routes, bridges or NATs the network to the machine's own
// interfaces: the veth pairs are created inside the bridge namespace with
// their peers placed straight into the host namespaces, so no interface of
// the network ever exists in the root namespace, and a host has one route
// (198.18.0.0/15 on eth0) and no default route. No packet of a host can
// leave the namespaces fieldbench made. Two clusters' networks are
// separate bridges, so they may use the same addresses.
//
// While a shared link between two sites holds (LinkSites, faults.go), the
// bridge namespace has a second bridge (br1) joined to br0 by one veth
// pair (lnk0 on br0, lnk1 on br1), and the ports of one site's hosts are
// on br1; its undo moves them back and deletes br1 and the pair.
//
// Every name derives from the cluster directory (ID is a hash of its
// absolute path), so Destroy finds everything of a network from the
// directory alone: after a crash, an interrupted start, or with no state
// saved at all. Create also records the directory under RecordDir, so a
// network whose directory was removed by hand is found too (SweepOrphans). Deleting a namespace destroys the interfaces in it, and a
// veth pair dies with either end, so deleting the namespaces is the whole
// cleanup: the shared link's bridge and pair live in the bridge namespace
// and go with it (TestLinkSites checks it).
package vnet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Prefix starts the name of every namespace this package creates.
const Prefix = "fbn-"

// Dir is where `ip netns` keeps the names of namespaces.
const Dir = "/run/netns"

// Bridge is the bridge's name inside the bridge namespace, and HostIf the
// host end of its veth pair inside each host namespace.
const (
	Bridge = "br0"
	HostIf = "eth0"
)

// Block is the address block of every network: RFC 2544's benchmarking
// block, which is never routed on the Internet. Every host's address has
// this prefix length, so every host is on-link to every other.
var Block = netip.MustParsePrefix("198.18.0.0/15")

// NodeAddr is the address of the i-th server host (i from 1):
// 198.18.0.i, then 198.18.2.x past 254 (never 198.18.1.x: load hosts').
func NodeAddr(i int) netip.Addr { return addrAt(0, i) }

// LoadAddr is the address of the i-th load host (i from 1): 198.18.1.i.
func LoadAddr(i int) netip.Addr { return addrAt(1, i) }

func addrAt(third, i int) netip.Addr {
	if i < 1 {
		i = 1
	}
	hi, lo := (i-1)/254, (i-1)%254+1
	if hi > 0 {
		third += 2 * hi
	}
	return netip.AddrFrom4([4]byte{198, 18, byte(third), byte(lo)})
}

// Net is the virtual network of one cluster directory.
type Net struct {
	// ID is Prefix and a hash of the directory: the bridge namespace's
	// name, and the start of every host namespace's.
	ID string
	// Dir is the directory's absolute path (recorded by Create, so that
	// SweepOrphans can tell a network whose directory is gone).
	Dir string
}

// ForDir is the network of the cluster in dir.
func ForDir(dir string) Net {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	sum := sha256.Sum256([]byte(abs))
	return Net{ID: Prefix + hex.EncodeToString(sum[:4]), Dir: abs}
}

// RecordDir holds one file per network Create made, named by its ID and
// holding its directory: what SweepOrphans reads. It is on /run (tmpfs),
// like the namespaces, so both vanish at a reboot.
const RecordDir = "/run/fieldbench-vnet"

// SweepOrphans destroys every network whose cluster directory no longer
// exists (removed by hand while its network lived, or a crash during
// `cluster down --purge`), and returns their IDs. A network whose
// directory exists is never touched, whatever is in it: it may be a
// cluster being started, or a test's.
func SweepOrphans(ctx context.Context) ([]string, error) {
	ents, err := os.ReadDir(RecordDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var swept []string
	var errs []error
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), Prefix) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(RecordDir, e.Name()))
		if err != nil {
			continue
		}
		dir := strings.TrimSpace(string(b))
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		n := Net{ID: e.Name(), Dir: dir}
		if err := n.Destroy(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		swept = append(swept, n.ID)
	}
	return swept, errors.Join(errs...)
}

// BridgeNS is the name of the namespace that holds the bridge.
func (n Net) BridgeNS() string { return n.ID }

// HostNS is the name of host's namespace.
func (n Net) HostNS(host string) string { return n.ID + "-" + host }

// hostName checks a host's name: it names the bridge port "v"+name, and a
// Linux interface name has at most 15 characters.
var hostName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,13}$`)

// Check reports whether this process can build a network: root
// (CAP_SYS_ADMIN and CAP_NET_ADMIN) and the ip command.
func Check() error {
	if os.Geteuid() != 0 {
		return errors.New("hosts on a virtual network are network namespaces, and creating them needs root (run as root, or use the default loopback network)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("ip not found in PATH: install the Debian package iproute2")
	}
	return nil
}

// ip runs one ip command.
func ip(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Exists reports whether the namespace ns exists.
func Exists(ns string) bool {
	_, err := os.Stat(filepath.Join(Dir, ns))
	return err == nil
}

// Create makes the bridge namespace with its loopback and bridge up.
// Whatever an earlier network of the same directory left (a crash) is
// destroyed first.
func (n Net) Create(ctx context.Context) (err error) {
	if err := Check(); err != nil {
		return err
	}
	if err := n.Destroy(ctx); err != nil {
		return err
	}
	ns := n.BridgeNS()
	if n.Dir != "" { // before the first namespace: a crash leaves no unrecorded network
		if err := os.MkdirAll(RecordDir, 0o755); err != nil {
			return fmt.Errorf("record the network: %w", err)
		}
		if err := os.WriteFile(filepath.Join(RecordDir, n.ID), []byte(n.Dir+"\n"), 0o644); err != nil {
			return fmt.Errorf("record the network: %w", err)
		}
	}
	if err := ip(ctx, "netns", "add", ns); err != nil {
		_ = os.Remove(filepath.Join(RecordDir, n.ID))
		return fmt.Errorf("create the bridge namespace: %w", err)
	}
	defer func() {
		if err != nil {
			_ = deleteNS(context.WithoutCancel(ctx), ns)
			_ = os.Remove(filepath.Join(RecordDir, n.ID))
		}
	}()
	for _, args := range [][]string{
		{"-n", ns, "link", "set", "lo", "up"},
		{"-n", ns, "link", "add", Bridge, "type", "bridge"},
		{"-n", ns, "link", "set", Bridge, "up"},
	} {
		if err := ip(ctx, args...); err != nil {
			return fmt.Errorf("bridge namespace %s: %w", ns, err)
		}
	}
	return nil
}

// Host is one host on a network.
type Host struct {
	Name string     `json:"name"`
	NS   string     `json:"netns"`
	Addr netip.Addr `json:"addr"`
}

// AddHost creates host name with address addr: its namespace (loopback
// up), a veth pair made inside the bridge namespace whose bridge end
// ("v"+name) joins the bridge and whose other end moves straight into the
// host's namespace as eth0, with addr/15 and no other route. A host of the
// same name left by a crash is replaced.
func (n Net) AddHost(ctx context.Context, name string, addr netip.Addr) (h Host, err error) {
	if !hostName.MatchString(name) {
		return Host{}, fmt.Errorf("host name %q: want 1 to 14 characters of a-z, 0-9 and '-' (it names a network interface)", name)
	}
	if !Block.Contains(addr) {
		return Host{}, fmt.Errorf("host %s: address %s is not in %s", name, addr, Block)
	}
	if !Exists(n.BridgeNS()) {
		return Host{}, fmt.Errorf("host %s: the network %s does not exist (Create it first)", name, n.ID)
	}
	h = Host{Name: name, NS: n.HostNS(name), Addr: addr}
	if err := n.RemoveHost(ctx, name); err != nil {
		return Host{}, err
	}
	if err := ip(ctx, "netns", "add", h.NS); err != nil {
		return Host{}, fmt.Errorf("create host %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			_ = n.RemoveHost(context.WithoutCancel(ctx), name)
		}
	}()
	br, port := n.BridgeNS(), "v"+name
	for _, args := range [][]string{
		{"-n", h.NS, "link", "set", "lo", "up"},
		{"-n", br, "link", "add", port, "type", "veth", "peer", "name", HostIf, "netns", h.NS},
		{"-n", br, "link", "set", port, "master", Bridge},
		{"-n", br, "link", "set", port, "up"},
		{"-n", h.NS, "addr", "add", netip.PrefixFrom(addr, Block.Bits()).String(), "dev", HostIf},
		{"-n", h.NS, "link", "set", HostIf, "up"},
	} {
		if err := ip(ctx, args...); err != nil {
			return Host{}, fmt.Errorf("host %s: %w", name, err)
		}
	}
	return h, nil
}

// RemoveHost deletes host name's namespace (its eth0 and the bridge port
// go with it). A host that does not exist is no error.
func (n Net) RemoveHost(ctx context.Context, name string) error {
	if err := deleteNS(ctx, n.HostNS(name)); err != nil {
		return err
	}
	// The bridge port normally dies with its peer; a leftover one (the
	// peer's namespace held alive by a process) is removed too.
	if Exists(n.BridgeNS()) {
		_ = ip(ctx, "-n", n.BridgeNS(), "link", "del", "v"+name)
	}
	return nil
}

// Namespaces lists the namespaces of the network that exist: the bridge's
// and every host's, sorted.
func (n Net) Namespaces() ([]string, error) {
	ents, err := os.ReadDir(Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.Name() == n.ID || strings.HasPrefix(e.Name(), n.ID+"-") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// Destroy deletes every namespace of the network, hosts first, found by
// name alone. A network that does not exist is no error. A process still
// running in a host keeps that namespace alive without its name, but with
// the bridge gone it is alone on an unplugged interface.
func (n Net) Destroy(ctx context.Context) error {
	nss, err := n.Namespaces()
	if err != nil {
		return err
	}
	var errs []error
	// The bridge's namespace last: sorted, it is the first.
	for i := len(nss) - 1; i >= 0; i-- {
		if err := deleteNS(ctx, nss[i]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		if err := os.Remove(filepath.Join(RecordDir, n.ID)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func deleteNS(ctx context.Context, ns string) error {
	if !Exists(ns) {
		return nil
	}
	if err := ip(ctx, "netns", "delete", ns); err != nil {
		return fmt.Errorf("delete namespace %s: %w", ns, err)
	}
	return nil
}

// Counters are an interface's totals since it was created.
type Counters struct {
	RxBytes   uint64 `json:"rx_bytes"`
	RxPackets uint64 `json:"rx_packets"`
	TxBytes   uint64 `json:"tx_bytes"`
	TxPackets uint64 `json:"tx_packets"`
}

// HostCounters reads the counters of eth0 in namespace ns (`ip -s -j link`):
// what the host received from and sent to the network.
func HostCounters(ctx context.Context, ns string) (Counters, error) {
	out, err := exec.CommandContext(ctx, "ip", "-n", ns, "-s", "-j", "link", "show", "dev", HostIf).Output()
	if err != nil {
		return Counters{}, fmt.Errorf("counters of %s in %s: %w", HostIf, ns, err)
	}
	return parseCounters(out)
}

func parseCounters(b []byte) (Counters, error) {
	var links []struct {
		Stats struct {
			Rx struct{ Bytes, Packets uint64 } `json:"rx"`
			Tx struct{ Bytes, Packets uint64 } `json:"tx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal(b, &links); err != nil {
		return Counters{}, fmt.Errorf("read ip -s -j link: %w", err)
	}
	if len(links) != 1 {
		return Counters{}, fmt.Errorf("ip -s -j link: %d interfaces, want 1", len(links))
	}
	s := links[0].Stats
	return Counters{RxBytes: s.Rx.Bytes, RxPackets: s.Rx.Packets, TxBytes: s.Tx.Bytes, TxPackets: s.Tx.Packets}, nil
}

// Command is argv that runs argv inside namespace ns (`ip netns exec`).
func Command(ns string, argv ...string) []string {
	return append([]string{"ip", "netns", "exec", ns}, argv...)
}

// Dial opens a TCP connection to addr from inside namespace ns: the
// socket is created by an OS thread switched into the namespace (setns),
// which then switches back; the connection stays in the namespace. A
// thread that cannot switch back is never reused (it stays locked and
// ends with its goroutine).
func Dial(ctx context.Context, ns, addr string) (net.Conn, error) {
	var c net.Conn
	err := in(ns, func() error {
		var err error
		c, err = (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, "tcp", addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("dial %s in %s: %w", addr, ns, err)
	}
	return c, nil
}

// Listen opens a TCP listener on addr inside namespace ns.
func Listen(ns, addr string) (net.Listener, error) {
	var l net.Listener
	err := in(ns, func() error {
		var err error
		l, err = net.Listen("tcp", addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listen on %s in %s: %w", addr, ns, err)
	}
	return l, nil
}

// in runs f on an OS thread switched into namespace ns.
func in(ns string, f func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		restored, err := inLocked(ns, f)
		if restored {
			runtime.UnlockOSThread()
		}
		ch <- err
	}()
	return <-ch
}

func inLocked(ns string, f func() error) (bool, error) {
	self, err := os.Open(fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid()))
	if err != nil {
		return true, err
	}
	defer self.Close()
	target, err := os.Open(filepath.Join(Dir, ns))
	if err != nil {
		return true, err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return true, fmt.Errorf("enter network namespace %s: %w", ns, err)
	}
	ferr := f()
	// A thread that could not switch back is not returned to the
	// scheduler.
	restored := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil
	return restored, ferr
}
