package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/recorder"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/runner"
	"github.com/fieldbench/fieldbench/workload/trajectory"
)

func init() {
	registerWorkloadCmd("generate", newTrajectoryGenerateCmd)
	registerWorkloadCmd("load", newTrajectoryLoadCmd)
	registerWorkloadCmd("run", newTrajectoryRunCmd)
	registerWorkloadCmd("op", newTrajectoryOpCmd)
}

// Point series a trajectory run writes (declared in its header).
const (
	trajSeriesThroughput = "trajectory-throughput"
	trajSeriesRecords    = "trajectory-write-records"
	trajSeriesLatency    = "trajectory-latency"
)

// trajData are the flags that identify a trajectory dataset and database.
type trajData struct {
	db      string
	scale   float64
	seed    int64
	results string
	batch   int
	reset   bool
}

func (f *trajData) bind(c *cobra.Command, withDB bool) {
	if withDB {
		c.Flags().StringVar(&f.db, "db", "", "database DSN, e.g. sqlite:///tmp/traj.db (default: a new SQLite file in the run directory)")
	}
	c.Flags().Float64Var(&f.scale, "scale", trajectory.DefaultScale, "dataset size: round(scale x 6,483,397.5) records; 1, 2 and 4 are the study's three datasets")
	c.Flags().Int64Var(&f.seed, "seed", 1, "seed of the city, the users, the random orders and the query parameters")
}

func (f *trajData) bindWrite(c *cobra.Command) {
	c.Flags().IntVar(&f.batch, "batch", trajectory.DefaultBatch, "records per write request (one transaction)")
	c.Flags().BoolVar(&f.reset, "reset", false, "delete trajectory data already in --db instead of refusing")
	c.Flags().StringVar(&f.results, "results", "results", "directory under which the run directory is created")
}

func (f *trajData) validate() error {
	if _, err := trajectory.RecordsForScale(f.scale); err != nil {
		return usagef("--scale: %v", err)
	}
	return nil
}

func (f *trajData) validateWrite() error {
	if err := f.validate(); err != nil {
		return err
	}
	if f.batch < 1 {
		return usagef("--batch must be at least 1 (got %d)", f.batch)
	}
	return nil
}

func (f *trajData) generator() (*trajectory.Generator, error) {
	g, err := trajectory.New(trajectory.Options{Scale: f.scale, Seed: f.seed})
	if err != nil {
		return nil, job.Usage(err)
	}
	return g, nil
}

func newTrajectoryGenerateCmd() *cobra.Command {
	var f trajData
	var out string
	c := &cobra.Command{
		Use:   "trajectory",
		Short: "Write the trajectory dataset as CSV (records.csv, cells.csv) and the generation speed",
		Long: `generate writes records.csv (the study's 18 attributes, one location update
per user every 5 minutes for a week, in time order) and cells.csv (the city's
antenna sites) into --out, and prints how many records per second it made.`,
		Example: `  fieldbench generate trajectory --out data/            # 64,834 records
  fieldbench generate trajectory --scale 1 --out data/   # the study's 6,483,398`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			if out == "" {
				return usagef("generate trajectory needs --out DIR")
			}
			t0 := time.Now()
			g, err := f.generator()
			if err != nil {
				return err
			}
			st, err := g.WriteCSV(cmd.Context(), out)
			if cmd.Context().Err() != nil {
				return errInterrupted
			}
			if err != nil {
				return err
			}
			d := time.Since(t0)
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d records of %d users, %.1f MB) and %s (%d cells) to %s\n",
				trajectory.RecordsFile, st.Records, g.Users(), float64(st.RecordsBytes)/1e6, trajectory.CellsFile, st.Cells, out)
			fmt.Fprintf(cmd.OutOrStdout(), "generated in %.2fs: %.0f records/s\n", d.Seconds(), float64(st.Records)/d.Seconds())
			return nil
		},
	}
	f.bind(c, false)
	c.Flags().StringVar(&out, "out", "", "directory to write the CSV files to (required)")
	return c
}

// trajStore opens the trajectory store of db, refusing a database that
// already holds trajectory data unless reset is set (then it is emptied).
func trajStore(ctx context.Context, db adapter.DB, dsn string, reset bool) (trajectory.Store, error) {
	b, ok := db.(trajectory.Backend)
	if !ok {
		return nil, usagef("the adapter for %s does not support the trajectory workload", adapter.Redact(dsn))
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
			return nil, usagef("%s already holds %d trajectory records: the write phase needs an empty database; pass --reset to delete them, or use a fresh database",
				adapter.Redact(dsn), c.Records)
		}
		if err := st.Reset(ctx); err != nil {
			st.Close()
			return nil, err
		}
	}
	return st, nil
}

func newTrajectoryLoadCmd() *cobra.Command {
	var f trajData
	c := &cobra.Command{
		Use:   "trajectory",
		Short: "Write the trajectory dataset into a database (sequentially, unmeasured) for 'op'",
		Long: `load writes the records of --scale and --seed into an empty database in
time order, --batch records per transaction, and prints the records per
second. 'run trajectory' measures writes itself; load is for trying queries
with 'op trajectory'. Without --db it creates a SQLite file in a new run
directory and prints its DSN.`,
		Example: `  fieldbench load trajectory --db sqlite:///tmp/traj.db --scale 0.05`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.validateWrite(); err != nil {
				return err
			}
			ctx := cmd.Context()
			dsn := f.db
			if dsn == "" {
				dir, err := newRunDir(f.results, trajectory.Name+"-load", "sqlite", time.Now())
				if err != nil {
					return err
				}
				dsn = defaultSQLite(dir, trajectory.Name)
			}
			_, db, err := openDB(ctx, dsn)
			if err != nil {
				return err
			}
			defer db.Close()
			st, err := trajStore(ctx, db, dsn, f.reset)
			if err != nil {
				return err
			}
			defer st.Close()
			g, err := f.generator()
			if err != nil {
				return err
			}
			cur := g.NewCursor()
			buf := make([]trajectory.Record, f.batch)
			t0 := time.Now()
			for from := int64(0); from < g.Len(); {
				if ctx.Err() != nil {
					return errInterrupted
				}
				n := cur.Fill(from, buf)
				if err := st.Write(ctx, buf[:n]); err != nil {
					return fmt.Errorf("write records %d-%d: %w", from, from+int64(n)-1, err)
				}
				from += int64(n)
			}
			d := time.Since(t0)
			counts, err := st.Counts(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "loaded %d records (%d cells) into %s in %.2fs: %.0f records/s\n",
				counts.Records, counts.Cells, adapter.Redact(dsn), d.Seconds(), float64(counts.Records)/d.Seconds())
			if f.db == "" {
				fmt.Fprintf(cmd.OutOrStdout(), "query it with: fieldbench op trajectory region --db %s --weekday mon --slot 12:00\n", dsn)
			}
			return nil
		},
	}
	f.bind(c, true)
	f.bindWrite(c)
	return c
}

// trajRunOpts are the run's options besides the dataset.
type trajRunOpts struct {
	mode    string
	modes   []trajectory.Mode
	clients int
	queries int
	repeat  int
	radius  int64
	k       int
	maxDist int64
	verify  bool
}

func (o *trajRunOpts) validate() error {
	modes, err := trajectory.ParseModes(o.mode)
	if err != nil {
		return job.Usage(err)
	}
	o.modes = modes
	switch {
	case o.clients < 1:
		return usagef("--clients must be at least 1 (got %d)", o.clients)
	case o.queries < 1:
		return usagef("--queries must be at least 1 (got %d)", o.queries)
	case o.repeat < 1:
		return usagef("--repeat must be at least 1 (got %d)", o.repeat)
	}
	for _, q := range []trajectory.Query{
		{Op: trajectory.OpDistance, Radius: o.radius},
		{Op: trajectory.OpKNN, K: o.k, MaxDist: o.maxDist},
	} {
		if err := q.Validate(); err != nil {
			return usagef("%v", err)
		}
	}
	return nil
}

func newTrajectoryRunCmd() *cobra.Command {
	var f trajData
	var o trajRunOpts
	c := &cobra.Command{
		Use:   "trajectory",
		Short: "Run the trajectory study: sequential and random writes, then distance, k-NN, range and region queries",
		Long: `run measures, for each mode (sequential: 1 client, in order; random: --clients
clients, shuffled), a write phase that inserts every record of the dataset
into an empty database (--batch records per request), then one read phase
per query type: --queries distinct queries, each sent --repeat times. Between
modes the database is emptied. Every answer is checked against the
brute-force reference (--verify). Throughput at the clients (requests/s,
and records/s of writes) and latency per request are recorded per phase.

Results go to results/<time>-trajectory-<adapter>/: result.jsonl and
report.html.`,
		Example: `  fieldbench run trajectory                       # scale 0.01, both modes
  fieldbench run trajectory --scale 1 --mode random --clients 4
  fieldbench run trajectory --db sqlite:///tmp/t.db --reset --queries 50 --k 10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.validateWrite(); err != nil {
				return err
			}
			if err := o.validate(); err != nil {
				return err
			}
			return runTrajectory(cmd, f, o)
		},
	}
	f.bind(c, true)
	f.bindWrite(c)
	c.Flags().StringVar(&o.mode, "mode", "both", "sequential, random or both")
	c.Flags().IntVar(&o.clients, "clients", trajectory.DefaultRandomClients, "clients of the random mode (sequential uses 1)")
	c.Flags().IntVar(&o.queries, "queries", trajectory.DefaultQueries, "distinct queries per query type")
	c.Flags().IntVar(&o.repeat, "repeat", trajectory.DefaultRepeat, "times each query is sent per mode")
	c.Flags().Int64Var(&o.radius, "radius", trajectory.DefaultRadius, "distance query radius (m)")
	c.Flags().IntVar(&o.k, "k", trajectory.DefaultK, "k of the k-NN query")
	c.Flags().Int64Var(&o.maxDist, "max-dist", trajectory.DefaultMaxDist, "k-NN distance bound (m)")
	c.Flags().BoolVar(&o.verify, "verify", true, "check every answer against the brute-force reference")
	return c
}

// trajPhaseResult is what one phase measured.
type trajPhaseResult struct {
	elapsed     time.Duration
	requests    int64
	records     int64
	stats       trajectory.Stats
	wrong       []*trajectory.WrongAnswer
	interrupted bool
}

// trajPhase runs each client's own number of requests concurrently
// (runner.Batch per client: shares may differ by one request) and measures
// the phase's wall time at the clients.
func trajPhase(ctx context.Context, ws []runner.Worker, counts []int64, handles []*recorder.Handle) (time.Duration, bool) {
	var wg sync.WaitGroup
	var stopped atomic.Bool
	t0 := time.Now()
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if runner.Batch(ctx, []runner.Worker{w}, handles[i:i+1], counts[i]) {
				stopped.Store(true)
			}
		}()
	}
	wg.Wait()
	return time.Since(t0), stopped.Load()
}

func runTrajectory(cmd *cobra.Command, f trajData, o trajRunOpts) (err error) {
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	dir, dsn, err := runDirFor(f.results, trajectory.Name, trajectory.Name, f.db)
	if err != nil {
		return err
	}
	started := false
	defer func() {
		if !started { // refused before measuring: leave no half-made run
			os.RemoveAll(dir)
		}
	}()
	a, db, err := openDB(ctx, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	store, err := trajStore(ctx, db, dsn, f.reset)
	if err != nil {
		return err
	}
	defer store.Close()
	g, err := f.generator()
	if err != nil {
		return err
	}

	// The read phases' parameters, and their reference answers.
	qopts := trajectory.QueryOptions{N: o.queries, Radius: o.radius, K: o.k, MaxDist: o.maxDist, Seed: f.seed}
	lists := map[int][]trajectory.Query{}
	wants := map[int][]trajectory.Answer{}
	for op := trajectory.OpDistance; op <= trajectory.OpRegion; op++ {
		lists[op] = trajectory.MakeQueries(g.City(), op, qopts)
	}
	if o.verify {
		t0 := time.Now()
		ref, err := trajectory.OracleFor(ctx, g)
		if err != nil {
			return errInterrupted
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
	modeNames := make([]string, len(o.modes))
	for i, m := range o.modes {
		modeNames[i] = string(m)
	}
	h := newHeader(trajectory.Name, a, info, dsn, f.seed, trajectory.Ops)
	h.Options = map[string]any{
		"scale": f.scale, "seed": f.seed, "records": g.Len(), "users": g.Users(), "cells": len(g.City().Cells),
		"mode": strings.Join(modeNames, ","), "clients": o.clients, "batch": f.batch,
		"queries": o.queries, "repeat": o.repeat, "radius_m": o.radius, "k": o.k, "max_dist_m": o.maxDist,
		"verify": o.verify, "metric": "planar euclidean on easting/northing (m)",
	}
	h.Series = map[string]result.SeriesMeta{
		trajSeriesThroughput: {Title: "Throughput at the clients per request type and mode", XLabel: "mode and request type", YLabel: "throughput (requests/s)"},
		trajSeriesRecords:    {Title: "Write throughput in records", XLabel: "mode", YLabel: "throughput (records/s)"},
		trajSeriesLatency:    {Title: "Latency per request (mean ± SD)", XLabel: "mode and request type", YLabel: "latency (ms)", Band: "sd"},
	}
	s, es, err := startRun(ctx, dir, h, stdout, stderr)
	if err != nil {
		return err
	}
	started = true
	s.extra["records"] = float64(g.Len())
	s.extra["users"] = float64(g.Users())
	s.extra["cells"] = float64(len(g.City().Cells))
	fmt.Fprintf(stderr, "running trajectory on %s %s: %d records (scale %g), modes %s, %d random clients, batch %d, %d queries x %d per type\n",
		info.Name, info.Version, g.Len(), f.scale, strings.Join(modeNames, "+"), o.clients, f.batch, o.queries, o.repeat)

	handles := make([]*recorder.Handle, o.clients)
	for i := range handles {
		handles[i] = s.rec.Handle()
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
		s.extra[key+"_requests_per_sec"] = float64(r.requests) / secs
		s.extra[key+"_mean_latency_ms"] = mean * 1e3
		pts := []result.Point{
			{Series: trajSeriesThroughput, X: x, Y: float64(r.requests) / secs, N: int(r.requests), Failed: fail, Labels: labels()},
			{Series: trajSeriesLatency, X: x, Y: mean * 1e3, SD: sd * 1e3, N: int(r.stats.N), Failed: fail, Labels: labels()},
		}
		if op == trajectory.OpWrite {
			s.extra[key+"_records_per_sec"] = float64(r.records) / secs
			s.extra[key+"_seconds"] = secs
			pts = append(pts, result.Point{Series: trajSeriesRecords, X: x, Y: float64(r.records) / secs, N: int(r.records), Failed: fail, Labels: labels()})
		}
		for _, p := range pts {
			if err := s.point(p); err != nil {
				return err
			}
		}
		return nil
	}

	var runErr error
phases:
	for mi, mode := range o.modes {
		if mi > 0 {
			if runErr = store.Reset(ctx); runErr != nil {
				break
			}
			_ = s.event("reset", "database emptied for the "+string(mode)+" write phase")
		}
		// Write phase.
		wcs, err := trajectory.WriteClients(store, g, mode, o.clients, f.batch, f.seed)
		if err != nil {
			runErr = err
			break
		}
		ws, counts := make([]runner.Worker, len(wcs)), make([]int64, len(wcs))
		var r trajPhaseResult
		for i, c := range wcs {
			ws[i], counts[i] = c, c.Requests()
			r.requests += c.Requests()
		}
		x := s.since()
		_ = s.event(string(mode)+" write", fmt.Sprintf("%d records, %d client(s), %d requests of up to %d", g.Len(), len(wcs), r.requests, f.batch))
		r.elapsed, r.interrupted = trajPhase(ctx, ws, counts, handles)
		for _, c := range wcs {
			r.stats.Merge(&c.Stats)
			r.records += c.Records()
		}
		if runErr = record(mode, trajectory.OpWrite, x, r); runErr != nil || r.interrupted {
			interrupted = r.interrupted
			break
		}
		fmt.Fprintf(stderr, "%s write: %d records in %.2fs, %.0f records/s\n", mode, r.records, r.elapsed.Seconds(), float64(r.records)/r.elapsed.Seconds())

		// Read phases, one per query type.
		for op := trajectory.OpDistance; op <= trajectory.OpRegion; op++ {
			rcs, err := trajectory.ReadClients(store, lists[op], wants[op], mode, o.clients, o.repeat, f.seed*31+int64(op))
			if err != nil {
				runErr = err
				break phases
			}
			ws, counts := make([]runner.Worker, len(rcs)), make([]int64, len(rcs))
			var r trajPhaseResult
			for i, c := range rcs {
				ws[i], counts[i] = c, c.Requests()
				r.requests += c.Requests()
			}
			x := s.since()
			_ = s.event(string(mode)+" "+trajectory.Ops[op], fmt.Sprintf("%d requests, %d client(s)", r.requests, len(rcs)))
			r.elapsed, r.interrupted = trajPhase(ctx, ws, counts, handles)
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
	runErr = errors.Join(runErr, stopClock(clock, prog), es.end())
	dctx, cancel := detached(ctx, 30*time.Second)
	defer cancel()
	if c, err := store.Counts(dctx); err == nil {
		s.extra["stored_records"] = float64(c.Records)
		s.extra["stored_cells"] = float64(c.Cells)
	}
	if sz, ok := db.(adapter.Sizer); ok {
		if n, err := sz.SizeBytes(dctx); err == nil {
			s.extra["db_size_bytes"] = float64(n)
		}
	}
	if interrupted {
		_ = s.event("interrupted", fmt.Sprintf("after %.1fs", s.since()))
	}
	if err := errors.Join(runErr, s.finish(interrupted)); err != nil {
		return err
	}
	if interrupted {
		return errInterrupted
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

func newTrajectoryOpCmd() *cobra.Command {
	var dsn string
	var x, y, radius, maxDist int64
	var k int
	var tri, weekday, slot string
	c := &cobra.Command{
		Use:   "trajectory",
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
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return usagef("op trajectory needs an operation: %s", strings.Join(trajectory.Ops, ", "))
		},
	}
	c.AddCommand(newTrajectoryWriteOpCmd())
	mk := func(name, short string, flags func(*cobra.Command)) *cobra.Command {
		sub := &cobra.Command{
			Use:   name,
			Short: short,
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				op, _ := trajectory.ParseQueryOp(name)
				q := trajectory.Query{Op: op, At: trajectory.Point{X: x, Y: y}, Radius: radius, K: k, MaxDist: maxDist}
				return runTrajectoryOp(cmd, dsn, q, tri, weekday, slot)
			},
		}
		sub.Flags().StringVar(&dsn, "db", "", "database DSN (required), e.g. sqlite:///tmp/traj.db")
		flags(sub)
		return sub
	}
	point := func(c *cobra.Command) {
		c.Flags().Int64Var(&x, "x", 0, "easting of the position (m, required)")
		c.Flags().Int64Var(&y, "y", 0, "northing of the position (m, required)")
	}
	c.AddCommand(
		mk("distance", "Cells within --radius metres of (--x, --y), nearest first", func(c *cobra.Command) {
			point(c)
			c.Flags().Int64Var(&radius, "radius", trajectory.DefaultRadius, "radius (m); a cell exactly at this distance is included")
		}),
		mk("knn", "The --k cells nearest to (--x, --y) within --max-dist metres, nearest first, ties by cell id", func(c *cobra.Command) {
			point(c)
			c.Flags().IntVar(&k, "k", trajectory.DefaultK, "how many cells")
			c.Flags().Int64Var(&maxDist, "max-dist", trajectory.DefaultMaxDist, "ignore cells farther than this (m)")
		}),
		mk("range", "Cells inside --triangle (edges and vertices included), by cell id", func(c *cobra.Command) {
			c.Flags().StringVar(&tri, "triangle", "", `vertices "x1,y1,x2,y2,x3,y3" in metres (required)`)
		}),
		mk("region", "The cell with the most location updates at --weekday and --slot (ties: smallest id)", func(c *cobra.Command) {
			c.Flags().StringVar(&weekday, "weekday", "", "1-7 (Monday = 1) or a name: mon, monday... (required)")
			c.Flags().StringVar(&slot, "slot", "", "5-minute slot 0-287, or a time HH:MM (required)")
		}),
	)
	return c
}

// trajOpHit is one cell of a spatial answer as op prints it.
type trajOpHit struct {
	trajectory.Hit
	DistM *float64 `json:"dist_m,omitempty"`
}

func runTrajectoryOp(cmd *cobra.Command, dsn string, q trajectory.Query, tri, weekday, slot string) error {
	fl := cmd.Flags()
	if dsn == "" {
		return usagef("op needs --db (the database to query), e.g. --db sqlite:///tmp/traj.db")
	}
	switch q.Op {
	case trajectory.OpDistance, trajectory.OpKNN:
		if !fl.Changed("x") || !fl.Changed("y") {
			return usagef("op trajectory %s needs --x and --y (easting and northing in metres)", trajectory.Ops[q.Op])
		}
	case trajectory.OpRange:
		if tri == "" {
			return usagef(`op trajectory range needs --triangle "x1,y1,x2,y2,x3,y3"`)
		}
		t, err := trajectory.ParseTriangle(tri)
		if err != nil {
			return usagef("--triangle: %v", err)
		}
		q.Tri = t
	case trajectory.OpRegion:
		if weekday == "" || slot == "" {
			return usagef("op trajectory region needs --weekday and --slot")
		}
		d, err := trajectory.ParseWeekday(weekday)
		if err != nil {
			return usagef("--weekday: %v", err)
		}
		sl, err := trajectory.ParseSlot(slot)
		if err != nil {
			return usagef("--slot: %v", err)
		}
		q.Day, q.Slot = d, sl
	}
	if err := q.Validate(); err != nil {
		return usagef("%v", err)
	}
	ctx := cmd.Context()
	_, db, err := openDB(ctx, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	b, ok := db.(trajectory.Backend)
	if !ok {
		return usagef("the adapter for %s does not support the trajectory workload", adapter.Redact(dsn))
	}
	st, err := b.Trajectory(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if c, err := st.Counts(ctx); err != nil {
		return err
	} else if c.Records == 0 {
		return usagef("%s holds no trajectory data: load it first with 'fieldbench load trajectory --db %s'", adapter.Redact(dsn), adapter.Redact(dsn))
	}
	ans, err := q.Run(ctx, st)
	if err != nil {
		return fmt.Errorf("%s: %w", trajectory.Ops[q.Op], err)
	}
	return printTrajectoryAnswer(cmd.OutOrStdout(), cmd.ErrOrStderr(), q, ans)
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

// trajOpWrite are the flags of op trajectory write.
type trajOpWrite struct {
	db    string
	scale float64
	seed  int64
	index int64
	count int64
}

func newTrajectoryWriteOpCmd() *cobra.Command {
	var o trajOpWrite
	c := &cobra.Command{
		Use:   "write",
		Short: "Insert records --index.. of the dataset (the ones a run writes there) and print each as a JSON line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTrajectoryWriteOp(cmd, o)
		},
	}
	c.Flags().StringVar(&o.db, "db", "", "database DSN (required), e.g. sqlite:///tmp/traj.db")
	c.Flags().Float64Var(&o.scale, "scale", trajectory.DefaultScale, "dataset size: round(scale x 6,483,397.5) records")
	c.Flags().Int64Var(&o.seed, "seed", 1, "seed of the city and the users")
	c.Flags().Int64Var(&o.index, "index", 0, "index of the first record, from 0 (required)")
	c.Flags().Int64Var(&o.count, "count", 1, "how many consecutive records")
	return c
}

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

func runTrajectoryWriteOp(cmd *cobra.Command, o trajOpWrite) error {
	if o.db == "" {
		return usagef("op needs --db (the database to write to), e.g. --db sqlite:///tmp/traj.db")
	}
	n, err := trajectory.RecordsForScale(o.scale)
	if err != nil {
		return usagef("--scale: %v", err)
	}
	if !cmd.Flags().Changed("index") {
		return usagef("op trajectory write needs --index (the first record, 0 to %d at --scale %g)", n-1, o.scale)
	}
	switch {
	case o.count < 1:
		return usagef("--count must be at least 1 (got %d)", o.count)
	case o.index < 0 || o.index >= n:
		return usagef("--index must be from 0 to %d at --scale %g (%d records; got %d)", n-1, o.scale, n, o.index)
	case o.count > n-o.index:
		return usagef("--index %d --count %d goes past the last record %d at --scale %g: --count must be at most %d",
			o.index, o.count, n-1, o.scale, n-o.index)
	}
	ctx := cmd.Context()
	_, db, err := openDB(ctx, o.db)
	if err != nil {
		return err
	}
	defer db.Close()
	b, ok := db.(trajectory.Backend)
	if !ok {
		return usagef("the adapter for %s does not support the trajectory workload", adapter.Redact(o.db))
	}
	st, err := b.Trajectory(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	g, err := trajectory.New(trajectory.Options{Scale: o.scale, Seed: o.seed})
	if err != nil {
		return job.Usage(err)
	}
	cur := g.NewCursor()
	buf := make([]trajectory.Record, min(o.count, trajOpWriteBatch))
	enc := json.NewEncoder(cmd.OutOrStdout())
	end := o.index + o.count
	for from := o.index; from < end; {
		if ctx.Err() != nil {
			return errInterrupted
		}
		k := cur.Fill(from, buf[:min(int64(len(buf)), end-from)])
		if k == 0 { // cannot happen after the checks above; never loop forever
			return fmt.Errorf("record %d is past the end of the dataset (%d records)", from, g.Len())
		}
		if err := st.Write(ctx, buf[:k]); err != nil {
			return fmt.Errorf("write records %d-%d: %w", from, from+int64(k)-1, err)
		}
		for j := range k {
			if err := enc.Encode(newTrajOpRecord(from+int64(j), &buf[j])); err != nil {
				return err
			}
		}
		from += int64(k)
	}
	return nil
}
