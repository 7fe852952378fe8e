package vnet

import (
	"context"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSharedLinkRate (FIELDBENCH_LONG_TESTS=1, about 20 s) measures what
// the two ways of limiting two sites let through: hosts ra1 and ra2 (site
// A) each send to rb1 (site B) as fast as they can for 6 s at once,
// first through LimitBetween's per-host shaping at 10 mbit/s, then
// through LinkSites' shared link at 10 mbit/s. It logs the total of both
// senders; its one verdict is that the shared link's total stays under
// 1.5 times the rate (a slow machine can only lower it). The figures in
// docs/network.md come from it.
func TestSharedLinkRate(t *testing.T) {
	if os.Getenv("FIELDBENCH_LONG_TESTS") != "1" {
		t.Skip("long test: about 20 s of transfers at full speed that load both cores, for a figure (docs/network.md) rather than a verdict; TestLinkSites checks the shared link in CI; set FIELDBENCH_LONG_TESTS=1 to run it (scripts/long-tests.sh runs them all)")
	}
	needRoot(t)
	ctx := context.Background()
	before := rootLinks(t)
	dir, n, hs := newTestNet(ctx, t, "ra1", "ra2", "rb1")
	const rate = 10_000_000
	// rb1 counts what every connection sends it.
	var got atomic.Int64
	l, err := Listen(hs[2].NS, net.JoinHostPort(hs[2].Addr.String(), "7001"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	serveEach(l, func(c net.Conn) {
		buf := make([]byte, 64<<10)
		for {
			k, err := c.Read(buf)
			got.Add(int64(k))
			if err != nil {
				return
			}
		}
	})
	// measure has ra1 and ra2 send for d at once and returns rb1's
	// bits per second over the last d-1s (the first second fills the
	// buckets and queues).
	measure := func(d time.Duration) float64 {
		t.Helper()
		var wg sync.WaitGroup
		stop := time.Now().Add(d)
		for _, h := range hs[:2] {
			c, err := Dial(ctx, h.NS, l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_ = c.SetWriteDeadline(stop)
				_, _ = io.Copy(c, zeros{})
			}()
		}
		time.Sleep(time.Second)
		g0, t0 := got.Load(), time.Now()
		time.Sleep(time.Until(stop))
		g1, t1 := got.Load(), time.Now()
		wg.Wait()
		return float64(g1-g0) * 8 / t1.Sub(t0).Seconds()
	}
	if err := n.LimitBetween(ctx, hs[:2], hs[2:], rate); err != nil {
		t.Fatal(err)
	}
	perHost := measure(6 * time.Second)
	for _, h := range hs {
		if err := n.Unlimit(ctx, h.Name); err != nil {
			t.Fatal(err)
		}
	}
	if err := n.LinkSites(ctx, []string{"ra1", "ra2"}, rate); err != nil {
		t.Fatal(err)
	}
	shared := measure(6 * time.Second)
	t.Logf("two senders of site A to site B at 10 mbit/s: per-host shaping %.2f Mbit/s in total, shared link %.2f Mbit/s in total", perHost/1e6, shared/1e6)
	if shared > 1.5*rate {
		t.Errorf("through a shared link of 10 mbit/s, two senders got %.2f Mbit/s together", shared/1e6)
	}
	if err := ForDir(dir).Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	assertGone(t, ForDir(dir), before)
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
