package job

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/workload/ingest"
	"github.com/fieldbench/fieldbench/workload/trajectory"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

func TestShardOf(t *testing.T) {
	t.Setenv("JOB_COMPLETION_INDEX", "2")
	for _, tc := range []struct {
		spec   string
		shards int
		i, n   int
		ok     bool
	}{
		{"", 0, 0, 1, true},
		{"1/3", 0, 1, 3, true},
		{"", 4, 2, 4, true},  // from JOB_COMPLETION_INDEX
		{"", 2, 0, 0, false}, // index 2 of 2
		{"1/3", 4, 0, 0, false},
		{"3/3", 0, 0, 0, false},
	} {
		sh, err := shardOf(tc.spec, tc.shards)
		if (err == nil) != tc.ok || tc.ok && (sh.i != tc.i || sh.n != tc.n) {
			t.Errorf("shardOf(%q, %d) = %+v, %v", tc.spec, tc.shards, sh, err)
		}
	}
}

// splits are the ways of cutting work the tests try: equal shares of 1 to 9
// shards, and uneven ones (--split), the ingest study's 5 + 3 among them.
func splits(t *testing.T) []([]shard) {
	t.Helper()
	var out [][]shard
	for n := 1; n <= 9; n++ {
		var s []shard
		for i := range n {
			s = append(s, shard{i: i, n: n})
		}
		out = append(out, s)
	}
	for _, w := range []string{"5,3", "1,4", "3,1,1", "1,1,7,1"} {
		n := strings.Count(w, ",") + 1
		var s []shard
		for i := range n {
			sh, err := shard{i: i, n: n}.withSplit(w)
			if err != nil {
				t.Fatal(err)
			}
			s = append(s, sh)
		}
		out = append(out, s)
	}
	return out
}

// Shares of any split add up to the whole, each item exactly once, for
// items (share) and for a load's batches (loadShare).
func TestShareCoversTheWhole(t *testing.T) {
	for _, set := range splits(t) {
		for _, total := range []int64{0, 1, 7, 8, 200, 12345} {
			next, nextLoad := int64(0), int64(0)
			for _, sh := range set {
				lo, hi := sh.share64(total)
				if lo != next || hi < lo {
					t.Fatalf("%+v over %d: [%d, %d) after %d", sh, total, lo, hi, next)
				}
				next = hi
				llo, lhi := sh.loadShare(total, 1000)
				if llo != nextLoad || lhi < llo || llo%1000 != 0 && llo != total {
					t.Fatalf("%+v loading %d: [%d, %d) after %d (not on a batch boundary)", sh, total, llo, lhi, nextLoad)
				}
				nextLoad = lhi
			}
			if next != total || nextLoad != total {
				t.Fatalf("%d shards of %d cover %d (load %d)", len(set), total, next, nextLoad)
			}
		}
	}
	// The ingest study: 8 sources over two machines as 5 + 3.
	a, _ := shard{i: 0, n: 2}.withSplit("5,3")
	b, _ := shard{i: 1, n: 2}.withSplit("5,3")
	if lo, hi := a.share(8); lo != 0 || hi != 5 {
		t.Errorf("--split 5,3 gives shard 0 sources [%d, %d), want [0, 5)", lo, hi)
	}
	if lo, hi := b.share(8); lo != 5 || hi != 8 {
		t.Errorf("--split 5,3 gives shard 1 sources [%d, %d), want [5, 8)", lo, hi)
	}
	for _, bad := range []string{"5", "5,3,1", "5,0", "x,3"} {
		if _, err := (shard{i: 0, n: 2}).withSplit(bad); err == nil {
			t.Errorf("--split %s over 2 shards accepted", bad)
		}
	}
}

// keyStore is an ingest store that keeps every record's id, shared by the
// shards of a test as a database is.
type keyStore struct {
	mu  sync.Mutex
	ids map[string]int
}

func (k *keyStore) InsertBatch(_ context.Context, recs []ingest.Record) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, r := range recs {
		k.ids[r.ID]++
	}
	return nil
}

func (k *keyStore) Count(context.Context) (int64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	var n int64
	for _, c := range k.ids {
		n += int64(c)
	}
	return n, nil
}
func (k *keyStore) Reset(context.Context) error { k.ids = map[string]int{}; return nil }
func (k *keyStore) Close() error                { return nil }

// The shards of an ingest run, all at once against one store, insert
// exactly the records of the unsharded run: the same ids, none twice, and
// each shard's verify waits for the others'.
func TestIngestShardsAreTheWholeRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rc := ingest.RunConfig{Sources: 8, Records: 130, Batch: 25, Seed: 3, Verify: true}
	whole := &keyStore{ids: map[string]int{}}
	recs := make([]ingest.BatchRecorder, 8)
	for i := range recs {
		recs[i] = &nopBatchRecorder{}
	}
	if res := ingest.Run(ctx, whole, rc, recs); res.Err != nil {
		t.Fatal(res.Err)
	}
	for _, set := range splits(t) {
		st := &keyStore{ids: map[string]int{}}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var inserted int64
		for _, sh := range set {
			lo, hi := sh.share(rc.Sources)
			if lo == hi {
				continue // more shards than sources: this one is refused
			}
			src := rc
			if sh.sharded() {
				src.Lo, src.Hi = lo, hi
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				rs := make([]ingest.BatchRecorder, hi-lo)
				for i := range rs {
					rs[i] = &nopBatchRecorder{}
				}
				res := ingest.Run(ctx, st, src, rs)
				if res.Err != nil {
					t.Errorf("%+v: %v", sh, res.Err)
				}
				mu.Lock()
				inserted += res.Inserted
				mu.Unlock()
			}()
		}
		wg.Wait()
		if inserted != 8*130 || len(st.ids) != len(whole.ids) {
			t.Fatalf("%d shards inserted %d records, %d distinct; the whole run %d", len(set), inserted, len(st.ids), len(whole.ids))
		}
		for id, c := range st.ids {
			if c != 1 || whole.ids[id] != 1 {
				t.Fatalf("%d shards: record %s inserted %d times (whole run: %d)", len(set), id, c, whole.ids[id])
			}
		}
	}
}

// The threads of a sharded wiki run draw exactly the requests of the
// unsharded run's threads: thread k's stream whichever shard runs it.
func TestWikiShardsAreTheWholeRun(t *testing.T) {
	t.Parallel()
	p := wiki.Plan{Requests: 600, ReadPct: 80, Threads: 6, Dist: wiki.Uniform, Seed: 7, Articles: 1000}
	draw := func(cs []*wiki.Client) []string {
		var out []string
		for k, c := range cs {
			for range p.PerThread() {
				op := c.Next()
				out = append(out, fmt.Sprintf("%d:%d:%d", k, op, c.ID()))
			}
		}
		return out
	}
	for set := 1; set <= 2; set++ {
		want := draw(p.Clients(nil, set, 1))
		for _, shards := range splits(t) {
			var got []string
			for _, sh := range shards {
				lo, hi := sh.share(p.Threads)
				all := p.Clients(nil, set, 1)
				part := draw(all[lo:hi])
				for _, r := range part { // renumber the thread as the whole run's
					var k, op int
					var id int64
					fmt.Sscanf(r, "%d:%d:%d", &k, &op, &id)
					got = append(got, fmt.Sprintf("%d:%d:%d", k+lo, op, id))
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("set %d, %d shards: the shards' requests differ from the whole run's", set, len(shards))
			}
		}
	}
}

// trajKeys is a trajectory writer keeping each record's identity (user,
// weekday, time): what a store keys a location update by.
type trajKeys struct {
	mu   sync.Mutex
	keys map[[3]int64]int
}

func (w *trajKeys) Write(_ context.Context, recs []trajectory.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range recs {
		w.keys[[3]int64{r.User, int64(r.Weekday), int64(r.Time)}]++
	}
	return nil
}

// The random-mode clients of a sharded trajectory run write every record of
// the dataset once (no two shards write one point) and send exactly the
// unsharded run's queries; a sharded load writes every record once.
func TestTrajectoryShardsAreTheWholeRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g, err := trajectory.New(trajectory.Options{Scale: 0.001, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	const clients, batch = 4, 100
	for _, shards := range splits(t) {
		w := &trajKeys{keys: map[[3]int64]int{}}
		loaded := &trajKeys{keys: map[[3]int64]int{}}
		for _, sh := range shards {
			lo, hi := sh.share(clients)
			wcs, err := trajectory.WriteClients(w, g, trajectory.Random, clients, batch, 5)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range wcs[lo:hi] {
				for range c.Requests() {
					c.Next()
					if _, err := c.Do(ctx, 0); err != nil {
						t.Fatal(err)
					}
				}
			}
			llo, lhi := sh.loadShare(g.Len(), batch)
			cur := g.NewCursor()
			for i := llo; i < lhi; i++ {
				r := cur.At(i)
				loaded.Write(ctx, []trajectory.Record{r})
			}
		}
		for name, keys := range map[string]*trajKeys{"run": w, "load": loaded} {
			var total int64
			for k, c := range keys.keys {
				if c != 1 {
					t.Fatalf("%d shards, %s: point %v written %d times", len(shards), name, k, c)
				}
				total++
			}
			if total != g.Len() {
				t.Fatalf("%d shards, %s: %d distinct points written, the dataset has %d", len(shards), name, total, g.Len())
			}
		}
	}
	// The read phase: the shards' clients send the whole run's queries (a
	// list of every query type, so an order that differs shows).
	var list []trajectory.Query
	for op := trajectory.OpDistance; op <= trajectory.OpRegion; op++ {
		list = append(list, trajectory.MakeQueries(g.City(), op, trajectory.QueryOptions{N: 3, Radius: 500, K: 3, MaxDist: 1000, Seed: 5})...)
	}
	whole, err := trajectory.ReadClients(nil, list, nil, trajectory.Random, clients, 3, 9)
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	for _, c := range whole {
		for range c.Requests() {
			want = append(want, c.Next())
		}
	}
	for _, shards := range splits(t) {
		var got []int
		for _, sh := range shards {
			lo, hi := sh.share(clients)
			rcs, _ := trajectory.ReadClients(nil, list, nil, trajectory.Random, clients, 3, 9)
			for _, c := range rcs[lo:hi] {
				for range c.Requests() {
					got = append(got, c.Next())
				}
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%d shards send other queries than the whole run", len(shards))
		}
	}
}

// The shards meeting in a directory reset once per step, after every shard
// arrived; a shard whose partner never comes gives up at the limit.
func TestDirBarrierResetsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	var mu sync.Mutex
	var resets []string
	arrived := map[string]int{}
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, err := newDirBarrier(dir, "run", shard{i: i, n: 3}, 10*time.Second, nil)
			if err != nil {
				t.Error(err)
				return
			}
			for _, step := range []string{"a", "b"} {
				mu.Lock()
				arrived[step]++
				mu.Unlock()
				err := b.resetOnce(ctx, step, func(context.Context) error {
					mu.Lock()
					defer mu.Unlock()
					if arrived[step] != 3 {
						t.Errorf("step %s reset after %d of 3 shards arrived", step, arrived[step])
					}
					resets = append(resets, step)
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if !slices.Equal(resets, []string{"a", "b"}) {
		t.Errorf("resets %v, want one per step", resets)
	}
	// Alone: shard 0 of 2 waits for shard 1 until the limit.
	b, err := newDirBarrier(t.TempDir(), "run", shard{i: 0, n: 2}, 300*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.resetOnce(ctx, "a", func(context.Context) error { t.Error("reset without shard 1"); return nil }); err == nil {
		t.Error("shard 0 met a shard that never came")
	}
}

// TestShardNeverWaitsInSilence: a shard that waits for another says what
// for and until when, then gives up at its limit with an error naming it;
// one whose wait ends says so.
func TestShardNeverWaitsInSilence(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	err := pollFor(context.Background(), &out, 300*time.Millisecond, 20*time.Millisecond, "shard 0 to load the dataset",
		func(context.Context) (bool, error) { return false, nil })
	if err == nil || !strings.Contains(err.Error(), "shard 0 to load the dataset") {
		t.Fatalf("err = %v, want the wait's limit named", err)
	}
	if !strings.Contains(out.String(), "waiting for shard 0 to load the dataset (at most 300ms, until ") {
		t.Fatalf("notice %q: want what it waits for and until when", out.String())
	}
	out.Reset()
	n := 0
	if err := pollFor(context.Background(), &out, time.Minute, time.Millisecond, "x", func(context.Context) (bool, error) { n++; return n > 2, nil }); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "waiting for x") || !strings.Contains(out.String(), "done waiting for x") {
		t.Fatalf("notice %q: want the wait and its end", out.String())
	}
}

// TestSharedDBRefusesNull: null:// lives in one process, so shards of it
// could never meet: refused at once as bad input, 0/1 allowed.
func TestSharedDBRefusesNull(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sh shard
		db string
		ok bool
	}{
		{shard{i: 1, n: 2}, "null://", false},
		{shard{i: 0, n: 2}, "null://", false},
		{shard{i: 0, n: 1}, "null://", true},
		{shard{i: 1, n: 2}, "", false},
		{shard{i: 1, n: 2}, "redis://127.0.0.1:1", true},
	} {
		err := sharedDB(tc.sh, tc.db)
		if (err == nil) != tc.ok {
			t.Errorf("%d/%d on %q: %v", tc.sh.i, tc.sh.n, tc.db, err)
		}
		if err != nil && !IsUsage(err) {
			t.Errorf("%d/%d on %q: %v is not bad input (exit 2)", tc.sh.i, tc.sh.n, tc.db, err)
		}
	}
}
