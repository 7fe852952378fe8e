// Package adapter holds the database-independent side of adapters: the
// registry keyed by DSN scheme, the DB handle every adapter returns, and DSN
// redaction. Family support is expressed by the DB implementing a workload's
// Backend interface (e.g. microblog.Backend), so the compiler checks the
// database × family matrix.
package adapter

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/workload"
)

// ErrUnsupported is wrapped by adapters when asked for a family or data model
// they do not implement.
var ErrUnsupported = errors.New("not supported by this adapter")

// Family returns db as T, the Backend interface of the workload family
// named family (e.g. Family[microblog.Backend](db, dsn, "microblog")), or
// an error wrapping ErrUnsupported that names the family and the adapter
// of dsn (redacted) when db does not implement it.
func Family[T any](db DB, dsn, family string) (T, error) {
	b, ok := db.(T)
	if !ok {
		return b, unsupportedError{fmt.Sprintf("the adapter for %s does not support the %s workload", redact.DSN(dsn), family)}
	}
	return b, nil
}

// unsupportedError is ErrUnsupported with a message of its own.
type unsupportedError struct{ msg string }

func (e unsupportedError) Error() string { return e.msg }
func (e unsupportedError) Unwrap() error { return ErrUnsupported }

// Info describes the database server an adapter is connected to; it goes into
// every result file, whose package defines it (result.Database), so that
// result needs nothing of the adapters.
type Info = result.Database

// DB is an open connection to one database. Workload families are reached by
// type-asserting it to the family's Backend interface.
type DB interface {
	Info(ctx context.Context) (Info, error)
	Close() error
}

// Adapter opens DBs for the DSN schemes it owns.
type Adapter interface {
	Name() string
	// Schemes are the DSN schemes (before "://") this adapter accepts.
	Schemes() []string
	// Families lists the workload families the adapter implements; a test
	// checks it against the Backend interfaces the DB really satisfies.
	Families() []string
	// Describe is one line for `fieldbench list`.
	Describe() string
	// CheckDSN parses dsn as Open would, connecting to nothing and
	// creating nothing, so that a DSN of the wrong form is refused before
	// anything starts (a run before its directory, experiment --dry-run).
	// Its errors wrap ErrBadDSN and show no password:
	// TestCheckDSNHidesPasswords goes over every registered adapter.
	CheckDSN(dsn string) error
	Open(ctx context.Context, dsn string) (DB, error)
}

var (
	mu       sync.RWMutex
	byName   = map[string]Adapter{}
	byScheme = map[string]Adapter{}
)

// Register adds a to the registry; it panics on a duplicate name or scheme.
func Register(a Adapter) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := byName[a.Name()]; dup {
		panic("adapter: duplicate registration of " + a.Name())
	}
	byName[a.Name()] = a
	for _, s := range a.Schemes() {
		if _, dup := byScheme[s]; dup {
			panic("adapter: duplicate scheme " + s)
		}
		byScheme[s] = a
	}
}

// Registered returns every adapter sorted by name.
func Registered() []Adapter {
	mu.RLock()
	defer mu.RUnlock()
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]Adapter, len(names))
	for i, n := range names {
		out[i] = byName[n]
	}
	return out
}

// ForDSN finds the adapter owning dsn's scheme. Its errors wrap ErrBadDSN.
func ForDSN(dsn string) (Adapter, error) {
	scheme, _, ok := strings.Cut(dsn, "://")
	if !ok || !redact.ValidScheme(scheme) {
		// Not echoed: a word without a scheme may be a password given to
		// the wrong flag, which redact.DSN cannot tell from a host name; and
		// what precedes a "://" that is no scheme may be a userinfo
		// (u:pw@h://x named its "scheme" u:pw@h).
		return nil, BadDSN(errors.New("malformed DSN (not shown: it does not start with a scheme, and may hold a password): want scheme://..., e.g. sqlite:///tmp/fb.db"))
	}
	mu.RLock()
	defer mu.RUnlock()
	a, ok := byScheme[scheme]
	if !ok {
		known := make([]string, 0, len(byScheme))
		for s := range byScheme {
			known = append(known, s)
		}
		sort.Strings(known)
		return nil, BadDSN(fmt.Errorf("no adapter for DSN scheme %q (known schemes: %s)", scheme, strings.Join(known, ", ")))
	}
	return a, nil
}

// CheckDSN checks dsn with the adapter of its scheme (Adapter.CheckDSN):
// the one check of a DSN's form, made by Open and OpenExisting before the
// adapter's own Open, by a run before its directory exists, and by
// experiment --dry-run. Its error wraps ErrBadDSN and is redacted
// (BadDSN), whatever the adapter returned.
func CheckDSN(dsn string) error {
	a, err := ForDSN(dsn)
	if err != nil {
		return err
	}
	return checkWith(a, dsn)
}

// checkWith is a.CheckDSN(dsn) marked and redacted as CheckDSN's: an
// adapter's error that forgot either is still both.
func checkWith(a Adapter, dsn string) error {
	return BadDSN(a.CheckDSN(dsn))
}

// Open finds the adapter for dsn, checks the DSN's form (CheckDSN) and
// opens it.
func Open(ctx context.Context, dsn string) (Adapter, DB, error) {
	a, err := ForDSN(dsn)
	if err != nil {
		return nil, nil, err
	}
	if err := checkWith(a, dsn); err != nil {
		return nil, nil, err
	}
	db, err := a.Open(ctx, dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", redact.DSN(dsn), err)
	}
	return a, db, nil
}

// ErrNoDatabase is wrapped by OpenExisting when the database named by the
// DSN does not exist.
var ErrNoDatabase = errors.New("no such database")

// Embedded is an optional capability of an adapter that opens a file or
// memory, not a server (sqlite, null): it is opened at once, without a
// connect timeout or a "connecting to" line.
type Embedded interface {
	Embedded()
}

// ExistingOpener is an optional capability of an adapter whose Open would
// create a missing database (an embedded file): OpenExisting refuses it
// instead, for commands that only read or probe what a load made (`op`),
// where an empty new file would hide a mistyped path.
type ExistingOpener interface {
	OpenExisting(ctx context.Context, dsn string) (DB, error)
}

// OpenExisting is Open for a database that must exist already: adapters
// that would create one implement ExistingOpener and refuse, wrapping
// ErrNoDatabase; for the others (servers) connecting creates nothing and
// it is Open.
func OpenExisting(ctx context.Context, dsn string) (Adapter, DB, error) {
	a, err := ForDSN(dsn)
	if err != nil {
		return nil, nil, err
	}
	eo, ok := a.(ExistingOpener)
	if !ok {
		return Open(ctx, dsn)
	}
	if err := checkWith(a, dsn); err != nil {
		return nil, nil, err
	}
	db, err := eo.OpenExisting(ctx, dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", redact.DSN(dsn), err)
	}
	return a, db, nil
}

// Sizer is an optional capability: the database's size on disk in bytes
// (reported after populate, as the study compared disk use).
type Sizer interface {
	SizeBytes(ctx context.Context) (int64, error)
}

// FamiliesOf lists the registered workload families that db implements. An
// adapter's Families() returns FamiliesOf((*DB)(nil)).
func FamiliesOf(db any) []string {
	var out []string
	for _, w := range workload.Registered() {
		if w.Supports(db) {
			out = append(out, w.Meta().Name)
		}
	}
	return out
}
