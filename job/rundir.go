package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/outpath"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/result"
)

// runDirStamp is the start time a run directory's name begins with.
const runDirStamp = "20060102-150405"

// CheckRunDirName refuses, as outpath.Component does, a name and adapter
// name that would not make one entry of the results directory: each part
// on its own (a scenario's name, a result header's workload and adapter
// reach here) and the whole name with its time and widest -N suffix (so a
// 250-byte scenario name is refused by --dry-run, not by the run's mkdir).
func CheckRunDirName(name, adapterName string) error {
	for _, part := range []string{name, adapterName} {
		if err := outpath.Component(part); err != nil {
			return fmt.Errorf("%w (it names the run directory, one entry under --results)", err)
		}
	}
	whole := fmt.Sprintf("%s-%s-%s-999", runDirStamp, name, adapterName)
	if len(whole) > outpath.MaxComponent {
		return fmt.Errorf("too long: the run directory's name would be %s, and a name in a path may have at most %d bytes",
			outpath.Quote(whole), outpath.MaxComponent)
	}
	return nil
}

// NewRunDir creates results/<time>-<name>-<adapter>[-N]/ and proves it
// writable before any work starts, so a bad --results fails at once. A
// name that would leave results, or not be one entry of it, is bad input
// (CheckRunDirName).
func NewRunDir(results, name, adapterName string, now time.Time) (string, error) {
	if err := CheckRunDirName(name, adapterName); err != nil {
		return "", Usage(err)
	}
	if err := os.MkdirAll(results, 0o755); err != nil {
		return "", Usagef("results directory %s is not writable: %v", results, err)
	}
	base := fmt.Sprintf("%s-%s-%s", now.Format(runDirStamp), name, adapterName)
	for i := 1; i < 1000; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		dir := filepath.Join(results, name)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			abs, aerr := filepath.Abs(dir)
			if aerr != nil {
				return dir, nil
			}
			return abs, nil
		}
		if !os.IsExist(err) {
			return "", Usagef("results directory %s is not writable: %v", results, err)
		}
	}
	return "", fmt.Errorf("could not find a free run directory name under %s", results)
}

func newRand(seed int64) *rand.Rand { return rand.New(rand.NewPCG(uint64(seed), 0)) }

// runDirFor creates the run directory, named for the adapter of dsn, and
// returns the DSN to use: dsn itself, or the embedded default — a SQLite file
// named dbName inside the run directory — when dsn is empty.
func runDirFor(results, dirName, dbName, dsn string) (dir, useDSN string, err error) {
	adapterName := "sqlite"
	if dsn != "" {
		a, err := adapter.ForDSN(dsn)
		if err != nil {
			return "", "", Usage(err)
		}
		// A DSN of the wrong form is refused before the directory is
		// made (exit 2, nothing left behind).
		if err := adapter.CheckDSN(dsn); err != nil {
			return "", "", fmt.Errorf("cannot open %s: %w", redact.DSN(dsn), err)
		}
		adapterName = a.Name()
	}
	if dir, err = NewRunDir(results, dirName, adapterName, time.Now()); err != nil {
		return "", "", err
	}
	if dsn == "" {
		dsn = DefaultSQLite(dir, dbName)
	}
	return dir, dsn, nil
}

// DefaultSQLite is the DSN of the embedded default database in dir.
func DefaultSQLite(dir, workloadName string) string {
	return "sqlite://" + filepath.Join(dir, workloadName+".db")
}

// ConnectTimeout bounds how long opening a database server may take
// before the command fails, with the line OpenDB prints at once (a
// driver left to itself printed nothing: MongoDB for its 30 s of server
// selection, Redis for 13.6 s of dial retries). It is not shorter because
// an adapter's Open also makes its schema (Cassandra's CREATE KEYSPACE waits
// for schema agreement), which on a loaded machine takes seconds.
const ConnectTimeout = 30 * time.Second

type progressKey struct{}

// WithProgress returns ctx carrying w, where OpenDB says which server it is
// connecting to (the CLI gives its stderr; nil: nowhere).
func WithProgress(ctx context.Context, w io.Writer) context.Context {
	return context.WithValue(ctx, progressKey{}, w)
}

func progressOf(ctx context.Context) io.Writer {
	if w, ok := ctx.Value(progressKey{}).(io.Writer); ok && w != nil {
		return w
	}
	return io.Discard
}

// OpenDB opens the database of dsn with its adapter, once its form is
// checked (adapter.CheckDSN: the one check, whose errors show no
// password). A server is announced at once (on the progress writer of
// ctx) and given ConnectTimeout to answer.
func OpenDB(ctx context.Context, dsn string) (adapter.Adapter, adapter.DB, error) {
	a, err := adapter.ForDSN(dsn)
	if err != nil {
		return nil, nil, Usage(err)
	}
	if err := adapter.CheckDSN(dsn); err != nil {
		return nil, nil, fmt.Errorf("cannot open %s: %w", redact.DSN(dsn), err)
	}
	if _, ok := a.(adapter.Embedded); ok {
		db, err := a.Open(ctx, dsn)
		if err != nil {
			return nil, nil, fmt.Errorf("cannot open %s: %w", redact.DSN(dsn), err)
		}
		return a, db, nil
	}
	fmt.Fprintf(progressOf(ctx), "connecting to %s (giving up after %s)...\n", redact.DSN(dsn), ConnectTimeout)
	// The open's context is cancelled only if the server has not answered
	// in time: a DB may keep the context it was opened with.
	octx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(ConnectTimeout, cancel)
	db, err := a.Open(octx, dsn)
	late := !timer.Stop()
	if err != nil {
		cancel()
		if late && ctx.Err() == nil {
			return nil, nil, fmt.Errorf("cannot open %s: no answer within %s (is the server running and reachable?): %w", redact.DSN(dsn), ConnectTimeout, err)
		}
		return nil, nil, fmt.Errorf("cannot open %s: %w", redact.DSN(dsn), err)
	}
	return a, db, nil
}

// openExisting opens the database of dsn for an operation by hand (op) of
// workload name: an embedded database that does not exist is bad input,
// and is not created empty on the way.
// what says, in words, what a loaded database holds ("wiki articles").
func openExisting(name, what string) func(ctx context.Context, dsn string) (adapter.Adapter, adapter.DB, error) {
	return func(ctx context.Context, dsn string) (adapter.Adapter, adapter.DB, error) {
		return openExistingDB(ctx, dsn, name, what)
	}
}

func openExistingDB(ctx context.Context, dsn, name, what string) (adapter.Adapter, adapter.DB, error) {
	a, db, err := adapter.OpenExisting(ctx, dsn)
	switch {
	case errors.Is(err, adapter.ErrNoDatabase):
		return nil, nil, Usagef("%s does not exist, so it holds no %s: load them first with 'fieldbench load %s --db %s'", redact.DSN(dsn), what, name, redact.DSN(dsn))
	case err != nil && a == nil:
		return nil, nil, Usage(err)
	case err != nil:
		return nil, nil, fmt.Errorf("cannot open %s: %w", redact.DSN(dsn), err)
	}
	return a, db, nil
}

// loopName is how a result names the run's loop.
func loopName(rate float64) string {
	if rate > 0 {
		return "open"
	}
	return "closed"
}

// plural is "1 thread" or "4 threads".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// verifiable refuses --verify on the harness-only null adapter: it stores
// nothing, so there is nothing to check answers or counts against.
func verifiable(a adapter.Adapter, verify bool) error {
	if verify && a.Name() == result.HarnessOnlyAdapter {
		return Usagef("--verify does not apply to %s:// (harness only — no database stores anything): pass --verify=false", a.Name())
	}
	return nil
}
