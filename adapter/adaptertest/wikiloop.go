package adaptertest

import (
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/recorder"
	"github.com/fieldbench/fieldbench/runner/loop"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// idList is a loop.Client asking for ids in order.
type idList struct {
	ids []int64
	n   int
}

func (c *idList) Next() int { c.n++; return wiki.OpRead }
func (c *idList) ID() int64 { return c.ids[c.n-1] }

// WikiLoopReads loads 50 TinyArticles into s, an empty store that
// implements loop.Opener, and reads them through runner/loop on three
// connections, with ten missing ids: every present article must be
// answered and every missing one be an error saying so; then the same
// connections serve a second run, and s still reads as before.
func WikiLoopReads(t testing.TB, s wiki.Store) {
	t.Helper()
	ctx := t.Context()
	lr, ok := s.(loop.Opener)
	if !ok {
		t.Fatalf("%T does not implement loop.Opener", s)
	}
	if _, err := s.Populate(ctx, TinyArticles(50)); err != nil {
		t.Fatal(err)
	}
	conns, err := lr.LoopConns(ctx, 3)
	if err != nil {
		t.Fatalf("LoopConns: %v", err)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	if len(conns) != 3 {
		t.Fatalf("LoopConns(3) opened %d connections", len(conns))
	}
	span := func(from, to int64) []int64 {
		var ids []int64
		for id := from; id <= to; id++ {
			ids = append(ids, id)
		}
		return ids
	}
	for run := range 2 {
		rec := recorder.New(wiki.Ops, time.Now())
		clients := []loop.Client{&idList{ids: span(1, 20)}, &idList{ids: span(21, 40)}, &idList{ids: span(41, 60)}}
		handles := []*recorder.Handle{rec.Handle(), rec.Handle(), rec.Handle()}
		// 20 each; the third client's last ten ids are missing.
		if _, err := loop.Run(ctx, conns, clients, handles, 20, 10*time.Second); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		snap := rec.Tick(time.Now())
		var errs int64
		for kind, n := range snap.Errors[wiki.OpRead] {
			if !strings.Contains(kind, "not found") {
				t.Errorf("run %d: error %q (%d times); want only not found", run, kind, n)
			}
			errs += n
		}
		if got := snap.Hists[wiki.OpRead].TotalCount(); got != 50 || errs != 10 {
			t.Errorf("run %d: %d reads answered and %d failed; want 50 and 10", run, got, errs)
		}
	}
	if a, err := s.Read(ctx, 7); err != nil || a != TinyArticle(7) {
		t.Errorf("Read(7) after the loop: %+v, %v", a, err)
	}
}
