package redis

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter/adaptertest"
	"github.com/fieldbench/fieldbench/runner/loop"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

func openWikiStore(t *testing.T) wiki.Store { return openWikiStoreOn(t, false) }

// openWikiStoreOn is the wiki store of the shared cluster, or of the
// standalone server, emptied.
func openWikiStoreOn(t *testing.T, standalone bool) wiki.Store {
	t.Helper()
	s, err := open(t, standalone).Wiki(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Reset(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Reset(context.Background()); s.Close() })
	return s
}

// TestWikiLoop reads and updates through runner/loop on the standalone server.
func TestWikiLoop(t *testing.T) {
	adaptertest.WikiLoop(t, openWikiStoreOn(t, true))
}

// TestWikiLoopRefusesCluster: with three masters, which one to ask depends
// on the key, so the event loop is refused in words.
func TestWikiLoopRefusesCluster(t *testing.T) {
	_, err := openWikiStore(t).(loop.Opener).LoopConns(t.Context(), 2)
	if err == nil || !strings.Contains(err.Error(), "this cluster has 3 masters") {
		t.Fatalf("LoopConns on the 3-master cluster: %v; want a refusal naming 3 masters", err)
	}
}

// TestWikiStore populates the 3-master cluster with more articles than
// one populate pipeline holds and reads back across the boundary (the
// store's operations proper are checked by adaptertest).
func TestWikiStore(t *testing.T) {
	ctx := t.Context()
	s := openWikiStore(t)
	const n = 1200 // more than one populate pipeline
	g, _ := wiki.NewGenerator(3, n)
	var wantBytes int64
	for id := int64(1); id <= n; id++ {
		wantBytes += int64(g.Size(id))
	}
	want := wiki.Counts{Articles: n, Bytes: wantBytes, MaxID: n}
	if got, err := s.Populate(ctx, g.Source(1, n)); err != nil || got != want {
		t.Fatalf("Populate = %+v, %v; want %+v", got, err, want)
	}
	if c, err := s.Counts(ctx); err != nil || c != want {
		t.Fatalf("Counts = %+v, %v; want %+v", c, err, want)
	}
	for _, id := range []int64{1, 17, 1000, 1001, n} {
		if a, err := s.Read(ctx, id); err != nil || a != g.Article(id) {
			t.Fatalf("Read(%d): %v", id, err)
		}
	}
}

// TestWikiReadFallback checks that a read the direct path cannot complete
// is done by go-redis: a connection that fails (a killed node, a closed
// connection) and an answer from a master that does not own the slot
// (MOVED while slots move). Each case plants such a connection where the
// next read to article id's master will pick it up.
func TestWikiReadFallback(t *testing.T) {
	ctx := t.Context()
	db := open(t, false)
	st, err := db.Wiki(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*wikiStore)
	if err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Reset(context.Background()); s.Close() })
	const n = 50
	g, _ := wiki.NewGenerator(5, n)
	if _, err := s.Populate(ctx, g.Source(1, n)); err != nil {
		t.Fatal(err)
	}
	const id = 7
	ids := []byte(strconv.Itoa(id))
	owner, err := s.rd.addrFor(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	var other string
	for _, a := range redisCluster.Get(t).Nodes {
		if addr := a.Addr(); addr != owner {
			other = addr
			break
		}
	}
	if other == "" {
		t.Fatalf("no master other than %s in %+v", owner, redisCluster.Get(t).Nodes)
	}
	tests := []struct {
		name  string
		plant func(t *testing.T) *respConn
		// reused: the planted connection goes back to the idle list
		// (a whole answer was read) rather than being closed.
		reused bool
	}{
		{"closed connection", func(t *testing.T) *respConn {
			c, err := s.rd.dial(ctx, owner)
			if err != nil {
				t.Fatal(err)
			}
			c.nc.Close()
			return c
		}, false},
		{"MOVED from another master", func(t *testing.T) *respConn {
			c, err := s.rd.dial(ctx, other)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, _, err := c.mget(ctx, ids, time.Second, nil); !errors.Is(err, errRedirect) {
				t.Fatalf("read of article %d from %s (not its master): %v, want a redirection", id, other, err)
			}
			return c
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s.rd.close()
			s.rd = newWikiReader(db)
			c := tc.plant(t)
			s.rd.idle.Put(owner, c)
			a, err := s.Read(ctx, id)
			if err != nil || a != g.Article(id) {
				t.Fatalf("Read(%d) = %q, %v; want the article", id, a.Title, err)
			}
			if got := slices.Contains(s.rd.idle.Kept(owner), c); got != tc.reused {
				t.Fatalf("planted connection back in the idle list: %v, want %v", got, tc.reused)
			}
			// The next read goes the direct way again and finds its article.
			if a, err := s.Read(ctx, id+1); err != nil || a != g.Article(id+1) {
				t.Fatalf("Read(%d) after the fallback = %q, %v", id+1, a.Title, err)
			}
		})
	}
	if _, err := s.Read(ctx, n+1); !errors.Is(err, wiki.ErrNotFound) {
		t.Fatalf("Read(%d) = %v, want ErrNotFound", n+1, err)
	}
	if s.rd.idle.Len() == 0 {
		t.Fatal("no idle direct connection after the reads: they all went through go-redis")
	}
}
