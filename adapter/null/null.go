// Package null is the adapter with no database behind it (DSN null://). It
// implements every workload family and answers at once — writes are
// dropped, reads return nothing (wiki: an empty article) — so a run on it
// measures fieldbench alone: clients, runner, recorder and result writing,
// as YCSB's BasicDB and NoSQLBench's diagnostic driver do. Every result and
// report made on it is marked "harness only — no database"
// (result.HarnessOnlyMark). It keeps only counters (what was "loaded", the
// largest tweet id), never data, so --verify is not applicable: counting
// stored records is refused with ErrNotApplicable. It is not in the
// conformance suite against the oracles: its answers are not the oracle's.
package null

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/workload/ingest"
	"github.com/fieldbench/fieldbench/workload/microblog"
	"github.com/fieldbench/fieldbench/workload/trajectory"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// Name is the adapter's name and DSN scheme (result.HarnessOnlyAdapter).
const Name = result.HarnessOnlyAdapter

// ErrNotApplicable is returned where an answer would claim the null
// database stored something (a verification count).
var ErrNotApplicable = errors.New("not applicable on null:// (" + result.HarnessOnlyMark + "): nothing is stored, so nothing can be verified; run with --verify=false")

func init() { adapter.Register(Adapter{}) }

// Adapter opens null databases.
type Adapter struct{}

// Name implements adapter.Adapter.
func (Adapter) Name() string { return Name }

// Embedded implements adapter.Embedded: null:// talks to nothing.
func (Adapter) Embedded() {}

// Schemes implements adapter.Adapter.
func (Adapter) Schemes() []string { return []string{Name} }

// Families implements adapter.Adapter.
func (Adapter) Families() []string { return adapter.FamiliesOf((*DB)(nil)) }

// Describe implements adapter.Adapter.
func (Adapter) Describe() string {
	return "no database: every operation answers at once, to measure fieldbench itself (" + result.HarnessOnlyMark + "); DSN null://"
}

// CheckDSN implements adapter.Adapter: the DSN must be exactly null://.
// What follows null:// is not shown: it may be a userinfo with a password
// (null://user:pw@host printed the password).
func (Adapter) CheckDSN(dsn string) error {
	if dsn != Name+"://" {
		return adapter.BadDSN(errors.New("a null DSN takes nothing after null:// (what follows is not shown: it may hold a password); the DSN is exactly null://"))
	}
	return nil
}

// Open implements adapter.Adapter; the DSN must be exactly null://.
func (a Adapter) Open(_ context.Context, dsn string) (adapter.DB, error) {
	if err := a.CheckDSN(dsn); err != nil {
		return nil, err
	}
	return &DB{}, nil
}

// DB is one null database: the counters of what was "loaded" into it.
type DB struct {
	mu        sync.Mutex
	mbModel   microblog.Model
	mbCounts  microblog.Counts
	maxTweet  atomic.Int64
	wikiCount wiki.Counts
	traj      atomic.Int64 // trajectory records written
}

var (
	_ microblog.Backend  = (*DB)(nil)
	_ wiki.Backend       = (*DB)(nil)
	_ ingest.Backend     = (*DB)(nil)
	_ trajectory.Backend = (*DB)(nil)
)

// Info implements adapter.DB: the version says what the figures are.
func (*DB) Info(context.Context) (adapter.Info, error) {
	return adapter.Info{Name: Name, Version: result.HarnessOnlyMark, Config: map[string]string{"harness_only": "true"}}, nil
}

// Close implements adapter.DB.
func (*DB) Close() error { return nil }
