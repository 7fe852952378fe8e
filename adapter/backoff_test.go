package adapter_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
)

// The doubling delay, its cap and its reset, on a closed loopback port (a
// real "connection refused"). Verdicts are counts, not timings.
func TestBackoffSpacesRefusedDials(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	b := &adapter.Backoff{Min: time.Millisecond, Max: 50 * time.Millisecond}
	dial := b.DialFunc(nil)
	ctx := context.Background()
	for range 8 {
		if _, err := dial(ctx, "tcp", addr); err == nil {
			t.Fatal("dial to a closed port succeeded")
		}
	}
	st := b.Stats()
	if st.Dials != 8 || st.Failed != 8 || st.Waited <= 0 {
		t.Errorf("stats %+v: want 8 dials, 8 failed, some waiting", st)
	}
	// A caller whose context ends while waiting gets the context's error
	// and does not dial.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := dial(cctx, "tcp", addr); !errors.Is(err, context.Canceled) {
		t.Errorf("dial with a cancelled context while backing off: %v", err)
	}
	if b.Stats().Dials != 8 {
		t.Errorf("a cancelled wait dialled")
	}
	// A server again: the next dial (after at most Max) succeeds and resets.
	l2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s taken meanwhile: %v", addr, err)
	}
	defer l2.Close()
	c, err := dial(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("dial after the server came back: %v", err)
	}
	c.Close()
	before := b.Stats().Waited
	c, err = dial(ctx, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if b.Stats().Waited != before {
		t.Error("a dial after a success waited: the backoff was not reset")
	}
}

// One Backoff per address: refusals from a dead server do not space the
// dials to a live one, and the counts of both are summed.
func TestBackoffsPerAddress(t *testing.T) {
	t.Parallel()
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	live, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	go func() {
		for {
			c, err := live.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	var bs adapter.Backoffs
	ctx := context.Background()
	for range 3 {
		if _, err := bs.DialContext(ctx, "tcp", deadAddr); err == nil {
			t.Fatal("dial to a closed port succeeded")
		}
	}
	for range 3 {
		c, err := bs.DialContext(ctx, "tcp", live.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	if w := bs.For(live.Addr().String()).Stats().Waited; w != 0 {
		t.Errorf("dials to the live server waited %v", w)
	}
	if st := bs.Reconnects(); st.Dials != 6 || st.Failed != 3 {
		t.Errorf("stats %+v: want 6 dials, 3 failed", st)
	}
}

// A DB is down when the last dial to every one of its servers failed, not
// when one node of a serving cluster is dead (its live nodes' operations
// must not be bounded as an outage's).
func TestSumStatsDown(t *testing.T) {
	t.Parallel()
	refused := errors.New("connection refused")
	for _, c := range []struct {
		name string
		last []error // the last dial's outcome per server
		want bool
	}{
		{"no server", nil, false},
		{"one server up", []error{nil}, false},
		{"one server down", []error{refused}, true},
		{"one of three down", []error{nil, refused, nil}, false},
		{"all three down", []error{refused, refused, refused}, true},
	} {
		var bs []*adapter.Backoff
		for _, err := range c.last {
			b := adapter.NewBackoff()
			b.Done(err)
			bs = append(bs, b)
		}
		if got := adapter.SumStats(bs).Down; got != c.want {
			t.Errorf("%s: Down %v, want %v", c.name, got, c.want)
		}
	}
	b := adapter.NewBackoff()
	b.Done(refused)
	b.Done(nil)
	if b.Stats().Down {
		t.Error("a server dialled again after a failure is still down")
	}
}

// A dial that fails after a later-started one succeeded (a slow dial into
// a partition that has since healed) is counted but does not mark the
// server down; a failure that starts after the success does. Verdicts are
// orderings the test makes, not timings.
func TestBackoffStaleFailure(t *testing.T) {
	t.Parallel()
	b := adapter.NewBackoff()
	started, release := make(chan struct{}), make(chan struct{})
	timedOut := errors.New("i/o timeout")
	slow := b.DialFunc(func(context.Context, string, string) (net.Conn, error) {
		close(started)
		<-release
		return nil, timedOut
	})
	fast := b.DialFunc(func(context.Context, string, string) (net.Conn, error) {
		c, _ := net.Pipe()
		return c, nil
	})
	failing := b.DialFunc(func(context.Context, string, string) (net.Conn, error) { return nil, timedOut })
	done := make(chan error)
	go func() {
		_, err := slow(t.Context(), "tcp", "198.18.0.1:1")
		done <- err
	}()
	<-started
	c, err := fast(t.Context(), "tcp", "198.18.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	close(release)
	if err := <-done; !errors.Is(err, timedOut) {
		t.Fatalf("slow dial: %v", err)
	}
	if st := b.Stats(); st.Down || st.Failed != 1 || st.Dials != 2 {
		t.Errorf("after a stale failure: %+v, want not down, 1 of 2 dials failed", st)
	}
	if _, err := failing(t.Context(), "tcp", "198.18.0.1:1"); !errors.Is(err, timedOut) {
		t.Fatalf("failing dial: %v", err)
	}
	if !b.Stats().Down {
		t.Error("a failure started after the last success does not mark the server down")
	}
}
