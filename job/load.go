package job

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/result"
)

// datasetOpts are the options of a loading job that say where its
// dataset goes and which part of it a command does: --db, --results (a
// new run directory's parent), --seed and the shard options. Each job
// embeds them (j.db, j.seed, ...) and declares them with help of its own;
// its load and run read them.
type datasetOpts struct {
	db, results string
	seed        int64
	sharding    shardFlags
}

// loader is a job with a load command. runLoad owns what every load
// shares, once — the dataset's check, the hand-over of a sharded load,
// the run directory and its SQLite file when --db is not given, the
// database, the load's record in that directory and the line that says
// what to do with it — so a job's load says only how it fills its store
// and what it loaded, as measure does for the measured runs. (ingest has
// no load: its run empties the table and inserts, which it measures.)
//
// The load command's Run is loadRun's, and checkCommand checks a
// loader's run and load (it has no other checked command) with CheckRun
// and loading's check.
type loader interface {
	RunChecker
	// loading is the load's parts, of the options as they are set now.
	loading() loading
	// loadShard loads shard sh's part of the dataset beside the other
	// shards, into the --db they share: no run directory, no record.
	loadShard(ctx context.Context, env *Env, sh shard) error
	// loadInto loads the whole dataset into the open database and says
	// on env.Stdout what it loaded.
	loadInto(ctx context.Context, env *Env, db adapter.DB, dsn string) (filled, error)
}

// loading is what a job's load is made of beyond its loader methods.
type loading struct {
	// workload names the run directory (<workload>-load), the SQLite
	// file in it and the record's header.
	workload string
	// datasetOpts are the job's: db empty is a new SQLite file in a new
	// run directory under results; seed is recorded in the header.
	*datasetOpts
	// validate checks the dataset's options, before anything.
	validate func() error
	// checkShard refuses what a sharded load cannot do. check asks it
	// of every shard before any starts; loadShard may ask it again.
	checkShard func(sh shard) error
	// next says what to do with the database of a new run directory: a
	// format of its DSN, printed as a line once the load is recorded.
	// Empty: "run it with: fieldbench run <workload> --db <dsn>".
	next string
}

// loadRun is the Run of l's load command.
func loadRun(l loader) func(ctx context.Context, env *Env) error {
	return func(ctx context.Context, env *Env) error { return runLoad(ctx, env, l) }
}

// filled is what a loadInto did.
type filled struct {
	// held: the database already held the dataset and nothing was
	// loaded (loadInto said so); nothing is recorded or said after.
	held bool
	// options are the record's header options; nil for a load that
	// leaves no record in its run directory (trajectory's: run measures
	// the writes itself).
	options map[string]any
	// seconds is the populate time and extra the record's figures.
	seconds float64
	extra   map[string]float64
	// close releases what loadInto opened (its store), once the record
	// is written; runLoad calls it after a failed loadInto too. Optional.
	close func()
}

// resolve checks the dataset's options and reads the shard options.
func (l loading) resolve() (shard, error) {
	if err := l.validate(); err != nil {
		return shard{}, err
	}
	sh, _, err := l.sharding.resolve(l.db)
	return sh, err
}

// check checks load's options as set, a sharded load's as its shard
// (checkCommand asks it of a loader's load).
func (l loading) check() error {
	sh, err := l.resolve()
	if err != nil || !sh.sharded() {
		return err
	}
	return l.checkShard(sh)
}

// runLoad runs j's load: the load skeleton every loader shares.
func runLoad(ctx context.Context, env *Env, j loader) error {
	l := j.loading()
	sh, err := l.resolve()
	if err != nil {
		return err
	}
	if sh.sharded() {
		// A shard's load is the load generator's too: held to its budget.
		release, _, err := holdLoad(env.load)
		if err != nil {
			return err
		}
		return errors.Join(j.loadShard(ctx, env, sh), release())
	}
	dsn, dir := l.db, ""
	if dsn == "" {
		if dir, err = NewRunDir(l.results, l.workload+"-load", "sqlite", time.Now()); err != nil {
			return err
		}
		dsn = DefaultSQLite(dir, l.workload)
	}
	a, db, err := OpenDB(ctx, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	release, _, err := holdLoad(env.load)
	if err != nil {
		return err
	}
	f, err := j.loadInto(ctx, env, db, dsn)
	if rerr := release(); rerr != nil {
		err = errors.Join(err, rerr)
	}
	if f.close != nil {
		defer f.close()
	}
	if err != nil || f.held || dir == "" {
		return err
	}
	if f.options != nil {
		info, _ := db.Info(ctx)
		h := newHeader(env, l.workload, a, info, dsn, l.seed, nil)
		h.Options = f.options
		if err := writeLoadResult(dir, h, f.seconds, f.extra); err != nil {
			return err
		}
	}
	next := l.next
	if next == "" {
		next = "run it with: fieldbench run " + l.workload + " --db %s"
	}
	fmt.Fprintf(env.Stdout, next+"\n", dsn)
	return nil
}

// populated is what preparing a database for a load or a run did to
// it, as both record it: whether it loaded the dataset, in how long, and
// the database's size on disk after (0: the adapter cannot tell).
type populated struct {
	loaded    bool
	seconds   float64
	sizeBytes int64
}

// measureSize reads db's size on disk where its adapter can tell
// (adapter.Sizer); a failed read leaves it unknown, as no figure.
func (p *populated) measureSize(ctx context.Context, db adapter.DB) {
	if sz, ok := db.(adapter.Sizer); ok {
		if n, err := sz.SizeBytes(ctx); err == nil {
			p.sizeBytes = n
		}
	}
}

// figures adds populate_seconds (when it loaded) and db_size_bytes
// (when known) to the workload's figures m, and returns m.
func (p populated) figures(m map[string]float64) map[string]float64 {
	if p.loaded {
		m["populate_seconds"] = p.seconds
	}
	if p.sizeBytes > 0 {
		m["db_size_bytes"] = float64(p.sizeBytes)
	}
	return m
}

// onDisk ends a load's line: "; <size> MB on disk" with prec decimals,
// or nothing when the size is unknown.
func (p populated) onDisk(prec int) string {
	if p.sizeBytes <= 0 {
		return ""
	}
	return fmt.Sprintf("; %.*f MB on disk", prec, float64(p.sizeBytes)/1e6)
}

// writeLoadResult leaves a self-describing record of a load done into a new
// run directory (populate time and size are figures of the study).
func writeLoadResult(dir string, h result.Header, seconds float64, extra map[string]float64) error {
	h.Started = time.Now().UTC()
	w, err := result.Create(dir, h)
	if err != nil {
		return err
	}
	err = errors.Join(
		w.Event(result.Event{At: 0, Name: "populate", Detail: fmt.Sprintf("%.2fs", seconds)}),
		w.Summary(result.Summary{Ops: map[string]result.OpSummary{}, Extra: extra}),
	)
	return errors.Join(err, w.Close())
}
