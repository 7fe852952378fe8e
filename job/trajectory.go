package job

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/workload"
	"github.com/fieldbench/fieldbench/workload/trajectory"
)

func init() { Register(trajectory.Name, func() Job { return newTrajectoryJob() }) }

// Point series a trajectory run writes (declared in its header).
const (
	trajSeriesThroughput = "trajectory-throughput"
	trajSeriesRecords    = "trajectory-write-records"
	trajSeriesLatency    = "trajectory-latency"
)

// trajectoryJob is the trajectory workload (seed 003): its options are its
// fields.
type trajectoryJob struct {
	base
	// The dataset and the database.
	datasetOpts
	scale float64
	out   string
	batch int
	reset bool
	// The run.
	mode    string
	modes   []trajectory.Mode
	clients int
	queries int
	repeat  int
	radius  int64
	k       int
	maxDist int64
	verify  bool
	rate    float64
	retry   workload.Retry
	// One operation (op).
	x, y                    int64
	triangle, weekday, slot string
	index, count            int64
}

func newTrajectoryJob() *trajectoryJob {
	j := &trajectoryJob{base: newBase(trajectory.Name)}
	o := j.opts
	// --db, --scale, --seed, --radius, --k and --max-dist were declared
	// separately on run and on op's operations, with the same defaults but
	// their own help: one declaration now carries both (op write's shorter
	// --scale and --seed helps are dropped, the longer ones hold for it too).
	o.String(&j.db, "db", "", "database DSN, e.g. sqlite:///tmp/traj.db (default: a new SQLite file in the run directory; required by op)", "load", "run", "op")
	o.Float64(&j.scale, "scale", trajectory.DefaultScale, "dataset size: round(scale x 6,483,397.5) records; 1, 2 and 4 are the study's three datasets", "generate", "load", "run", "op write")
	o.Int64(&j.seed, "seed", 1, "seed of the city, the users, the random orders and the query parameters", "generate", "load", "run", "op write")
	o.Int(&j.batch, "batch", trajectory.DefaultBatch, "records per write request (one transaction)", "load", "run")
	o.Bool(&j.reset, "reset", false, "delete trajectory data already in --db instead of refusing", "load", "run")
	o.String(&j.results, "results", "results", "directory under which the run directory is created", "load", "run")
	o.String(&j.out, "out", "", "directory to write the CSV files to (required)", "generate")
	o.String(&j.mode, "mode", "both", "sequential, random or both", "run")
	o.Int(&j.clients, "clients", trajectory.DefaultRandomClients, "clients of the random mode (sequential uses 1)", "run")
	o.Int(&j.queries, "queries", trajectory.DefaultQueries, "distinct queries per query type", "run")
	o.Int(&j.repeat, "repeat", trajectory.DefaultRepeat, "times each query is sent per mode", "run")
	o.Int64(&j.radius, "radius", trajectory.DefaultRadius, "distance query radius (m); a cell exactly at this distance is included", "run", "op distance")
	o.Int(&j.k, "k", trajectory.DefaultK, "k of the k-NN query: how many cells", "run", "op knn")
	o.Int64(&j.maxDist, "max-dist", trajectory.DefaultMaxDist, "k-NN distance bound (m): cells farther than this are ignored", "run", "op knn")
	o.Bool(&j.verify, "verify", true, "check every answer against the brute-force reference", "run")
	o.Rate(&j.rate, "rate", "requests per second", "open loop: target requests per second over all clients of each phase (a write request is --batch records; a read request one query), latency measured from each request's intended start (0 = closed loop)", "run")
	declareRetry(o, &j.retry, "request (a write sends the same records again: refused where a record already stored is, as an insert into PostgreSQL; a query runs again)", "run")
	j.sharding.declare(o, "the random mode's clients and of --rate in run (clients [I·C/N, (I+1)·C/N), each writing and querying what that client of an unsharded run would; one --mode per sharded run, the sequential mode being one client; shard 0 empties the database with --reset before --start-at, and every shard waits for the whole dataset before its read phases), of the records in load (in batches of --batch: batch k is records k·batch..(k+1)·batch-1)", "run", "load")
	j.sharding.declareStart(o, "run")
	o.Int64(&j.x, "x", 0, "easting of the position (m, required)", "op distance", "op knn")
	o.Int64(&j.y, "y", 0, "northing of the position (m, required)", "op distance", "op knn")
	o.String(&j.triangle, "triangle", "", `vertices "x1,y1,x2,y2,x3,y3" in metres (required)`, "op range")
	o.String(&j.weekday, "weekday", "", "1-7 (Monday = 1) or a name: mon, monday... (required)", "op region")
	o.String(&j.slot, "slot", "", "5-minute slot 0-287, or a time HH:MM (required)", "op region")
	o.Int64(&j.index, "index", 0, "index of the first record, from 0 (required)", "op write")
	o.Int64(&j.count, "count", 1, "how many consecutive records", "op write")
	return j
}

func (j *trajectoryJob) Commands() []Command {
	query := func(name, short string) Command {
		return Command{Verb: "op " + name, Short: short, Run: func(ctx context.Context, env *Env) error { return j.runQueryOp(ctx, env, name) }}
	}
	return []Command{
		{
			Verb:  "generate",
			Short: "Write the trajectory dataset as CSV (records.csv, cells.csv) and the generation speed",
			Long: `generate writes records.csv (the study's 18 attributes, one location update
per user every 5 minutes for a week, in time order) and cells.csv (the city's
antenna sites) into --out, and prints how many records per second it made.`,
			Example: `  fieldbench generate trajectory --out data/            # 64,834 records
  fieldbench generate trajectory --scale 1 --out data/   # the study's 6,483,398`,
			Run: j.generate,
		},
		{
			Verb:  "load",
			Short: "Write the trajectory dataset into a database (sequentially, unmeasured) for 'op'",
			Long: `load writes the records of --scale and --seed into an empty database in
time order, --batch records per transaction, and prints the records per
second. 'run trajectory' measures writes itself; load is for trying queries
with 'op trajectory'. Without --db it creates a SQLite file in a new run
directory and prints its DSN.`,
			Example: `  fieldbench load trajectory --db sqlite:///tmp/traj.db --scale 0.05`,
			Run:     loadRun(j),
		},
		{
			Verb:  "run",
			Short: "Run the trajectory study: sequential and random writes, then distance, k-NN, range and region queries",
			Long: `run measures, for each mode (sequential: 1 client, in order; random: --clients
clients, shuffled), a write phase that inserts every record of the dataset
into an empty database (--batch records per request), then one read phase
per query type: --queries distinct queries, each sent --repeat times. Between
modes the database is emptied. Every answer is checked against the
brute-force reference (--verify). Throughput at the clients (requests/s,
and records/s of writes) and latency per request are recorded per phase.

Closed loop by default: each client sends its next request when the previous
one returns. --rate runs every phase open loop: the phase's requests are
meant to start at --rate per second over all its clients (the sequential
mode has one), a free client takes the next intended start, and every
latency figure (histograms, mean ± SD) counts from it, so a database slower
than the rate shows its backlog as latency instead of hiding it.

There is no --duration or --warmup: a run is a fixed amount of work (every
record written once per mode, every query sent --repeat times), not a span
of time, so each phase lasts as long as its requests take; and the study
measured every request of a phase, the first ones included, so none is set
aside as warm-up.

Results go to results/<time>-trajectory-<adapter>/: result.jsonl and
report.html.`,
			Example: `  fieldbench run trajectory                       # scale 0.01, both modes
  fieldbench run trajectory --scale 1 --mode random --clients 4
  fieldbench run trajectory --db sqlite:///tmp/t.db --reset --queries 50 --k 10
  fieldbench run trajectory --mode random --rate 200   # open loop, 200 requests/s`,
			Run:      j.run,
			Measured: true,
		},
		{
			Verb:  "op",
			Short: "Write records of the dataset, or run one trajectory query, and print the outcome as JSON lines",
			Long: `op write inserts records --index .. --index+--count-1 of the dataset of --scale
and --seed (the records a run writes at those indexes) as write requests of
up to 1000 records, and prints each one.

The queries run on the cells of the records in --db (load them with 'load
trajectory' or keep the database of a run). Coordinates are whole metres on the
city grid (easting, northing; cells.csv lists them); distances are planar.`,
			Example: `  fieldbench op trajectory write --db sqlite:///tmp/t.db --index 0 --count 3
  fieldbench op trajectory distance --db sqlite:///tmp/t.db --x 536000 --y 6224000 --radius 1000
  fieldbench op trajectory knn --db sqlite:///tmp/t.db --x 536000 --y 6224000 --k 5 --max-dist 2000
  fieldbench op trajectory range --db sqlite:///tmp/t.db --triangle 535000,6223000,537000,6223000,536000,6225000
  fieldbench op trajectory region --db sqlite:///tmp/t.db --weekday mon --slot 12:00`,
			Subs: []Command{
				{Verb: "op write", Short: "Insert records --index.. of the dataset (the ones a run writes there) and print each as a JSON line", Run: j.runWriteOp},
				query("distance", "Cells within --radius metres of (--x, --y), nearest first"),
				query("knn", "The --k cells nearest to (--x, --y) within --max-dist metres, nearest first, ties by cell id"),
				query("range", "Cells inside --triangle (edges and vertices included), by cell id"),
				query("region", "The cell with the most location updates at --weekday and --slot (ties: smallest id)"),
			},
		},
	}
}

// loading is what the trajectory load is made of (see runLoad). It
// leaves no record in its run directory: run measures the writes.
func (j *trajectoryJob) loading() loading {
	return loading{
		workload: trajectory.Name, datasetOpts: &j.datasetOpts, validate: j.validateWrite,
		checkShard: func(shard) error { return j.checkLoadShard() },
		next:       "query it with: fieldbench op trajectory region --db %s --weekday mon --slot 12:00",
	}
}

func (j *trajectoryJob) validate() error {
	if _, err := trajectory.RecordsForScale(j.scale); err != nil {
		return Usagef("--scale: %v", err)
	}
	return nil
}

func (j *trajectoryJob) validateWrite() error {
	if err := j.validate(); err != nil {
		return err
	}
	if j.batch < 1 {
		return Usagef("--batch must be at least 1 (got %d)", j.batch)
	}
	return nil
}

// validateRun checks the run's options besides the dataset and sets modes.
func (j *trajectoryJob) validateRun() error {
	modes, err := trajectory.ParseModes(j.mode)
	if err != nil {
		return Usage(err)
	}
	j.modes = modes
	switch {
	case j.clients < 1:
		return Usagef("--clients must be at least 1 (got %d)", j.clients)
	case j.queries < 1:
		return Usagef("--queries must be at least 1 (got %d)", j.queries)
	case j.repeat < 1:
		return Usagef("--repeat must be at least 1 (got %d)", j.repeat)
	case j.rate < 0 || math.IsNaN(j.rate) || math.IsInf(j.rate, 0):
		return Usagef("--rate must be a number of requests per second from 0 (closed loop) up (got %g)", j.rate)
	}
	for _, q := range []trajectory.Query{
		{Op: trajectory.OpDistance, Radius: j.radius},
		{Op: trajectory.OpKNN, K: j.k, MaxDist: j.maxDist},
	} {
		if err := q.Validate(); err != nil {
			return Usagef("%v", err)
		}
	}
	return nil
}

func (j *trajectoryJob) generator() (*trajectory.Generator, error) {
	g, err := trajectory.New(trajectory.Options{Scale: j.scale, Seed: j.seed})
	if err != nil {
		return nil, Usage(err)
	}
	return g, nil
}

func (j *trajectoryJob) generate(ctx context.Context, env *Env) error {
	if err := j.validate(); err != nil {
		return err
	}
	if j.out == "" {
		return Usagef("generate trajectory needs --out DIR")
	}
	t0 := time.Now()
	g, err := j.generator()
	if err != nil {
		return err
	}
	stop := heartbeat(env.Stderr, writtenSoFar(filepath.Join(j.out, trajectory.RecordsFile), filepath.Join(j.out, trajectory.CellsFile)))
	st, err := g.WriteCSV(ctx, j.out)
	stop()
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %s may hold part of the records", ErrInterrupted, j.out)
	}
	if err != nil {
		return err
	}
	d := time.Since(t0)
	fmt.Fprintf(env.Stdout, "wrote %s (%d records of %d users, %.1f MB) and %s (%d cells) to %s\n",
		trajectory.RecordsFile, st.Records, g.Users(), float64(st.RecordsBytes)/1e6, trajectory.CellsFile, st.Cells, j.out)
	fmt.Fprintf(env.Stdout, "generated in %.2fs: %.0f records/s\n", d.Seconds(), float64(st.Records)/d.Seconds())
	return nil
}

// trajBackend is db's trajectory backend, or a usage error naming dsn.
func trajBackend(db adapter.DB, dsn string) (trajectory.Backend, error) {
	b, err := adapter.Family[trajectory.Backend](db, dsn, trajectory.Name)
	return b, Usage(err)
}

// trajStore opens the trajectory store of db, refusing a database that
// already holds trajectory data unless reset is set (then it is emptied):
// the write phase measures inserts into an empty database. With reset
// the store is emptied without counting first: the count reads every
// row, and where a Cassandra keyspace's replication factor was just
// raised (rf: nodes, a step later) its rows sit on too few replicas, so
// that a QUORUM count set off read repairs and timed out on this machine.
func trajStore(ctx context.Context, stderr io.Writer, db adapter.DB, dsn string, reset bool) (trajectory.Store, error) {
	b, err := trajBackend(db, dsn)
	if err != nil {
		return nil, err
	}
	st, err := b.Trajectory(ctx)
	if err != nil {
		return nil, err
	}
	if reset {
		// Emptying can take minutes (replicating pouchdb-servers delete
		// document by document): say so before, and how long after.
		t0 := time.Now()
		fmt.Fprintln(stderr, "emptying the trajectory data already in the database (--reset)...")
		if err := st.Reset(ctx); err != nil {
			st.Close()
			return nil, err
		}
		fmt.Fprintf(stderr, "emptied in %v\n", time.Since(t0).Round(100*time.Millisecond))
		return st, nil
	}
	c, err := st.Counts(ctx)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("count stored trajectory data: %w", err)
	}
	if c.Records > 0 || c.Cells > 0 {
		st.Close()
		return nil, Usagef("%s already holds %d trajectory records: the write phase needs an empty database; pass --reset to delete them, or use a fresh database",
			redact.DSN(dsn), c.Records)
	}
	return st, nil
}

// loadInto writes every record of --scale and --seed into db, in time
// order, --batch records a request; db must hold none unless --reset
// (trajStore).
func (j *trajectoryJob) loadInto(ctx context.Context, env *Env, db adapter.DB, dsn string) (filled, error) {
	st, err := trajStore(ctx, env.Stderr, db, dsn, j.reset)
	if err != nil {
		return filled{}, err
	}
	f := filled{close: func() { st.Close() }}
	g, err := j.generator()
	if err != nil {
		return f, err
	}
	t0 := time.Now()
	if err := writeTrajRecords(ctx, env.Stderr, st, g, 0, g.Len(), j.batch); err != nil {
		return f, err
	}
	d := time.Since(t0)
	counts, err := st.Counts(ctx)
	if err != nil {
		return f, err
	}
	fmt.Fprintf(env.Stdout, "loaded %d records (%d cells) into %s in %.2fs: %.0f records/s\n",
		counts.Records, counts.Cells, redact.DSN(dsn), d.Seconds(), float64(counts.Records)/d.Seconds())
	return f, nil
}

// loadShard writes shard sh's part of the records: its share of the
// dataset's batches of --batch records, so the shards together write every
// record once. It neither checks nor empties the database: the other
// shards are writing into it.
func (j *trajectoryJob) loadShard(ctx context.Context, env *Env, sh shard) error {
	if err := j.checkLoadShard(); err != nil {
		return err
	}
	g, err := j.generator()
	if err != nil {
		return err
	}
	lo, hi := sh.loadShare(g.Len(), int64(j.batch))
	st, done, err := trajOpStore(ctx, j.db, OpenDB)
	if err != nil {
		return err
	}
	defer done()
	t0 := time.Now()
	if err := writeTrajRecords(ctx, env.Stderr, st, g, lo, hi, j.batch); err != nil {
		return err
	}
	d := time.Since(t0)
	fmt.Fprintf(env.Stdout, "shard %d/%d: loaded records %d..%d (%d of %d) into %s in %.2fs: %.0f records/s\n",
		sh.i, sh.n, lo, hi-1, hi-lo, g.Len(), redact.DSN(j.db), d.Seconds(), float64(hi-lo)/d.Seconds())
	return nil
}

// writeTrajRecords writes records [from, to) in requests of batch records,
// saying every 10 s how far it is on progress.
func writeTrajRecords(ctx context.Context, progress io.Writer, st trajectory.Store, g *trajectory.Generator, from, to int64, batch int) error {
	cur := g.NewCursor()
	buf := make([]trajectory.Record, batch)
	first := from
	var done atomic.Int64
	stop := heartbeat(progress, func() string { return fmt.Sprintf("loading: %d of %d records written", done.Load(), to-first) })
	defer stop()
	for from < to {
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		n := cur.Fill(from, buf[:min(int64(batch), to-from)])
		if n == 0 {
			return fmt.Errorf("record %d is past the end of the dataset (%d records)", from, g.Len())
		}
		if err := st.Write(ctx, buf[:n]); err != nil {
			return fmt.Errorf("write records %d-%d: %w", from, from+int64(n)-1, err)
		}
		from += int64(n)
		done.Store(from - first)
	}
	return nil
}

// runShard resolves run's shard options: a sharded run has one mode, the
// random one when it has more than one shard (the sequential mode is a
// single client in order), a shared --db and a --start-at before which
// shard 0 empties the database.
func (j *trajectoryJob) runShard() (shard, time.Time, error) {
	sh, at, err := j.sharding.resolve(j.db)
	if err != nil || !sh.sharded() {
		return sh, at, err
	}
	switch {
	case len(j.modes) != 1:
		return sh, at, Usagef("a sharded trajectory run has one --mode (the modes empty the database in between, which shards cannot do together): run --mode sequential on one machine, then --mode random over the shards")
	case j.modes[0] == trajectory.Sequential:
		return sh, at, Usagef("the sequential mode is one client sending in order (the study's one load generator): run it unsharded; shard --mode random")
	case at.IsZero():
		return sh, at, Usagef("a sharded trajectory run needs --start-at: shard 0 empties the database (--reset) before that time and every shard starts writing at it")
	}
	if _, _, err := sh.everyShare(j.clients, "clients", "--clients"); err != nil {
		return sh, at, err
	}
	return sh, at, nil
}

// checkLoadShard refuses what a sharded load cannot do.
func (j *trajectoryJob) checkLoadShard() error {
	if j.reset {
		return Usagef("--reset with --shard would delete the other shards' records: empty the database once before the shards load")
	}
	return nil
}

// waitForRecords waits until the store holds every record of the dataset
// (the other shards' writes).
func (j *trajectoryJob) waitForRecords(ctx context.Context, w io.Writer, store trajectory.Store, want int64) error {
	return pollFor(ctx, w, shardWaitLimit, 100*time.Millisecond, "the other shards to write their records", func(ctx context.Context) (bool, error) {
		c, err := store.Counts(ctx)
		return err == nil && c.Records >= want, err
	})
}

// Traits: a rate-search step is a run on a database emptied first (--reset)
// whose read phases are repeated (--repeat) until the mode's requests, its
// write phase included, take about the step at the rate; a write phase
// longer than that makes a longer step. Every phase runs at the rate, so
// the rate found is the one all of them sustain.
func (j *trajectoryJob) Traits() Traits {
	return Traits{SizeStep: func(rate float64, d time.Duration) map[string]string {
		modes, err := trajectory.ParseModes(j.mode)
		records, rerr := trajectory.RecordsForScale(j.scale)
		repeat := int64(1)
		if err == nil && rerr == nil && j.batch > 0 && j.queries > 0 {
			writes := (records + int64(j.batch) - 1) / int64(j.batch)
			reads := workFor(rate, d, 0)/int64(len(modes)) - writes
			repeat = max(1, int64(math.Round(float64(reads)/float64(len(trajectory.QueryOps)*j.queries))))
		}
		return map[string]string{"reset": "true", "repeat": strconv.FormatInt(repeat, 10)}
	}, Phased: true}
}

// CheckRun checks the run's options before anything starts (RunChecker).
func (j *trajectoryJob) CheckRun() error {
	if err := j.validateWrite(); err != nil {
		return err
	}
	if err := j.validateRun(); err != nil {
		return err
	}
	_, _, err := j.runShard()
	return err
}
