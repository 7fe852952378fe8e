package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/workload/ingest"
	"github.com/fieldbench/fieldbench/workload/microblog"
	"github.com/fieldbench/fieldbench/workload/trajectory"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// fakeDB is an in-memory database implementing all four families on top of
// the workloads' own references (microblog.Oracle, wiki.MemStore,
// trajectory.Oracle), so it is correct by construction; bug switches on
// one deliberate defect, which the suite must catch.
type fakeDB struct {
	bug    string
	models []microblog.Model // supported microblog models; nil: all

	mu      sync.Mutex
	mb      *memMicroblog
	wikiMem *wiki.MemStore
	ing     *memIngest
	traj    *memTrajectory
}

func newFakeDB(bug string) *fakeDB {
	return &fakeDB{bug: bug, wikiMem: wiki.NewMemStore(), ing: &memIngest{bug: bug}, traj: &memTrajectory{bug: bug, o: trajectory.NewOracle()}}
}

func (db *fakeDB) Info(context.Context) (adapter.Info, error) {
	return adapter.Info{Name: "fake", Version: "1"}, nil
}

func (db *fakeDB) Close() error { return nil }

// nopClose keeps a family store's Close from closing the shared state.
type nopClose struct{}

func (nopClose) Close() error { return nil }

// --- microblog ---

func (db *fakeDB) Microblog(_ context.Context, m microblog.Model) (microblog.Store, error) {
	if !slices.Contains(microblog.Models, m) || db.models != nil && !slices.Contains(db.models, m) {
		return nil, fmt.Errorf("fake: model %s: %w", m, adapter.ErrUnsupported)
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.mb == nil {
		empty := &microblog.Dataset{}
		db.mb = &memMicroblog{bug: db.bug, all: microblog.NewOracle(empty), timelines: microblog.NewOracle(empty), ids: map[int64]bool{}}
	}
	if db.mb.model != "" && db.mb.model != m {
		return nil, fmt.Errorf("fake: holds model %s", db.mb.model)
	}
	if m == microblog.Async {
		return memAsync{db.mb, m}, nil
	}
	return memModel{db.mb, m}, nil
}

func (db *fakeDB) MicroblogModel(context.Context) (microblog.Model, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.mb == nil {
		return "", nil
	}
	db.mb.mu.Lock()
	defer db.mb.mu.Unlock()
	return db.mb.model, nil
}

// memMicroblog answers userlines from one oracle holding every tweet and
// timelines from another holding the materialized ones (all of them except
// in the async model, where MaterializeOnce moves pending tweets over).
type memMicroblog struct {
	bug       string
	mu        sync.Mutex
	model     microblog.Model
	all       *microblog.Oracle
	timelines *microblog.Oracle
	pending   []microblog.Tweet
	ids       map[int64]bool
	counts    microblog.Counts
	maxID     int64
}

// memModel is the store of one model over the shared memMicroblog.
type memModel struct {
	*memMicroblog
	m microblog.Model
}

func (s memModel) Populate(_ context.Context, ds *microblog.Dataset) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.model != "" {
		return errors.New("fake: already populated")
	}
	s.model = s.m
	s.all, s.timelines = microblog.NewOracle(ds), microblog.NewOracle(ds)
	for _, t := range ds.Tweets {
		s.ids[t.ID] = true
		s.maxID = max(s.maxID, t.ID)
	}
	s.counts = microblog.Counts{Users: int64(ds.Users), Follows: int64(len(ds.Follows)), Tweets: int64(len(ds.Tweets))}
	return nil
}

func (s memModel) Counts(context.Context) (microblog.Counts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.counts
	if s.bug == "counts-follows" && c.Follows > 0 {
		c.Follows--
	}
	return c, nil
}

func (s memModel) Post(_ context.Context, t microblog.Tweet) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ids[t.ID] {
		return fmt.Errorf("fake: tweet %d exists", t.ID)
	}
	s.ids[t.ID] = true
	s.maxID = max(s.maxID, t.ID)
	s.counts.Tweets++
	s.all.Post(t)
	if s.m == microblog.Async {
		s.pending = append(s.pending, t)
	} else {
		s.timelines.Post(t)
	}
	return nil
}

func (s memModel) Userline(_ context.Context, user int64, limit int) ([]microblog.Tweet, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.all.Userline(user, limit)
	if s.bug == "ties-by-insertion" {
		// Tweets of one microsecond oldest id first, as a store ordering
		// ties by insertion (or by ascending id) returns them.
		for i := 0; i < len(out); {
			j := i + 1
			for j < len(out) && out[j].Time.UnixMicro() == out[i].Time.UnixMicro() {
				j++
			}
			slices.Reverse(out[i:j])
			i = j
		}
	}
	return out, nil
}

func (s memModel) Timeline(_ context.Context, user int64, limit int) ([]microblog.Tweet, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.timelines.Timeline(user, limit)
	if s.bug == "timeline-drops-last" && len(out) > 0 {
		out = out[:len(out)-1]
	}
	return out, nil
}

func (s memModel) MaxTweetID(context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxID, nil
}

func (memModel) Close() error { return nil }

// memAsync adds the async model's materializer, 16 tweets per pass.
type memAsync memModel

func (s memAsync) Populate(ctx context.Context, ds *microblog.Dataset) error {
	return memModel(s).Populate(ctx, ds)
}
func (s memAsync) Counts(ctx context.Context) (microblog.Counts, error) {
	return memModel(s).Counts(ctx)
}
func (s memAsync) Post(ctx context.Context, t microblog.Tweet) error { return memModel(s).Post(ctx, t) }
func (s memAsync) Userline(ctx context.Context, u int64, n int) ([]microblog.Tweet, error) {
	return memModel(s).Userline(ctx, u, n)
}
func (s memAsync) Timeline(ctx context.Context, u int64, n int) ([]microblog.Tweet, error) {
	return memModel(s).Timeline(ctx, u, n)
}
func (s memAsync) MaxTweetID(ctx context.Context) (int64, error) { return memModel(s).MaxTweetID(ctx) }
func (memAsync) Close() error                                    { return nil }

func (s memAsync) MaterializeOnce(context.Context) ([]microblog.Materialized, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bug == "lazy-materializer" {
		return nil, nil
	}
	n := min(16, len(s.pending))
	var out []microblog.Materialized
	for _, t := range s.pending[:n] {
		s.timelines.Post(t)
		out = append(out, microblog.Materialized{TweetID: t.ID, PostedAt: t.Time})
	}
	s.pending = s.pending[n:]
	return out, nil
}

// --- wiki ---

func (db *fakeDB) Wiki(context.Context) (wiki.Store, error) {
	return &memWiki{MemStore: db.wikiMem, bug: db.bug}, nil
}

// memWiki is wiki.MemStore with the bug switches.
type memWiki struct {
	*wiki.MemStore
	bug     string
	mu      sync.Mutex
	updates int
}

func (s *memWiki) Update(ctx context.Context, id int64, body string) error {
	s.mu.Lock()
	s.updates++
	lose := s.bug == "wiki-lost-update" && s.updates%25 == 0
	s.mu.Unlock()
	if lose {
		return nil // acknowledged, not stored
	}
	return s.MemStore.Update(ctx, id, body)
}

func (s *memWiki) Reset(ctx context.Context) error {
	if s.bug == "wiki-reset-noop" {
		return nil
	}
	return s.MemStore.Reset(ctx)
}

func (s *memWiki) Close() error { return nil }

// --- ingest ---

func (db *fakeDB) Ingest(context.Context) (ingest.Store, error) { return db.ing, nil }

// memIngest counts records.
type memIngest struct {
	nopClose
	bug string
	mu  sync.Mutex
	n   int64
}

func (s *memIngest) InsertBatch(_ context.Context, recs []ingest.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := int64(len(recs))
	if s.bug == "ingest-drops-record" && n > 100 {
		n-- // one record of each large batch is lost
	}
	s.n += n
	return nil
}

func (s *memIngest) Count(context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n, nil
}

func (s *memIngest) Reset(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bug != "ingest-reset-noop" {
		s.n = 0
	}
	return nil
}

// --- trajectory ---

func (db *fakeDB) Trajectory(context.Context) (trajectory.Store, error) { return db.traj, nil }

// memTrajectory is trajectory.Oracle behind a mutex.
type memTrajectory struct {
	nopClose
	bug string
	mu  sync.Mutex
	o   *trajectory.Oracle
}

func (s *memTrajectory) Write(_ context.Context, recs []trajectory.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.o.Add(recs...)
	return nil
}

func (s *memTrajectory) Distance(_ context.Context, p trajectory.Point, radius int64) ([]trajectory.Hit, error) {
	if err := (trajectory.Query{Op: trajectory.OpDistance, At: p, Radius: radius}).Validate(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.o.Distance(p, radius), nil
}

func (s *memTrajectory) KNN(_ context.Context, p trajectory.Point, k int, maxDist int64) ([]trajectory.Hit, error) {
	if err := (trajectory.Query{Op: trajectory.OpKNN, At: p, K: k, MaxDist: maxDist}).Validate(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.o.KNN(p, k, maxDist)
	if s.bug == "traj-knn-short" && k > 1 && len(out) == k {
		out = out[:k-1] // an off-by-one LIMIT
	}
	return out, nil
}

func (s *memTrajectory) Range(_ context.Context, t trajectory.Triangle) ([]trajectory.Hit, error) {
	if err := (trajectory.Query{Op: trajectory.OpRange, Tri: t}).Validate(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.o.Range(t)
	if s.bug == "traj-range-open" {
		// The open triangle: cells on an edge or a vertex are left out.
		out = slices.DeleteFunc(out, func(h trajectory.Hit) bool {
			p := h.Pos()
			for i := range t {
				a, b := t[i], t[(i+1)%3]
				if (b.X-a.X)*(p.Y-a.Y)-(b.Y-a.Y)*(p.X-a.X) == 0 {
					return true
				}
			}
			return false
		})
	}
	return out, nil
}

func (s *memTrajectory) Region(_ context.Context, day trajectory.Weekday, slot int) (trajectory.Busiest, bool, error) {
	if err := (trajectory.Query{Op: trajectory.OpRegion, Day: day, Slot: slot}).Validate(); err != nil {
		return trajectory.Busiest{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.o.Region(day, slot)
	return b, ok, nil
}

func (s *memTrajectory) Counts(context.Context) (trajectory.Counts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.o.Counts(), nil
}

func (s *memTrajectory) Reset(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bug != "traj-reset-noop" {
		s.o = trajectory.NewOracle()
	}
	return nil
}

var (
	_ microblog.Backend          = (*fakeDB)(nil)
	_ wiki.Backend               = (*fakeDB)(nil)
	_ ingest.Backend             = (*fakeDB)(nil)
	_ trajectory.Backend         = (*fakeDB)(nil)
	_ microblog.Materializer     = memAsync{}
	_ adapter.DB                 = (*fakeDB)(nil)
	_ interface{ Close() error } = nopClose{}
)
