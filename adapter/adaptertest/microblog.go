package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

func init() {
	registerFamily(microblog.Name, func(t *testing.T, open func(t *testing.T) adapter.DB) {
		for _, m := range microblog.Models {
			t.Run(string(m), func(t *testing.T) { checkMicroblog(t, open(t), m) })
			t.Run(string(m)+"-tiny", func(t *testing.T) { checkMicroblogTiny(t, open(t), m) })
			t.Run(string(m)+"-parts", func(t *testing.T) { checkMicroblogParts(t, open(t), m) })
		}
	})
}

// Microblog check sizes: about 80 users give some 700 tweets and users with
// more than Limit tweets in their timelines, so truncation is exercised.
const (
	microblogUsers   = 80
	microblogSeed    = 7
	microblogPosts   = 150
	microblogWriters = 8
	// microblogTiedPosts are posted one by one, in descending id order, in
	// groups of three sharing author and microsecond, before the concurrent
	// posts: a store that orders ties by insertion instead of by id fails.
	microblogTiedPosts = 12
	// maxMaterializePasses bounds catching up, so a materializer that never
	// reports "caught up" fails instead of looping.
	maxMaterializePasses = 10_000
)

// openModel opens model m of db, a fresh database, for a check: it skips
// the check when the adapter reports the model unsupported (not every
// database fits every model) and closes the store when the check ends.
func openModel(t testing.TB, db adapter.DB, m microblog.Model) (microblog.Backend, microblog.Store) {
	t.Helper()
	b, ok := db.(microblog.Backend)
	if !ok {
		t.Fatalf("%T does not implement microblog.Backend", db)
	}
	s, err := b.Microblog(checkContext(t), m)
	if errors.Is(err, adapter.ErrUnsupported) {
		t.Skipf("model %s not supported: %v", m, err)
	}
	if err != nil {
		t.Fatalf("Microblog(%s) on a fresh database: %v", m, err)
	}
	closeOnCleanup(t, "microblog", s)
	return b, s
}

// checkMicroblog loads a generated dataset into model m of db, compares
// every user's userline and timeline with microblog.Oracle, posts
// concurrently (with tied times) and compares again.
func checkMicroblog(t testing.TB, db adapter.DB, m microblog.Model) {
	ctx := checkContext(t)
	b, s := openModel(t, db, m)
	mat, isMat := s.(microblog.Materializer)
	if m == microblog.Async && !isMat {
		t.Fatalf("the async store %T does not implement microblog.Materializer", s)
	}
	if m != microblog.Async && isMat {
		t.Errorf("the %s store %T implements microblog.Materializer: only async may", m, s)
	}

	// A fresh database is empty.
	if c, err := s.Counts(ctx); err != nil || c != (microblog.Counts{}) {
		t.Fatalf("Counts of a fresh database = %+v, %v; want all zero", c, err)
	}
	if id, err := s.MaxTweetID(ctx); err != nil || id != 0 {
		t.Fatalf("MaxTweetID of a fresh database = %d, %v; want 0", id, err)
	}
	if got, err := b.MicroblogModel(ctx); err != nil || got != "" {
		t.Errorf("MicroblogModel of a fresh database = %q, %v; want \"\"", got, err)
	}

	ds, err := microblog.Generate(microblog.GenOptions{Users: microblogUsers, Seed: microblogSeed})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	start := time.Now()
	if err := s.Populate(ctx, ds); err != nil {
		t.Fatalf("Populate: %v", err)
	}
	t.Logf("populate %d users, %d follows, %d tweets: %v", ds.Users, len(ds.Follows), len(ds.Tweets), time.Since(start).Round(time.Millisecond))
	// A loaded database refuses a second load (the checks below see that
	// the refused one changed nothing).
	if err := s.Populate(ctx, ds); err == nil {
		t.Errorf("second Populate on a loaded database succeeded")
	}
	if got, err := b.MicroblogModel(ctx); err != nil || got != m {
		t.Errorf("MicroblogModel after Populate = %q, %v; want %q", got, err, m)
	}
	want := microblog.Counts{Users: int64(ds.Users), Follows: int64(len(ds.Follows)), Tweets: int64(len(ds.Tweets))}
	if c, err := s.Counts(ctx); err != nil || c != want {
		t.Errorf("Counts after Populate = %+v, %v; want %+v", c, err, want)
	}
	var maxID int64
	for _, tw := range ds.Tweets {
		maxID = max(maxID, tw.ID)
	}
	if id, err := s.MaxTweetID(ctx); err != nil || id != maxID {
		t.Fatalf("MaxTweetID after Populate = %d, %v; want %d", id, err, maxID)
	}
	if isMat {
		// Populate materializes what it loads: nothing is pending.
		if done, err := mat.MaterializeOnce(ctx); err != nil || len(done) != 0 {
			t.Fatalf("MaterializeOnce after Populate = %d tweets, %v; want nothing pending", len(done), err)
		}
	}
	o := microblog.NewOracle(ds)
	CompareMicroblog(t, s, o, ds.Users, "after Populate", microblog.Limit, 1)

	// Posts above MaxTweetID, all newer than the dataset, with ids as a
	// run makes them (microblog.TweetIDs: 63 bits, consecutive here): a
	// store that keeps an id as a double (a JSON number read by
	// JavaScript, say) loses its low bits and reads back other ids.
	firstID := microblog.NewTweetIDs(microblog.MaxIDSource).Next()
	r := rand.New(rand.NewPCG(microblogSeed, 1))
	base := time.Now().UTC().Truncate(time.Microsecond)
	tweets := make([]microblog.Tweet, microblogPosts)
	for i := range tweets {
		tweets[i] = microblog.Tweet{
			ID:     firstID + int64(i),
			Author: 1 + r.Int64N(int64(ds.Users)),
			// Three tweets share each microsecond; ids break the tie.
			Time: base.Add(time.Duration(i/3) * time.Microsecond),
			// A separator character some stores encode.
			Body: microblog.RandomBody(r) + "|pipe",
		}
		if i < microblogTiedPosts && i%3 != 0 {
			tweets[i].Author = tweets[i-i%3].Author // same author, same time
		}
	}
	var (
		mu           sync.Mutex
		errs         []error
		materialized []microblog.Materialized
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	for i := microblogTiedPosts - 1; i >= 0; i-- {
		if err := s.Post(ctx, tweets[i]); err != nil {
			t.Fatalf("Post(%d): %v", tweets[i].ID, err)
		}
	}
	var wg sync.WaitGroup
	for w := range microblogWriters {
		wg.Go(func() {
			for i := microblogTiedPosts + w; i < len(tweets); i += microblogWriters {
				if err := s.Post(ctx, tweets[i]); err != nil {
					fail(fmt.Errorf("Post(%d): %w", tweets[i].ID, err))
				}
			}
		})
	}
	// Readers run alongside the writers: only their errors are checked.
	for c := range 2 {
		wg.Go(func() {
			for i := range 40 {
				u := int64(1 + (c*40+i)%ds.Users)
				if _, err := s.Timeline(ctx, u, microblog.Limit); err != nil {
					fail(fmt.Errorf("Timeline(%d) during posts: %w", u, err))
				}
				if _, err := s.Userline(ctx, u, microblog.Limit); err != nil {
					fail(fmt.Errorf("Userline(%d) during posts: %w", u, err))
				}
			}
		})
	}
	if isMat {
		// So does the materializer.
		wg.Go(func() {
			for range 10 {
				done, err := mat.MaterializeOnce(ctx)
				if err != nil {
					fail(fmt.Errorf("MaterializeOnce during posts: %w", err))
					return
				}
				mu.Lock()
				materialized = append(materialized, done...)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
	for _, tw := range tweets {
		o.Post(tw)
	}
	if isMat {
		catchUp(t, mat, func(done []microblog.Materialized) { materialized = append(materialized, done...) })
		checkMaterialized(t, tweets, materialized)
	}
	CompareMicroblog(t, s, o, ds.Users, "after concurrent posts", microblog.Limit, 1)
	if id, err := s.MaxTweetID(ctx); err != nil || id != firstID+microblogPosts-1 {
		t.Errorf("MaxTweetID after posts = %d, %v; want %d", id, err, firstID+microblogPosts-1)
	}
	want.Tweets += microblogPosts
	if c, err := s.Counts(ctx); err != nil || c != want {
		t.Errorf("Counts after posts = %+v, %v; want %+v", c, err, want)
	}
	// A duplicate tweet id is an error, not a silent overwrite.
	if err := s.Post(ctx, tweets[0]); err == nil {
		t.Errorf("Post of an existing tweet id (%d) succeeded", tweets[0].ID)
	}
}

// TinyMicroblog is a hand-built dataset: ties of one microsecond across
// authors and within one, a user who follows nobody and never tweets, one
// who follows only a user who tweeted once. It is exported for adapters'
// own tests that need a small loaded database, so they do not keep copies.
func TinyMicroblog() *microblog.Dataset {
	at := func(us int64) time.Time { return time.UnixMicro(1_700_000_000_000_000 + us).UTC() }
	ds := &microblog.Dataset{
		Users: 5,
		Follows: []microblog.Follow{
			{Follower: 1, Followee: 2}, {Follower: 1, Followee: 3}, {Follower: 2, Followee: 3},
			{Follower: 4, Followee: 1}, {Follower: 3, Followee: 2},
		},
	}
	times := []int64{10, 10, 10, 20, 20, 5, 30, 30, 30, 30}
	authors := []int64{2, 3, 2, 3, 3, 1, 2, 3, 1, 2}
	for i := range times {
		ds.Tweets = append(ds.Tweets, microblog.Tweet{
			ID: int64(i + 1), Author: authors[i], Time: at(times[i]), Body: fmt.Sprintf("tweet %d", i+1),
		})
	}
	ds.Index()
	return ds
}

// checkMicroblogTiny loads TinyMicroblog into model m of db and compares
// every user's userline and timeline at limits 0 to 3 and Limit.
func checkMicroblogTiny(t testing.TB, db adapter.DB, m microblog.Model) {
	ctx := checkContext(t)
	_, s := openModel(t, db, m)
	ds := TinyMicroblog()
	if err := s.Populate(ctx, ds); err != nil {
		t.Fatalf("Populate: %v", err)
	}
	CompareMicroblog(t, s, microblog.NewOracle(ds), ds.Users, "after Populate", microblog.Limit, 0, 1, 2, 3)
	if err := s.Post(ctx, ds.Tweets[0]); err == nil {
		t.Errorf("Post of an existing tweet id succeeded")
	}
}

// boundedMaterializer fails once it has made its passes, so CatchUp cannot
// loop forever on a materializer that always reports work; it hands each
// pass's tweets to seen.
type boundedMaterializer struct {
	m      microblog.Materializer
	passes int
	seen   func([]microblog.Materialized)
}

func (b *boundedMaterializer) MaterializeOnce(ctx context.Context) ([]microblog.Materialized, error) {
	if b.passes <= 0 {
		return nil, fmt.Errorf("still not caught up after %d passes", maxMaterializePasses)
	}
	b.passes--
	done, err := b.m.MaterializeOnce(ctx)
	if err == nil && b.seen != nil {
		b.seen(done)
	}
	return done, err
}

// catchUp runs materializer passes (through microblog.CatchUp, as a run's
// end does) until nothing is pending.
func catchUp(t testing.TB, m microblog.Materializer, seen func([]microblog.Materialized)) {
	t.Helper()
	b := &boundedMaterializer{m: m, passes: maxMaterializePasses, seen: seen}
	if err := microblog.CatchUp(checkContext(t), b, nil); err != nil {
		t.Fatalf("CatchUp: %v", err)
	}
}

// checkMaterialized checks that the materializer reported every posted
// tweet, with its post time, and nothing else.
func checkMaterialized(t testing.TB, posted []microblog.Tweet, done []microblog.Materialized) {
	t.Helper()
	at := map[int64]int64{}
	for _, tw := range posted {
		at[tw.ID] = tw.Time.UnixMicro()
	}
	seen := map[int64]bool{}
	bad := &mismatches{t: t}
	for _, d := range done {
		want, ok := at[d.TweetID]
		switch {
		case !ok:
			bad.add("materializer reported tweet %d, which was not posted since it caught up", d.TweetID)
		case d.PostedAt.UnixMicro() != want:
			bad.add("materializer reported tweet %d posted at %d µs, want %d", d.TweetID, d.PostedAt.UnixMicro(), want)
		}
		seen[d.TweetID] = true
	}
	for _, tw := range posted {
		if !seen[tw.ID] {
			bad.add("materializer never reported posted tweet %d", tw.ID)
		}
	}
}

// CompareMicroblog checks every user's userline and timeline against the
// oracle: at each of limits for all users, and at limits 0, 2 and 3 too for
// some. when says at which point of the test, for the messages. It is
// exported for adapters' own tests (replicas, clusters) that compare with
// the oracle where the suite cannot reach.
func CompareMicroblog(t testing.TB, s microblog.Store, o *microblog.Oracle, users int, when string, limits ...int) {
	t.Helper()
	ctx := checkContext(t)
	bad := &mismatches{t: t}
	for u := int64(1); u <= int64(users); u++ {
		limits := limits
		if u%10 == 1 {
			limits = append(slices.Clip(limits), 0, 2, 3)
		}
		for _, limit := range limits {
			ul, err := s.Userline(ctx, u, limit)
			if err != nil {
				t.Fatalf("Userline(%d, %d) %s: %v", u, limit, when, err)
			}
			if err := sameTweets(ul, o.Userline(u, limit)); err != nil {
				bad.add("Userline(%d, %d) %s: %v", u, limit, when, err)
			}
			tl, err := s.Timeline(ctx, u, limit)
			if err != nil {
				t.Fatalf("Timeline(%d, %d) %s: %v", u, limit, when, err)
			}
			if err := sameTweets(tl, o.Timeline(u, limit)); err != nil {
				bad.add("Timeline(%d, %d) %s: %v", u, limit, when, err)
			}
		}
	}
}

// sameTweets compares what a store returned with the oracle's answer, field
// by field, time at microsecond precision.
func sameTweets(got, want []microblog.Tweet) error {
	for i := range min(len(got), len(want)) {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Author != w.Author || g.Time.UnixMicro() != w.Time.UnixMicro() || g.Body != w.Body {
			return fmt.Errorf("tweet %d of %d: got {id %d author %d time %d body %q}, want {id %d author %d time %d body %q}",
				i, len(want), g.ID, g.Author, g.Time.UnixMicro(), g.Body, w.ID, w.Author, w.Time.UnixMicro(), w.Body)
		}
	}
	if len(got) != len(want) {
		return fmt.Errorf("got %d tweets, want %d", len(got), len(want))
	}
	for i, g := range got {
		if g.Time.Location() != time.UTC {
			return fmt.Errorf("tweet %d: time %v is not UTC", i, g.Time)
		}
	}
	return nil
}

// microblogParts is how many parts checkMicroblogParts loads at once.
const microblogParts = 3

// checkMicroblogParts loads a generated dataset as microblogParts parts at
// the same time (as shards on several machines would), the last part only
// once the others are in: before it the dataset does not read as whole,
// after it the database reads exactly as after Populate (model, counts,
// every userline and timeline against the oracle). A part loaded again is
// refused with ErrPartLoaded; a whole Populate is refused. Adapters that
// load the dataset whole only are skipped.
func checkMicroblogParts(t testing.TB, db adapter.DB, m microblog.Model) {
	ctx := checkContext(t)
	pl, ok := db.(microblog.PartLoader)
	if !ok {
		t.Skipf("%T loads the microblog dataset whole (no microblog.PartLoader)", db)
	}
	ds, err := microblog.Generate(microblog.GenOptions{Users: microblogUsers, Seed: microblogSeed})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	parts := make([]microblog.Part, microblogParts)
	for i := range parts {
		parts[i] = microblog.Part{I: i, N: microblogParts,
			First: int64(i*ds.Users/microblogParts) + 1, Last: int64((i + 1) * ds.Users / microblogParts)}
	}
	errs := make([]error, microblogParts-1)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = pl.PopulatePart(ctx, m, ds, parts[i]) })
	}
	wg.Wait()
	for i, err := range errs {
		if errors.Is(err, adapter.ErrUnsupported) {
			t.Skipf("model %s not supported: %v", m, err)
		}
		if err != nil {
			t.Fatalf("PopulatePart(%s): %v", parts[i], err)
		}
	}
	b := db.(microblog.Backend)
	whole := microblog.Counts{Users: int64(ds.Users), Follows: int64(len(ds.Follows)), Tweets: int64(len(ds.Tweets))}
	if have, err := b.MicroblogModel(ctx); err == nil && have == m {
		s := OpenMicroblog(t, b, m)
		if c, err := s.Counts(ctx); err == nil && c == whole {
			t.Errorf("with %d of %d parts loaded, Counts already reads the whole dataset: %+v", microblogParts-1, microblogParts, c)
		}
	}
	if err := pl.PopulatePart(ctx, m, ds, parts[0]); !errors.Is(err, microblog.ErrPartLoaded) {
		t.Errorf("PopulatePart(%s) a second time = %v, want ErrPartLoaded", parts[0], err)
	}
	last := parts[microblogParts-1]
	if err := pl.PopulatePart(ctx, m, ds, last); err != nil {
		t.Fatalf("PopulatePart(%s): %v", last, err)
	}
	if have, err := b.MicroblogModel(ctx); err != nil || have != m {
		t.Fatalf("MicroblogModel after every part = %q, %v; want %q", have, err, m)
	}
	s := OpenMicroblog(t, b, m)
	if c, err := s.Counts(ctx); err != nil || c != whole {
		t.Errorf("Counts after every part = %+v, %v; want %+v", c, err, whole)
	}
	if err := s.Populate(ctx, ds); err == nil {
		t.Errorf("Populate after every part succeeded; want it refused")
	}
	if err := pl.PopulatePart(ctx, m, ds, last); !errors.Is(err, microblog.ErrPartLoaded) {
		t.Errorf("PopulatePart(%s) after every part = %v, want ErrPartLoaded", last, err)
	}
	if mat, ok := s.(microblog.Materializer); ok {
		if done, err := mat.MaterializeOnce(ctx); err != nil || len(done) != 0 {
			t.Fatalf("MaterializeOnce after the parts = %d tweets, %v; want nothing pending", len(done), err)
		}
	}
	CompareMicroblog(t, s, microblog.NewOracle(ds), ds.Users, "after the parts", microblog.Limit, 1)
}
