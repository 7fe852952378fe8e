package wiki

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
)

// Oracle is the brute-force reference of the wiki family: it holds every
// article as loaded and, from Replay, how many "1"s each must have gained.
// Replay draws the run's request streams again (they depend only on the
// plan and (set, repetition, thread)), so no record of the run is needed.
//
// A request is the study's read-modify-write, not an atomic append: when
// two threads update the same article in the same repetition, one may
// overwrite the other's append (a lost update, which the database cannot
// prevent). So an article updated by one thread per repetition must have
// gained exactly its updates, and one updated by several threads
// concurrently at least one "1" per such repetition and at most one per
// update. With one thread every article is exact.
type Oracle struct {
	base   map[int64]Article
	expect map[int64]*Expectation
}

// Expectation is how many "1"s a run must have appended to one article.
type Expectation struct {
	Min, Max int64
}

// NewOracle reads every article of src (ids must be unique).
func NewOracle(src Source) (*Oracle, error) {
	o := &Oracle{base: map[int64]Article{}, expect: map[int64]*Expectation{}}
	for {
		a, err := src.Next()
		if errors.Is(err, io.EOF) {
			return o, nil
		}
		if err != nil {
			return nil, err
		}
		if _, dup := o.base[a.ID]; dup {
			return nil, fmt.Errorf("oracle: article %d given twice", a.ID)
		}
		o.base[a.ID] = a
	}
}

// Len is the number of articles.
func (o *Oracle) Len() int { return len(o.base) }

// Replay adds what sets request sets of repeat repetitions under plan p
// must have done, and returns the number of update requests they made
// (updates of ids the oracle does not hold are counted but expect nothing).
func (o *Oracle) Replay(p Plan, sets, repeat int) int64 {
	var total int64
	per := p.PerThread()
	type touch struct {
		n       int64
		thread  int
		threads int // distinct threads, counted up to 2
	}
	for set := 1; set <= sets; set++ {
		for rep := 1; rep <= repeat; rep++ {
			touched := map[int64]*touch{}
			for i, c := range p.Clients(nil, set, rep) {
				for range per {
					if c.Next() != OpUpdate {
						continue
					}
					total++
					t := touched[c.ID()]
					if t == nil {
						t = &touch{thread: i}
						touched[c.ID()] = t
					}
					if t.n == 0 || t.thread != i {
						t.threads = min(t.threads+1, 2)
						t.thread = i
					}
					t.n++
				}
			}
			for id, t := range touched {
				if _, ok := o.base[id]; !ok {
					continue
				}
				e := o.expect[id]
				if e == nil {
					e = &Expectation{}
					o.expect[id] = e
				}
				e.Max += t.n
				if t.threads == 1 {
					e.Min += t.n
				} else {
					e.Min++ // every write is a read of this repetition plus "1"
				}
			}
		}
	}
	return total
}

// Expect returns article id's expectation (zero when no update touched it).
func (o *Oracle) Expect(id int64) Expectation {
	if e := o.expect[id]; e != nil {
		return *e
	}
	return Expectation{}
}

// Check reports how a, read from a database after the replayed run,
// differs from what the oracle allows; nil when it does not.
func (o *Oracle) Check(a Article) error {
	b, ok := o.base[a.ID]
	if !ok {
		return fmt.Errorf("article %d: not in the dataset", a.ID)
	}
	if a.Title != b.Title {
		return fmt.Errorf("article %d: title %q, want %q", a.ID, a.Title, b.Title)
	}
	e := o.Expect(a.ID)
	rest, ok := strings.CutPrefix(a.Body, b.Body)
	if !ok || strings.Trim(rest, "1") != "" {
		return fmt.Errorf("article %d: body of %d bytes is not the loaded body (%d bytes) followed by 1s", a.ID, len(a.Body), len(b.Body))
	}
	if k := int64(len(rest)); k < e.Min || k > e.Max {
		return fmt.Errorf("article %d: %d appends, want between %d and %d", a.ID, k, e.Min, e.Max)
	}
	return nil
}

// MemStore is an in-memory Store, a map under one mutex: the reference the
// request machinery is tested against without a database.
type MemStore struct {
	mu       sync.Mutex
	articles map[int64]Article
	maxID    int64
}

var _ Store = (*MemStore)(nil)

// NewMemStore returns an empty store.
func NewMemStore() *MemStore { return &MemStore{articles: map[int64]Article{}} }

// Populate implements Store.
func (m *MemStore) Populate(ctx context.Context, src Source) (Counts, error) {
	var c Counts
	for {
		if err := ctx.Err(); err != nil {
			return c, err
		}
		a, err := src.Next()
		if errors.Is(err, io.EOF) {
			return c, nil
		}
		if err != nil {
			return c, err
		}
		m.mu.Lock()
		_, dup := m.articles[a.ID]
		if !dup {
			m.articles[a.ID] = a
			m.maxID = max(m.maxID, a.ID)
		}
		m.mu.Unlock()
		if dup {
			return c, fmt.Errorf("memstore: article %d already exists", a.ID)
		}
		c.Articles++
		c.Bytes += int64(len(a.Body))
		c.MaxID = max(c.MaxID, a.ID)
	}
}

// Read implements Store.
func (m *MemStore) Read(_ context.Context, id int64) (Article, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.articles[id]
	if !ok {
		return Article{}, fmt.Errorf("memstore: read: %w", ErrNotFound)
	}
	return a, nil
}

// Update implements Store.
func (m *MemStore) Update(_ context.Context, id int64, body string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.articles[id]
	if !ok {
		return fmt.Errorf("memstore: update: %w", ErrNotFound)
	}
	a.Body = body
	m.articles[id] = a
	return nil
}

// Counts implements Store.
func (m *MemStore) Counts(context.Context) (Counts, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := Counts{Articles: int64(len(m.articles)), MaxID: m.maxID}
	for _, a := range m.articles {
		c.Bytes += int64(len(a.Body))
	}
	return c, nil
}

// Reset implements Store.
func (m *MemStore) Reset(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.articles = map[int64]Article{}
	m.maxID = 0
	return nil
}

// Close implements Store.
func (m *MemStore) Close() error { return nil }
