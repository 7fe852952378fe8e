package adaptertest

import (
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/recorder"
	"github.com/fieldbench/fieldbench/runner/loop"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// idList is a loop.Client asking for ids in order: reads, or ops[i] for
// the i-th id when ops is set.
type idList struct {
	ids     []int64
	ops     []int
	n       int
	updated int // updates acknowledged
}

func (c *idList) Next() int {
	c.n++
	if c.ops == nil {
		return wiki.OpRead
	}
	return c.ops[c.n-1]
}
func (c *idList) ID() int64 { return c.ids[c.n-1] }
func (c *idList) Acknowledged(op int) {
	if op == wiki.OpUpdate {
		c.updated++
	}
}

// WikiLoop loads 50 TinyArticles into s, an empty store that implements
// loop.Opener, and reads them through runner/loop on three connections,
// with ten missing ids: every present article must be answered and every
// missing one be an error saying so; then the same connections serve a
// second run of reads, and a third of reads and updates (an update reads
// the article and writes it back with one byte appended, as
// wiki.Client.Do does), and s reads every article as they left it.
func WikiLoop(t testing.TB, s wiki.Store) {
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
	wikiLoopUpdates(t, s, conns, span)
}

// wikiLoopUpdates runs reads and updates through conns: ids 1-10 updated
// twice, 11-20 read then updated once, 41-50 read and the missing 51-60
// updated (not found).
func wikiLoopUpdates(t testing.TB, s wiki.Store, conns []loop.Conn, span func(from, to int64) []int64) {
	t.Helper()
	ctx := t.Context()
	ops := func(pattern ...int) []int {
		var o []int
		for _, op := range pattern {
			for range 10 {
				o = append(o, op)
			}
		}
		return o
	}
	rd, up := wiki.OpRead, wiki.OpUpdate
	clients := []*idList{
		{ids: append(span(1, 10), span(1, 10)...), ops: ops(up, up)},
		{ids: append(span(11, 20), span(11, 20)...), ops: ops(rd, up)},
		{ids: append(span(41, 50), span(51, 60)...), ops: ops(rd, up)},
	}
	rec := recorder.New(wiki.Ops, time.Now())
	lcs := make([]loop.Client, len(clients))
	handles := make([]*recorder.Handle, len(clients))
	for i, c := range clients {
		lcs[i], handles[i] = c, rec.Handle()
	}
	if _, err := loop.Run(ctx, conns, lcs, handles, 20, 10*time.Second); err != nil {
		t.Fatalf("reads and updates: %v", err)
	}
	snap := rec.Tick(time.Now())
	var errs int64
	for kind, n := range snap.Errors[wiki.OpUpdate] {
		if !strings.Contains(kind, "not found") {
			t.Errorf("update error %q (%d times); want only not found", kind, n)
		}
		errs += n
	}
	reads, updates := snap.Hists[wiki.OpRead].TotalCount(), snap.Hists[wiki.OpUpdate].TotalCount()
	if reads != 20 || updates != 30 || errs != 10 || len(snap.Errors[wiki.OpRead]) != 0 {
		t.Errorf("%d reads and %d updates answered, %d updates and %d reads failed; want 20, 30, 10 and 0",
			reads, updates, errs, len(snap.Errors[wiki.OpRead]))
	}
	if acked := clients[0].updated + clients[1].updated + clients[2].updated; acked != 30 {
		t.Errorf("%d updates acknowledged; want 30", acked)
	}
	for id := int64(1); id <= 50; id++ {
		want := TinyArticle(id)
		switch {
		case id <= 10:
			want.Body += "11"
		case id <= 20:
			want.Body += "1"
		}
		if a, err := s.Read(ctx, id); err != nil || a != want {
			t.Errorf("Read(%d) after the updates: %+v, %v; want %+v", id, a, err, want)
		}
	}
}
