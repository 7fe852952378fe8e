package vnet

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	cases := []struct {
		in   string
		want uint64
		bad  bool
	}{
		{"10mbit", 10_000_000, false},
		{"1mbps", 8_000_000, false},
		{"500kbit", 500_000, false},
		{"1.5gbit", 1_500_000_000, false},
		{"10 mbit", 0, true},
		{"10", 0, true},
		{"1bit", 0, true}, // below 8kbit
	}
	for _, tc := range cases {
		got, err := ParseRate(tc.in)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d (error %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

// TestFaults: on a network of two hosts, a cut stops connections both
// ways and its undo restores them, a limit bounds what one host can send
// to the other (1 MiB at 4 mbit/s takes at least 2 s to arrive; 1.5 s is
// asked, the bucket's burst included), and netem either works or says it
// is not available. Nothing of it reaches the root namespace.
func TestFaults(t *testing.T) {
	needRoot(t)
	for _, tool := range []string{"nft", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: %v", tool, err)
		}
	}
	ctx := context.Background()
	before := rootLinks(t)
	dir := t.TempDir()
	n := ForDir(dir)
	if err := n.Create(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ForDir(dir).Destroy(context.Background()) })
	var hs []Host
	for i, name := range []string{"f1", "f2"} {
		h, err := n.AddHost(ctx, name, NodeAddr(i+1))
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	addr := net.JoinHostPort(hs[0].Addr.String(), "7000")
	l, err := Listen(hs[0].NS, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const size = 1 << 20
	go func() { // every connection gets size bytes
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = c.Write(make([]byte, size))
			}()
		}
	}()
	fetch := func(timeout time.Duration) (time.Duration, error) {
		dctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		t0 := time.Now()
		c, err := Dial(dctx, hs[1].NS, addr)
		if err != nil {
			return 0, err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.ReadFull(c, make([]byte, size)); err != nil {
			return 0, err
		}
		return time.Since(t0), nil
	}
	if _, err := fetch(10 * time.Second); err != nil {
		t.Fatalf("before any fault: %v", err)
	}

	if err := Cut(ctx, hs[0].NS, []netip.Addr{hs[1].Addr}); err != nil {
		t.Fatal(err)
	}
	if _, err := fetch(time.Second); err == nil {
		t.Error("f2 reached f1 through the cut")
	}
	if out, _ := exec.Command("nft", "list", "tables").CombinedOutput(); strings.Contains(string(out), cutTable) {
		t.Errorf("a cut made a table in the root namespace:\n%s", out)
	}
	if err := Uncut(ctx, hs[0].NS); err != nil {
		t.Fatal(err)
	}
	if _, err := fetch(10 * time.Second); err != nil {
		t.Errorf("after the cut's undo: %v", err)
	}

	if err := n.Limit(ctx, "f1", 4_000_000); err != nil {
		t.Fatal(err)
	}
	took, err := fetch(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("1 MiB at 4 mbit/s in %s", took.Round(time.Millisecond))
	if took < 1500*time.Millisecond {
		t.Errorf("1 MiB arrived in %s through a 4 mbit/s limit (at least 2 s)", took)
	}
	if err := n.Unlimit(ctx, "f1"); err != nil {
		t.Fatal(err)
	}
	if out, _ := exec.Command("tc", "-n", hs[0].NS, "qdisc", "show", "dev", HostIf).CombinedOutput(); strings.Contains(string(out), "tbf") {
		t.Errorf("limit left after its undo:\n%s", out)
	}

	switch err := Netem(ctx, hs[0].NS, "delay", "10ms"); {
	case err == nil:
		t.Log("this kernel has netem")
		if err := n.Unlimit(ctx, "f1"); err != nil {
			t.Fatal(err)
		}
	case errors.Is(err, ErrNoNetem):
		t.Logf("no netem here: %v", err)
	default:
		t.Errorf("netem: %v (want success or ErrNoNetem)", err)
	}
	for l := range rootLinks(t) {
		if !before[l] {
			t.Errorf("the faults put interface %s in the root namespace", l)
		}
	}
	if err := ForDir(dir).Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	assertGone(t, ForDir(dir), before)
}
