// Package adaptertest is the conformance suite every adapter runs against
// its real server: for each workload family the database implements, it
// loads a small generated dataset, drives the family's operations and
// compares every answer with the family's brute-force oracle.
//
// An adapter's test calls Run with a function that opens a fresh, empty
// database:
//
//	func TestConformance(t *testing.T) {
//		adaptertest.Run(t, func(t *testing.T) adapter.DB {
//			db, err := Open(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "x.db"))
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { db.Close() })
//			return db
//		})
//	}
//
// The suite's subtests run one after the other (never in parallel), so a
// server adapter may implement open by resetting one shared database.
//
// What a fresh database per check cannot show (a database reopened with
// another microblog model, loads that span transactions, records read back
// with the adapter's own query), adapters check in their own tests with the
// exported helpers (ModelMismatch, SwitchesModelWhenEmpty, WikiDump,
// IngestStoresExactly...), passing in what differs between them, so the
// adapters do not each keep a copy of the same check.
package adaptertest

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/workload"
)

// checkTimeout bounds one family check, so that a server that hangs fails
// the test instead of stalling CI until the global test timeout. The
// slowest check seen took 180 s (pouchdb-server's wiki, in CI); families
// side by side (RunParallel) take longer each.
const checkTimeout = 10 * time.Minute

// Run runs the correctness checks of every family the database supports.
// open must return a FRESH, EMPTY database each time it is called (a new
// SQLite file; a new schema, database or key prefix, or a reset, on a
// server) and register its Close with t.Cleanup. Run calls it once to find
// which Backend interfaces the DB implements, then once per family (twice
// per data model for microblog: a generated and a hand-built dataset),
// since a database loaded with one microblog model refuses another.
//
// Families the DB does not implement, and microblog models whose Microblog
// call wraps adapter.ErrUnsupported, are skipped with a log line.
func Run(t *testing.T, open func(t *testing.T) adapter.DB) {
	t.Helper()
	run(t, open, false)
}

// RunParallel is Run with the workload families side by side, each on the
// fresh database its open gives. It is for servers whose checks wait on
// each request's latency rather than on the machine's cores: on
// pouchdb-server, one Node.js process at about a third of a core, the
// wiki, trajectory and microblog checks took 180, 104 and 102 s one after
// the other in CI (2026-12-02, docs/testing.md). Each check's verdict is
// the same as in Run: none depends on time.
func RunParallel(t *testing.T, open func(t *testing.T) adapter.DB) {
	t.Helper()
	run(t, open, true)
}

func run(t *testing.T, open func(t *testing.T) adapter.DB, parallel bool) {
	t.Helper()
	probe := open(t)
	t.Run("info", func(t *testing.T) {
		info, err := probe.Info(t.Context())
		if err != nil {
			t.Fatalf("Info: %v", err)
		}
		if info.Name == "" || info.Version == "" {
			t.Errorf("Info = %+v: name and version go into every result file", info)
		}
	})
	supported := false
	for _, f := range registeredFamilies() {
		w, err := workload.Get(f.name)
		ok := err == nil && w.Supports(probe)
		supported = supported || ok
		t.Run(f.name, func(t *testing.T) {
			if !ok {
				t.Skipf("%T does not implement %s.Backend", probe, f.name)
			}
			if parallel {
				t.Parallel()
			}
			f.check(t, open)
		})
	}
	if !supported {
		t.Errorf("%T implements no workload family's Backend: nothing to check", probe)
	}
}

// family is one workload family's conformance check; each family's file
// registers its own (so adding a workload adds a file here, and nothing
// else in this package changes).
type family struct {
	name  string
	check func(t *testing.T, open func(t *testing.T) adapter.DB)
}

var families []family

func registerFamily(name string, check func(t *testing.T, open func(t *testing.T) adapter.DB)) {
	families = append(families, family{name, check})
}

// registeredFamilies are the families in name order.
func registeredFamilies() []family {
	out := append([]family(nil), families...)
	sort.Slice(out, func(i, k int) bool { return out[i].name < out[k].name })
	return out
}

// checkContext is t's context bounded by checkTimeout.
func checkContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), checkTimeout)
	t.Cleanup(cancel)
	return ctx
}

// closeOnCleanup closes a family store when the check ends (before the DB,
// whose Close open registered earlier).
func closeOnCleanup(t testing.TB, what string, c interface{ Close() error }) {
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close %s store: %v", what, err)
		}
	})
}

// mismatches reports mismatches with t.Errorf and stops the check with
// t.Fatalf after a few, so a broken adapter does not print thousands.
type mismatches struct {
	t testing.TB
	n int
}

const maxMismatches = 10

func (m *mismatches) add(format string, args ...any) {
	m.t.Helper()
	m.n++
	m.t.Errorf(format, args...)
	if m.n >= maxMismatches {
		m.t.Fatalf("stopping after %d mismatches", m.n)
	}
}
