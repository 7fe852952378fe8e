package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/runner"
	"github.com/fieldbench/fieldbench/workload"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// mbData are the flags that identify a microblog dataset and database.
type mbData struct {
	db      string
	users   int
	seed    int64
	model   string
	results string
}

func (f *mbData) bind(c *cobra.Command, withDB bool) {
	if withDB {
		c.Flags().StringVar(&f.db, "db", "", "database DSN, e.g. sqlite:///tmp/fb.db (default: a new SQLite file in the run directory)")
	}
	c.Flags().IntVar(&f.users, "users", microblog.DefaultUsers, "users in the dataset (400 gives ~10,080 follows, ~3,540 tweets)")
	c.Flags().Int64Var(&f.seed, "seed", 1, "seed of the dataset and of the clients' choices")
}

func (f *mbData) bindModel(c *cobra.Command) {
	c.Flags().StringVar(&f.model, "model", string(microblog.Denormalized), "data model: denormalized, normalized or async")
}

func (f *mbData) validate() error {
	if f.users < 2 {
		return usagef("--users must be at least 2 (got %d)", f.users)
	}
	if f.model != "" {
		if _, err := microblog.ParseModel(f.model); err != nil {
			return usageError{err}
		}
	}
	return nil
}

func init() {
	registerWorkloadCmd("generate", newMicroblogGenerateCmd)
	registerWorkloadCmd("load", newMicroblogLoadCmd)
	registerWorkloadCmd("run", newMicroblogRunCmd)
	registerWorkloadCmd("op", newMicroblogOpCmd)
}

func newMicroblogGenerateCmd() *cobra.Command {
	var f mbData
	var out string
	mb := &cobra.Command{
		Use:     "microblog",
		Short:   "Write the microblog dataset as CSV and print its statistics",
		Example: `  fieldbench generate microblog --users 400 --seed 1 --out data/`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			if out == "" {
				return usagef("generate microblog needs --out DIR")
			}
			ds, err := microblog.Generate(microblog.GenOptions{Users: f.users, Seed: f.seed})
			if err != nil {
				return usageError{err}
			}
			if err := ds.WriteCSV(out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote users.csv, follows.csv, tweets.csv to %s\n\n", out)
			return ds.Stats().Write(cmd.OutOrStdout())
		},
	}
	f.bind(mb, false)
	mb.Flags().StringVar(&out, "out", "", "directory to write the CSV files to (required)")
	return mb
}

func newMicroblogLoadCmd() *cobra.Command {
	var f mbData
	mb := &cobra.Command{
		Use:   "microblog",
		Short: "Populate a database with the microblog dataset",
		Long: `load generates the dataset for --users and --seed and writes it into the
database in the chosen data model, reporting the populate time and the
database's size on disk. Without --db it creates a SQLite file in a new run
directory and prints the DSN to pass to 'run' and 'op'.`,
		Example: `  fieldbench load microblog --db sqlite:///tmp/mb.db --model normalized`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			dsn, dir, err := f.resolveDSN("load")
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			a, db, err := openDB(ctx, dsn)
			if err != nil {
				return err
			}
			defer db.Close()
			store, model, ds, ld, err := f.prepare(ctx, db, cmd.Flags().Changed("model"), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer store.Close()
			if !ld.loaded {
				fmt.Fprintf(cmd.OutOrStdout(), "database already holds this dataset (%s model); nothing to load\n", model)
				return nil
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "loaded %d users, %d follows, %d tweets (%s model) into %s in %.2fs",
				ds.Users, len(ds.Follows), len(ds.Tweets), model, adapter.Redact(dsn), ld.seconds)
			if ld.sizeBytes > 0 {
				fmt.Fprintf(out, "; %.2f MB on disk", float64(ld.sizeBytes)/1e6)
			}
			fmt.Fprintln(out)
			if dir != "" {
				info, _ := db.Info(ctx)
				if err := writeLoadResult(dir, a, info, dsn, f, model, ld); err != nil {
					return err
				}
				fmt.Fprintf(out, "run it with: fieldbench run microblog --db %s\n", dsn)
			}
			return nil
		},
	}
	f.bind(mb, true)
	f.bindModel(mb)
	mb.Flags().StringVar(&f.results, "results", "results", "where the run directory is created when --db is not given")
	return mb
}

// writeLoadResult leaves a self-describing record of a load done into a new
// run directory (populate time and size are figures of the study).
func writeLoadResult(dir string, a adapter.Adapter, info adapter.Info, dsn string, f mbData, model microblog.Model, ld loadOutcome) error {
	h := newHeader(microblog.Name, a, info, dsn, f.seed, nil)
	h.Started = time.Now().UTC()
	h.Options = map[string]any{"users": f.users, "seed": f.seed, "model": string(model), "command": "load"}
	w, err := result.Create(dir, h)
	if err != nil {
		return err
	}
	err = errors.Join(
		w.Event(result.Event{At: 0, Name: "populate", Detail: fmt.Sprintf("%.2fs", ld.seconds)}),
		w.Summary(result.Summary{Ops: map[string]result.OpSummary{}, Extra: ld.extra()}),
	)
	return errors.Join(err, w.Close())
}

func newMicroblogRunCmd() *cobra.Command {
	var f mbData
	var clients int
	var duration, warmup, matEvery time.Duration
	var rate float64
	var mixSpec string
	mb := &cobra.Command{
		Use:   "microblog",
		Short: "Run the microblog workload (the study's defaults: 200 clients, 4 minutes, uniform mix)",
		Long: `run loads the dataset when the database is empty, then runs --clients
simulated users for --duration. Closed loop by default (each client issues its
next operation when the previous one returns); --rate runs open loop with
latency measured from each operation's intended start. Each client is one
user: post writes a tweet as that user, timeline reads that user's timeline,
userline reads a user that client follows.

Results go to results/<time>-microblog-<adapter>/: result.jsonl (written every
second) and report.html.`,
		Example: `  fieldbench run microblog --duration 30s
  fieldbench run microblog --model async --clients 50 --duration 1m --warmup 10s
  fieldbench run microblog --db sqlite:///tmp/mb.db --rate 500 --mix post=1,timeline=4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.validate(); err != nil {
				return err
			}
			cfg := runner.Config{Workers: clients, Duration: duration, Warmup: warmup, Rate: rate}
			if err := cfg.Validate(); err != nil {
				return usageError{err}
			}
			mix, err := workload.ParseMix(mixSpec, microblog.ClientOps)
			if err != nil {
				return usageError{err}
			}
			return runMicroblog(cmd, f, cfg, mix, matEvery)
		},
	}
	f.bind(mb, true)
	f.bindModel(mb)
	mb.Flags().IntVar(&clients, "clients", microblog.DefaultClients, "concurrent clients, each simulating one user")
	mb.Flags().DurationVar(&duration, "duration", 4*time.Minute, "run time, warm-up included")
	mb.Flags().DurationVar(&warmup, "warmup", 0, "time at the start excluded from the summary (shaded in the report)")
	mb.Flags().Float64Var(&rate, "rate", 0, "open loop: target operations per second over all clients (0 = closed loop)")
	mb.Flags().StringVar(&mixSpec, "mix", microblog.DefaultMix, "operation weights, e.g. post=1,userline=2,timeline=2")
	mb.Flags().DurationVar(&matEvery, "materialize-every", 100*time.Millisecond, "async model: pause of the background materializer when it has caught up")
	mb.Flags().StringVar(&f.results, "results", "results", "directory under which the run directory is created")
	return mb
}

func runMicroblog(cmd *cobra.Command, f mbData, cfg runner.Config, mix workload.Mix, matEvery time.Duration) error {
	ctx := cmd.Context()
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	dir, dsn, err := runDirFor(f.results, microblog.Name, microblog.Name, f.db)
	if err != nil {
		return err
	}
	a, db, err := openDB(ctx, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	store, model, ds, ld, err := f.prepare(ctx, db, cmd.Flags().Changed("model"), stderr)
	if err != nil {
		return err
	}
	defer store.Close()
	info, err := db.Info(ctx)
	if err != nil {
		return fmt.Errorf("read database version: %w", err)
	}
	drv, err := microblog.NewDriver(ctx, store, ds, mix, f.seed)
	if err != nil {
		return err
	}
	h := newHeader(microblog.Name, a, info, dsn, f.seed, microblog.Ops(model))
	h.Groups = map[string]string{"post": "author followers"}
	h.Options = map[string]any{
		"users": ds.Users, "seed": f.seed, "model": string(model), "clients": cfg.Workers,
		"duration": cfg.Duration.String(), "warmup": cfg.Warmup.String(), "rate": cfg.Rate,
		"mix": mix.String(), "loop": loopName(cfg.Rate),
	}
	h.WarmupSeconds = cfg.Warmup.Seconds()
	if model == microblog.Async {
		h.Options["materialize_every"] = matEvery.String()
	}
	s, es, err := startRun(ctx, dir, h, stdout, stderr)
	if err != nil {
		return err
	}
	es.trackPosts(drv)
	for k, v := range ld.extra() {
		s.extra[k] = v
	}
	fmt.Fprintf(stderr, "running microblog (%s model) on %s %s: %d clients, %s, %s loop\n",
		model, info.Name, info.Version, cfg.Workers, cfg.Duration, loopName(cfg.Rate))

	clients := drv.Clients(cfg.Workers)
	workers := make([]runner.Worker, len(clients))
	for i, c := range clients {
		workers[i] = c
	}

	// The async model's materializer runs beside the clients; its lag is
	// recorded as the pseudo-operation async-lag.
	var matErr error
	var matWG sync.WaitGroup
	matCtx, stopMat := context.WithCancel(context.WithoutCancel(ctx))
	defer stopMat()
	m, isAsync := store.(microblog.Materializer)
	if model == microblog.Async {
		if !isAsync {
			return fmt.Errorf("adapter %s: async store has no materializer", a.Name())
		}
		hd := s.rec.Handle()
		matWG.Add(1)
		go func() {
			defer matWG.Done()
			matErr = microblog.Materialize(matCtx, m, matEvery, func(d time.Duration) { hd.Record(microblog.OpAsyncLag, d) })
		}()
	}

	out, runErr := s.drive(ctx, cfg, workers)
	stopMat()
	matWG.Wait()
	if model == microblog.Async && matErr == nil {
		// Let the materializer catch up so the last posts' lag is measured too.
		dctx, cancel := detached(ctx, 30*time.Second)
		hd := s.rec.Handle()
		matErr = microblog.CatchUp(dctx, m, func(d time.Duration) { hd.Record(microblog.OpAsyncLag, d) })
		cancel()
		runErr = errors.Join(runErr, s.drain())
	}
	runErr = errors.Join(runErr, es.end())
	if es != nil {
		dctx, cancel := detached(ctx, 5*time.Minute)
		es.audit(dctx, store, ds)
		cancel()
	}
	if matErr != nil {
		s.extra["materializer_failed"] = 1
		fmt.Fprintf(stderr, "fieldbench: %v\n", matErr)
	}
	if out.NotStarted > 0 {
		s.extra["open_loop_not_started"] = float64(out.NotStarted)
	}
	if out.Interrupted {
		_ = s.event("interrupted", fmt.Sprintf("after %.1fs", out.Elapsed.Seconds()))
	}
	if err := errors.Join(runErr, s.finish(out.Interrupted)); err != nil {
		return err
	}
	if matErr != nil {
		return matErr
	}
	if out.Interrupted {
		return errInterrupted
	}
	return nil
}

func loopName(rate float64) string {
	if rate > 0 {
		return "open"
	}
	return "closed"
}

// loadOutcome is what prepare did to the database.
type loadOutcome struct {
	loaded    bool
	seconds   float64
	sizeBytes int64
	counts    microblog.Counts
}

func (l loadOutcome) extra() map[string]float64 {
	m := map[string]float64{
		"users":   float64(l.counts.Users),
		"follows": float64(l.counts.Follows),
		"tweets":  float64(l.counts.Tweets),
	}
	if l.loaded {
		m["populate_seconds"] = l.seconds
	}
	if l.sizeBytes > 0 {
		m["db_size_bytes"] = float64(l.sizeBytes)
	}
	return m
}

// resolveDSN returns --db, or a SQLite file in a new run directory.
func (f *mbData) resolveDSN(what string) (dsn, dir string, err error) {
	if f.db != "" {
		if _, err := adapter.ForDSN(f.db); err != nil {
			return "", "", usageError{err}
		}
		return f.db, "", nil
	}
	dir, err = newRunDir(f.results, microblog.Name+"-"+what, "sqlite", time.Now())
	if err != nil {
		return "", "", err
	}
	return defaultSQLite(dir, microblog.Name), dir, nil
}

func openDB(ctx context.Context, dsn string) (adapter.Adapter, adapter.DB, error) {
	a, err := adapter.ForDSN(dsn)
	if err != nil {
		return nil, nil, usageError{err}
	}
	db, err := a.Open(ctx, dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot open %s: %w", adapter.Redact(dsn), err)
	}
	return a, db, nil
}

func backendOf(db adapter.DB, dsn string) (microblog.Backend, error) {
	b, ok := db.(microblog.Backend)
	if !ok {
		return nil, usagef("the adapter for %s does not support the microblog workload", adapter.Redact(dsn))
	}
	return b, nil
}

// prepare opens the store for the model and makes sure it holds the dataset
// of --users/--seed, loading it when the database is empty. A database loaded
// with another model or dataset is an error, never silently mixed.
func (f *mbData) prepare(ctx context.Context, db adapter.DB, modelGiven bool, progress io.Writer) (microblog.Store, microblog.Model, *microblog.Dataset, loadOutcome, error) {
	var ld loadOutcome
	b, err := backendOf(db, f.db)
	if err != nil {
		return nil, "", nil, ld, err
	}
	model, _ := microblog.ParseModel(f.model)
	have, err := b.MicroblogModel(ctx)
	if err != nil {
		return nil, "", nil, ld, fmt.Errorf("read the database's microblog model: %w", err)
	}
	if have != "" && have != model {
		if modelGiven {
			return nil, "", nil, ld, usagef("the database holds the %s model, not %s: use a fresh database for another model", have, model)
		}
		model = have
	}
	store, err := b.Microblog(ctx, model)
	if err != nil {
		return nil, "", nil, ld, err
	}
	fail := func(err error) (microblog.Store, microblog.Model, *microblog.Dataset, loadOutcome, error) {
		store.Close()
		return nil, "", nil, ld, err
	}
	t0 := time.Now()
	ds, err := microblog.Generate(microblog.GenOptions{Users: f.users, Seed: f.seed})
	if err != nil {
		return fail(usageError{err})
	}
	if d := time.Since(t0); d > 2*time.Second {
		fmt.Fprintf(progress, "generated %d users in %s\n", f.users, d.Round(time.Millisecond))
	}
	counts, err := store.Counts(ctx)
	if err != nil {
		return fail(fmt.Errorf("count stored data: %w", err))
	}
	if counts.Users == 0 {
		fmt.Fprintf(progress, "loading %d users, %d follows, %d tweets (%s model)...\n", ds.Users, len(ds.Follows), len(ds.Tweets), model)
		t0 := time.Now()
		if err := store.Populate(ctx, ds); err != nil {
			return fail(fmt.Errorf("populate: %w", err))
		}
		ld.loaded = true
		ld.seconds = time.Since(t0).Seconds()
		if counts, err = store.Counts(ctx); err != nil {
			return fail(fmt.Errorf("count stored data: %w", err))
		}
	} else if counts.Users != int64(ds.Users) || counts.Follows != int64(len(ds.Follows)) || counts.Tweets < int64(len(ds.Tweets)) {
		return fail(usagef("the database holds another dataset (%d users, %d follows) than --users %d --seed %d (%d users, %d follows): pass the options it was loaded with, or use a fresh database",
			counts.Users, counts.Follows, f.users, f.seed, ds.Users, len(ds.Follows)))
	}
	ld.counts = counts
	if sz, ok := db.(adapter.Sizer); ok {
		if n, err := sz.SizeBytes(ctx); err == nil {
			ld.sizeBytes = n
		}
	}
	return store, model, ds, ld, nil
}

func newMicroblogOpCmd() *cobra.Command {
	var f mbData
	var user int64
	var body string
	mk := func(name, short string) *cobra.Command {
		c := &cobra.Command{
			Use:   name,
			Short: short,
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return runOp(cmd, f, name, user, body)
			},
		}
		c.Flags().StringVar(&f.db, "db", "", "database DSN (required), e.g. sqlite:///tmp/mb.db")
		c.Flags().Int64Var(&user, "user", 0, "user id (1..users)")
		if name == "post" {
			c.Flags().StringVar(&body, "body", "", "text of the tweet (at most 140 characters; default: a generated one)")
		}
		return c
	}
	mb := &cobra.Command{
		Use:   "microblog",
		Short: "Run one microblog operation and print the answer as JSON lines, newest first",
		Example: `  fieldbench op microblog timeline --db sqlite:///tmp/mb.db --user 7
  fieldbench op microblog post --db sqlite:///tmp/mb.db --user 7 --body "hello"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usagef("op microblog needs an operation: timeline, userline or post")
		},
	}
	mb.AddCommand(
		mk("timeline", "The 50 newest tweets by the users --user follows"),
		mk("userline", "The 50 newest tweets by --user"),
		mk("post", "Post a tweet as --user and print it"),
	)
	return mb
}

func runOp(cmd *cobra.Command, f mbData, op string, user int64, body string) error {
	if f.db == "" {
		return usagef("op needs --db (the database to query), e.g. --db sqlite:///tmp/mb.db")
	}
	if user < 1 {
		return usagef("op %s needs --user (a user id from 1)", op)
	}
	if len([]rune(body)) > 140 {
		return usagef("--body has %d characters; a tweet has at most 140", len([]rune(body)))
	}
	ctx := cmd.Context()
	_, db, err := openDB(ctx, f.db)
	if err != nil {
		return err
	}
	defer db.Close()
	b, err := backendOf(db, f.db)
	if err != nil {
		return err
	}
	model, err := b.MicroblogModel(ctx)
	if err != nil {
		return err
	}
	if model == "" {
		return usagef("%s holds no microblog data: load it first with 'fieldbench load microblog --db %s'", adapter.Redact(f.db), adapter.Redact(f.db))
	}
	store, err := b.Microblog(ctx, model)
	if err != nil {
		return err
	}
	defer store.Close()
	counts, err := store.Counts(ctx)
	if err != nil {
		return err
	}
	if user > counts.Users {
		return usagef("--user %d does not exist (the database has users 1..%d)", user, counts.Users)
	}
	var tweets []microblog.Tweet
	switch op {
	case "timeline":
		tweets, err = store.Timeline(ctx, user, microblog.Limit)
	case "userline":
		tweets, err = store.Userline(ctx, user, microblog.Limit)
	case "post":
		var t microblog.Tweet
		t, err = postOne(ctx, store, user, body)
		tweets = []microblog.Tweet{t}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	for _, t := range tweets {
		if err := enc.Encode(t); err != nil {
			return err
		}
	}
	return nil
}

func postOne(ctx context.Context, store microblog.Store, user int64, body string) (microblog.Tweet, error) {
	maxID, err := store.MaxTweetID(ctx)
	if err != nil {
		return microblog.Tweet{}, err
	}
	if body == "" {
		body = microblog.RandomBody(newRand(time.Now().UnixNano()))
	}
	t := microblog.Tweet{ID: maxID + 1, Author: user, Time: time.Now().UTC().Truncate(time.Microsecond), Body: body}
	if err := store.Post(ctx, t); err != nil {
		return t, err
	}
	if m, ok := store.(microblog.Materializer); ok {
		if err := microblog.CatchUp(ctx, m, nil); err != nil {
			return t, err
		}
	}
	return t, nil
}
