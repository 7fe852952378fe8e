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
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/workload/ingest"
	"github.com/fieldbench/fieldbench/workload/microblog"
	"github.com/fieldbench/fieldbench/workload/trajectory"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// checkTimeout bounds one family check, so that a server that hangs fails
// the test instead of stalling CI until the global test timeout.
const checkTimeout = 5 * time.Minute

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
	_, isMicroblog := probe.(microblog.Backend)
	_, isWiki := probe.(wiki.Backend)
	_, isIngest := probe.(ingest.Backend)
	_, isTrajectory := probe.(trajectory.Backend)
	if !isMicroblog && !isWiki && !isIngest && !isTrajectory {
		t.Errorf("%T implements no workload family's Backend: nothing to check", probe)
	}
	family := func(name string, ok bool, check func(t *testing.T)) {
		t.Run(name, func(t *testing.T) {
			if !ok {
				t.Skipf("%T does not implement %s.Backend", probe, name)
			}
			check(t)
		})
	}
	family(microblog.Name, isMicroblog, func(t *testing.T) {
		for _, m := range microblog.Models {
			t.Run(string(m), func(t *testing.T) { checkMicroblog(t, open(t), m) })
			t.Run(string(m)+"-tiny", func(t *testing.T) { checkMicroblogTiny(t, open(t), m) })
		}
	})
	family(wiki.Name, isWiki, func(t *testing.T) { checkWiki(t, open(t)) })
	family(ingest.Name, isIngest, func(t *testing.T) { checkIngest(t, open(t)) })
	family(trajectory.Name, isTrajectory, func(t *testing.T) { checkTrajectory(t, open(t)) })
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
