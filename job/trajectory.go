package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/recorder"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/runner"
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
	db      string
	scale   float64
	seed    int64
	results string
	out     string
	batch   int
	reset   bool
	// The run.
	mode     string
	modes    []trajectory.Mode
	clients  int
	queries  int
	repeat   int
	radius   int64
	k        int
	maxDist  int64
	verify   bool
	rate     float64
	sharding shardFlags
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
	o.Float64(&j.rate, "rate", 0, "open loop: target requests per second over all clients of each phase (a write request is --batch records; a read request one query), latency measured from each request's intended start (0 = closed loop)", "run")
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
			Run:     j.load,
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
	st, err := g.WriteCSV(ctx, j.out)
	if ctx.Err() != nil {
		return ErrInterrupted
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
// the write phase measures inserts into an empty database.
func trajStore(ctx context.Context, db adapter.DB, dsn string, reset bool) (trajectory.Store, error) {
	b, err := trajBackend(db, dsn)
	if err != nil {
		return nil, err
	}
	st, err := b.Trajectory(ctx)
	if err != nil {
		return nil, err
	}
	c, err := st.Counts(ctx)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("count stored trajectory data: %w", err)
	}
	if c.Records > 0 || c.Cells > 0 {
		if !reset {
			st.Close()
			return nil, Usagef("%s already holds %d trajectory records: the write phase needs an empty database; pass --reset to delete them, or use a fresh database",
				adapter.Redact(dsn), c.Records)
		}
		if err := st.Reset(ctx); err != nil {
			st.Close()
			return nil, err
		}
	}
	return st, nil
}

func (j *trajectoryJob) load(ctx context.Context, env *Env) error {
	if err := j.validateWrite(); err != nil {
		return err
	}
	sh, _, err := j.sharding.resolve(j.db)
	if err != nil {
		return err
	}
	if sh.sharded() {
		return j.loadShard(ctx, env, sh)
	}
	dsn := j.db
	if dsn == "" {
		dir, err := NewRunDir(j.results, trajectory.Name+"-load", "sqlite", time.Now())
		if err != nil {
			return err
		}
		dsn = DefaultSQLite(dir, trajectory.Name)
	}
	_, db, err := OpenDB(ctx, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	st, err := trajStore(ctx, db, dsn, j.reset)
	if err != nil {
		return err
	}
	defer st.Close()
	g, err := j.generator()
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := writeTrajRecords(ctx, st, g, 0, g.Len(), j.batch); err != nil {
		return err
	}
	d := time.Since(t0)
	counts, err := st.Counts(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "loaded %d records (%d cells) into %s in %.2fs: %.0f records/s\n",
		counts.Records, counts.Cells, adapter.Redact(dsn), d.Seconds(), float64(counts.Records)/d.Seconds())
	if j.db == "" {
		fmt.Fprintf(env.Stdout, "query it with: fieldbench op trajectory region --db %s --weekday mon --slot 12:00\n", dsn)
	}
	return nil
}

// loadShard writes shard sh's part of the records: its share of the
// dataset's batches of --batch records, so the shards together write every
// record once. It neither checks nor empties the database: the other
// shards are writing into it.
func (j *trajectoryJob) loadShard(ctx context.Context, env *Env, sh shard) error {
	if j.reset {
		return Usagef("--reset with --shard would delete the other shards' records: empty the database once before the shards load")
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
	if err := writeTrajRecords(ctx, st, g, lo, hi, j.batch); err != nil {
		return err
	}
	d := time.Since(t0)
	fmt.Fprintf(env.Stdout, "shard %d/%d: loaded records %d..%d (%d of %d) into %s in %.2fs: %.0f records/s\n",
		sh.i, sh.n, lo, hi-1, hi-lo, g.Len(), adapter.Redact(j.db), d.Seconds(), float64(hi-lo)/d.Seconds())
	return nil
}

// writeTrajRecords writes records [from, to) in requests of batch records.
func writeTrajRecords(ctx context.Context, st trajectory.Store, g *trajectory.Generator, from, to int64, batch int) error {
	cur := g.NewCursor()
	buf := make([]trajectory.Record, batch)
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
	}
	return nil
}

// trajPhaseResult is what one phase measured.
type trajPhaseResult struct {
	elapsed     time.Duration
	requests    int64
	records     int64
	stats       trajectory.Stats
	interrupted bool
}

// trajClient is a write or read client of one phase: it knows how many
// requests its share is.
type trajClient interface {
	runner.Worker
	Requests() int64
}

// trajRunPhase runs one phase: every client its own share of the requests,
// all at once, closed loop or open loop at rate requests per second (see
// runner.Shares), through guard (the session's outage bound). started is
// told the phase's requests just before it starts.
func trajRunPhase[C trajClient](ctx context.Context, clients []C, handles []*recorder.Handle, rate float64, guard func([]runner.Worker) []runner.Worker, started func(requests int64)) trajPhaseResult {
	ws, counts := make([]runner.Worker, len(clients)), make([]int64, len(clients))
	var r trajPhaseResult
	for i, c := range clients {
		ws[i], counts[i] = c, c.Requests()
		r.requests += c.Requests()
	}
	started(r.requests)
	r.elapsed, r.interrupted = runner.Shares(ctx, guard(ws), handles, counts, rate)
	return r
}

func (j *trajectoryJob) run(ctx context.Context, env *Env) (err error) {
	if err := j.validateWrite(); err != nil {
		return err
	}
	if err := j.validateRun(); err != nil {
		return err
	}
	sh, startAt, err := j.runShard()
	if err != nil {
		return err
	}
	lo, hi := sh.share(j.clients)
	stderr := env.Stderr
	dir, dsn, err := runDirFor(j.results, trajectory.Name, trajectory.Name, j.db)
	if err != nil {
		return err
	}
	defer removeIfEmpty(dir)
	started := false
	defer func() {
		if !started { // refused before measuring: leave no half-made run
			os.RemoveAll(dir)
		}
	}()
	a, db, err := OpenDB(ctx, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := verifiable(a, j.verify); err != nil {
		return err
	}
	var store trajectory.Store
	if sh.i == 0 {
		store, err = trajStore(ctx, db, dsn, j.reset)
		if err == nil && sh.sharded() && time.Now().After(startAt) {
			store.Close()
			return fmt.Errorf("shard 0 emptied the database after --start-at: the other shards may have written before, so the write phase would not start from an empty database; choose a later --start-at")
		}
	} else {
		// The other shards neither check nor empty it: shard 0 does.
		var b trajectory.Backend
		if b, err = trajBackend(db, dsn); err == nil {
			store, err = b.Trajectory(ctx)
		}
	}
	if err != nil {
		return err
	}
	defer store.Close()
	g, err := j.generator()
	if err != nil {
		return err
	}

	// The read phases' parameters, and their reference answers.
	qopts := trajectory.QueryOptions{N: j.queries, Radius: j.radius, K: j.k, MaxDist: j.maxDist, Seed: j.seed}
	lists := map[int][]trajectory.Query{}
	wants := map[int][]trajectory.Answer{}
	for op := trajectory.OpDistance; op <= trajectory.OpRegion; op++ {
		lists[op] = trajectory.MakeQueries(g.City(), op, qopts)
	}
	if j.verify {
		t0 := time.Now()
		ref, err := trajectory.OracleFor(ctx, g)
		if err != nil {
			return ErrInterrupted
		}
		for op, list := range lists {
			for _, q := range list {
				wants[op] = append(wants[op], ref.Answer(q))
			}
		}
		if d := time.Since(t0); d > 2*time.Second {
			fmt.Fprintf(stderr, "computed the reference answers in %s\n", d.Round(time.Millisecond))
		}
	}

	info, err := db.Info(ctx)
	if err != nil {
		return fmt.Errorf("read database version: %w", err)
	}
	modeNames := make([]string, len(j.modes))
	for i, m := range j.modes {
		modeNames[i] = string(m)
	}
	h := newHeader(env, trajectory.Name, a, info, dsn, j.seed, trajectory.Ops)
	h.Options = map[string]any{
		"scale": j.scale, "seed": j.seed, "records": g.Len(), "users": g.Users(), "cells": len(g.City().Cells),
		"mode": strings.Join(modeNames, ","), "clients": j.clients, "batch": j.batch,
		"queries": j.queries, "repeat": j.repeat, "radius_m": j.radius, "k": j.k, "max_dist_m": j.maxDist,
		"verify": j.verify, "metric": "planar euclidean on easting/northing (m)",
		"rate": j.rate, "loop": loopName(j.rate),
	}
	sh.record(&h, "clients", lo, hi)
	h.Series = map[string]result.SeriesMeta{
		trajSeriesThroughput: {Title: "Throughput at the clients per request type and mode", XLabel: "mode and request type", YLabel: "throughput (requests/s)"},
		trajSeriesRecords:    {Title: "Write throughput in records", XLabel: "mode", YLabel: "throughput (records/s)"},
		trajSeriesLatency:    {Title: "Latency per request (mean ± SD)", XLabel: "mode and request type", YLabel: "latency (ms)", Band: "sd"},
	}
	if err := startTogether(ctx, &h, startAt, func(s string) { fmt.Fprint(stderr, s) }); err != nil {
		return err
	}
	s, err := startRun(ctx, env, dir, h, db)
	if err != nil {
		return err
	}
	started = true
	markStartLate(s, startAt)
	s.SetExtra("records", float64(g.Len()))
	s.SetExtra("users", float64(g.Users()))
	s.SetExtra("cells", float64(len(g.City().Cells)))
	fmt.Fprintf(stderr, "running trajectory on %s %s: %d records (scale %g), modes %s, %d random clients, batch %d, %d queries x %d per type, %s loop\n",
		info.Name, info.Version, g.Len(), j.scale, strings.Join(modeNames, "+"), j.clients, j.batch, j.queries, j.repeat, loopName(j.rate))

	// A shard runs its clients of every phase (the same records and
	// queries as those clients of an unsharded run) at its share of --rate.
	handles := make([]*recorder.Handle, hi-lo)
	for i := range handles {
		handles[i] = s.rec.Handle()
	}
	rate := j.rate
	if sh.sharded() {
		rate = j.rate * float64(hi-lo) / float64(j.clients)
	}
	clock, prog := s.startClock(0)
	var failed []string
	var wrong []*trajectory.WrongAnswer
	interrupted := false
	record := func(mode trajectory.Mode, op int, x float64, r trajPhaseResult) error {
		cat := string(mode) + " " + trajectory.Ops[op]
		labels := func() map[string]string {
			return map[string]string{"category": cat, "mode": string(mode), "op": trajectory.Ops[op]}
		}
		secs := r.elapsed.Seconds()
		fail := ""
		if r.stats.Errors > 0 {
			fail = fmt.Sprintf("%d of %d requests failed: %v", r.stats.Errors, r.requests, r.stats.FirstErr)
			failed = append(failed, cat+": "+fail)
		}
		if r.interrupted {
			fail = "interrupted"
		}
		mean, sd := r.stats.MeanSD()
		key := string(mode) + "_" + trajectory.Ops[op]
		s.SetExtra(key+"_requests_per_sec", float64(r.requests)/secs)
		s.SetExtra(key+"_mean_latency_ms", mean*1e3)
		pts := []result.Point{
			{Series: trajSeriesThroughput, X: x, Y: float64(r.requests) / secs, N: int(r.requests), Failed: fail, Labels: labels()},
			{Series: trajSeriesLatency, X: x, Y: mean * 1e3, SD: sd * 1e3, N: int(r.stats.N), Failed: fail, Labels: labels()},
		}
		if op == trajectory.OpWrite {
			s.SetExtra(key+"_records_per_sec", float64(r.records)/secs)
			s.SetExtra(key+"_seconds", secs)
			pts = append(pts, result.Point{Series: trajSeriesRecords, X: x, Y: float64(r.records) / secs, N: int(r.records), Failed: fail, Labels: labels()})
		}
		for _, p := range pts {
			if err := s.Point(p); err != nil {
				return err
			}
		}
		return nil
	}

	var runErr error
phases:
	for mi, mode := range j.modes {
		if mi > 0 {
			if runErr = store.Reset(ctx); runErr != nil {
				break
			}
			_ = s.Event("reset", "database emptied for the "+string(mode)+" write phase")
		}
		// Write phase.
		wcs, err := trajectory.WriteClients(store, g, mode, j.clients, j.batch, j.seed)
		if err != nil {
			runErr = err
			break
		}
		if sh.sharded() {
			wcs = wcs[lo:hi]
		}
		x := s.Since()
		r := trajRunPhase(ctx, wcs, handles, rate, s.outage.guard, func(requests int64) {
			_ = s.Event(string(mode)+" write", fmt.Sprintf("%d records, %d client(s), %d requests of up to %d", g.Len(), len(wcs), requests, j.batch))
		})
		for _, c := range wcs {
			r.stats.Merge(&c.Stats)
			r.records += c.Records()
		}
		if runErr = record(mode, trajectory.OpWrite, x, r); runErr != nil || r.interrupted {
			interrupted = r.interrupted
			break
		}
		fmt.Fprintf(stderr, "%s write: %d records in %.2fs, %.0f records/s\n", mode, r.records, r.elapsed.Seconds(), float64(r.records)/r.elapsed.Seconds())
		if sh.sharded() {
			// The queries' answers are those of the whole dataset: wait
			// until every shard has written its records.
			if runErr = j.waitForRecords(ctx, stderr, store, g.Len()); runErr != nil {
				break
			}
			_ = s.Event("shards written", "every shard's records are in the database")
		}

		// Read phases, one per query type.
		for op := trajectory.OpDistance; op <= trajectory.OpRegion; op++ {
			rcs, err := trajectory.ReadClients(store, lists[op], wants[op], mode, j.clients, j.repeat, j.seed*31+int64(op))
			if err != nil {
				runErr = err
				break phases
			}
			if sh.sharded() {
				rcs = rcs[lo:hi]
			}
			x := s.Since()
			r := trajRunPhase(ctx, rcs, handles, rate, s.outage.guard, func(requests int64) {
				_ = s.Event(string(mode)+" "+trajectory.Ops[op], fmt.Sprintf("%d requests, %d client(s)", requests, len(rcs)))
			})
			for _, c := range rcs {
				r.stats.Merge(&c.Stats)
				wrong = append(wrong, c.Wrong...)
			}
			if runErr = record(mode, op, x, r); runErr != nil || r.interrupted {
				interrupted = r.interrupted
				break phases
			}
		}
	}
	runErr = errors.Join(runErr, stopClock(clock, prog), env.observer().Ended())
	dctx, cancel := Detached(ctx, 30*time.Second)
	defer cancel()
	if c, err := store.Counts(dctx); err == nil {
		s.SetExtra("stored_records", float64(c.Records))
		s.SetExtra("stored_cells", float64(c.Cells))
	}
	if sz, ok := db.(adapter.Sizer); ok {
		if n, err := sz.SizeBytes(dctx); err == nil {
			s.SetExtra("db_size_bytes", float64(n))
		}
	}
	if interrupted {
		_ = s.Event("interrupted", fmt.Sprintf("after %.1fs", s.Since()))
	}
	if err := errors.Join(runErr, s.Finish(interrupted)); err != nil {
		return err
	}
	if interrupted {
		return ErrInterrupted
	}
	if len(failed) > 0 {
		msg := strings.Join(failed, "\n  ")
		if len(wrong) > 0 {
			msg += fmt.Sprintf("\n  first wrong answer: %v", wrong[0])
		}
		return fmt.Errorf("some requests failed (their latencies are not in the figures):\n  %s", msg)
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
	if lo, hi := sh.share(j.clients); lo == hi {
		return sh, at, Usagef("shard %d/%d: %d clients leave it none (give at least --clients %d)", sh.i, sh.n, j.clients, sh.n)
	}
	return sh, at, nil
}

// waitForRecords waits until the store holds every record of the dataset
// (the other shards' writes).
func (j *trajectoryJob) waitForRecords(ctx context.Context, w io.Writer, store trajectory.Store, want int64) error {
	return pollFor(ctx, w, shardWaitLimit, 100*time.Millisecond, "the other shards to write their records", func(ctx context.Context) (bool, error) {
		c, err := store.Counts(ctx)
		return err == nil && c.Records >= want, err
	})
}

// trajOpStore opens the trajectory store of --db for op.
func trajOpStore(ctx context.Context, dsn string, open func(context.Context, string) (adapter.Adapter, adapter.DB, error)) (trajectory.Store, func(), error) {
	_, db, err := open(ctx, dsn)
	if err != nil {
		return nil, nil, err
	}
	b, err := trajBackend(db, dsn)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	st, err := b.Trajectory(ctx)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return st, func() { st.Close(); db.Close() }, nil
}

// trajOpHit is one cell of a spatial answer as op prints it.
type trajOpHit struct {
	trajectory.Hit
	DistM *float64 `json:"dist_m,omitempty"`
}

// runQueryOp runs query name (distance, knn, range or region) once.
func (j *trajectoryJob) runQueryOp(ctx context.Context, env *Env, name string) error {
	op, _ := trajectory.ParseQueryOp(name)
	q := trajectory.Query{Op: op, At: trajectory.Point{X: j.x, Y: j.y}, Radius: j.radius, K: j.k, MaxDist: j.maxDist}
	if j.db == "" {
		return Usagef("op needs --db (the database to query), e.g. --db sqlite:///tmp/traj.db")
	}
	switch q.Op {
	case trajectory.OpDistance, trajectory.OpKNN:
		if !j.opts.Changed("x") || !j.opts.Changed("y") {
			return Usagef("op trajectory %s needs --x and --y (easting and northing in metres)", trajectory.Ops[q.Op])
		}
	case trajectory.OpRange:
		if j.triangle == "" {
			return Usagef(`op trajectory range needs --triangle "x1,y1,x2,y2,x3,y3"`)
		}
		t, err := trajectory.ParseTriangle(j.triangle)
		if err != nil {
			return Usagef("--triangle: %v", err)
		}
		q.Tri = t
	case trajectory.OpRegion:
		if j.weekday == "" || j.slot == "" {
			return Usagef("op trajectory region needs --weekday and --slot")
		}
		d, err := trajectory.ParseWeekday(j.weekday)
		if err != nil {
			return Usagef("--weekday: %v", err)
		}
		sl, err := trajectory.ParseSlot(j.slot)
		if err != nil {
			return Usagef("--slot: %v", err)
		}
		q.Day, q.Slot = d, sl
	}
	if err := q.Validate(); err != nil {
		return Usagef("%v", err)
	}
	st, done, err := trajOpStore(ctx, j.db, openExisting(trajectory.Name, "trajectory data"))
	if err != nil {
		return err
	}
	defer done()
	if c, err := st.Counts(ctx); err != nil {
		return err
	} else if c.Records == 0 {
		return Usagef("%s holds no trajectory data: load it first with 'fieldbench load trajectory --db %s'", adapter.Redact(j.db), adapter.Redact(j.db))
	}
	ans, err := q.Run(ctx, st)
	if err != nil {
		return fmt.Errorf("%s: %w", trajectory.Ops[q.Op], err)
	}
	return printTrajectoryAnswer(env.Stdout, env.Stderr, q, ans)
}

func printTrajectoryAnswer(w, stderr io.Writer, q trajectory.Query, a trajectory.Answer) error {
	enc := json.NewEncoder(w)
	if q.Op == trajectory.OpRegion {
		if !a.Found {
			fmt.Fprintf(stderr, "no location updates on %s at %s\n", q.Day, trajectory.SlotClock(q.Slot))
			return nil
		}
		return enc.Encode(struct {
			trajectory.Busiest
			Weekday string `json:"weekday"`
			Slot    int    `json:"slot"`
			Time    string `json:"time"`
		}{a.Busiest, q.Day.String(), q.Slot, trajectory.SlotClock(q.Slot)})
	}
	for _, h := range a.Hits {
		out := trajOpHit{Hit: h}
		if q.Op != trajectory.OpRange {
			d := math.Round(math.Sqrt(float64(trajectory.Dist2(q.At, h.Pos())))*10) / 10
			out.DistM = &d
		}
		if err := enc.Encode(out); err != nil {
			return err
		}
	}
	if len(a.Hits) == 0 {
		fmt.Fprintln(stderr, "no cell matches")
	}
	return nil
}

// trajOpWriteBatch is the most records op write sends in one write request.
const trajOpWriteBatch = trajectory.DefaultBatch

// trajOpRecord is a record as op write prints it: its index in the dataset
// and the study's 18 attributes, named like the columns of records.csv.
type trajOpRecord struct {
	Index        int64   `json:"index"`
	UserID       int64   `json:"user_id"`
	SiteID       int64   `json:"site_id"`
	Weekday      string  `json:"weekday"`
	Time         string  `json:"time"`
	ProfileID    int16   `json:"profile_id"`
	SegmentID    int16   `json:"segment_id"`
	GSM          bool    `json:"gsm"`
	UMTS         bool    `json:"umts"`
	LTE          bool    `json:"lte"`
	Easting      int64   `json:"easting"`
	Northing     int64   `json:"northing"`
	Latitude     float64 `json:"latitude"`
	Longitude    float64 `json:"longitude"`
	Municipality string  `json:"cell_municipality"`
	County       string  `json:"cell_county"`
	City         string  `json:"cell_city"`
	Postcode     string  `json:"cell_postcode"`
	Address      string  `json:"cell_address"`
}

func newTrajOpRecord(i int64, r *trajectory.Record) trajOpRecord {
	c := r.Cell
	return trajOpRecord{
		Index: i, UserID: r.User, SiteID: c.ID, Weekday: r.Weekday.String(), Time: r.Clock(),
		ProfileID: r.Profile, SegmentID: r.Segment, GSM: r.GSM(), UMTS: r.UMTS(), LTE: r.LTE(),
		Easting: c.Easting, Northing: c.Northing, Latitude: c.Lat, Longitude: c.Lon,
		Municipality: c.Municipality, County: c.County, City: c.City, Postcode: c.Postcode, Address: c.Address,
	}
}

// runWriteOp inserts records --index..--index+--count-1 and prints each.
func (j *trajectoryJob) runWriteOp(ctx context.Context, env *Env) error {
	if j.db == "" {
		return Usagef("op needs --db (the database to write to), e.g. --db sqlite:///tmp/traj.db")
	}
	n, err := trajectory.RecordsForScale(j.scale)
	if err != nil {
		return Usagef("--scale: %v", err)
	}
	if !j.opts.Changed("index") {
		return Usagef("op trajectory write needs --index (the first record, 0 to %d at --scale %g)", n-1, j.scale)
	}
	switch {
	case j.count < 1:
		return Usagef("--count must be at least 1 (got %d)", j.count)
	case j.index < 0 || j.index >= n:
		return Usagef("--index must be from 0 to %d at --scale %g (%d records; got %d)", n-1, j.scale, n, j.index)
	case j.count > n-j.index:
		return Usagef("--index %d --count %d goes past the last record %d at --scale %g: --count must be at most %d",
			j.index, j.count, n-1, j.scale, n-j.index)
	}
	st, done, err := trajOpStore(ctx, j.db, OpenDB)
	if err != nil {
		return err
	}
	defer done()
	g, err := j.generator()
	if err != nil {
		return err
	}
	cur := g.NewCursor()
	buf := make([]trajectory.Record, min(j.count, trajOpWriteBatch))
	enc := json.NewEncoder(env.Stdout)
	end := j.index + j.count
	for from := j.index; from < end; {
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		k := cur.Fill(from, buf[:min(int64(len(buf)), end-from)])
		if k == 0 { // cannot happen after the checks above; never loop forever
			return fmt.Errorf("record %d is past the end of the dataset (%d records)", from, g.Len())
		}
		if err := st.Write(ctx, buf[:k]); err != nil {
			return fmt.Errorf("write records %d-%d: %w", from, from+int64(k)-1, err)
		}
		for i := range k {
			if err := enc.Encode(newTrajOpRecord(from+int64(i), &buf[i])); err != nil {
				return err
			}
		}
		from += int64(k)
	}
	return nil
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
