package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// ErrBadInput is wrapped by Up's refusals of what it was asked (an
// unknown engine, a network, node count or option the engine refuses, a
// directory that holds a cluster already or cannot be made): the caller's
// bad input, checked before any server starts. The CLI exits 2 for it;
// cluster cannot say so with job.Usage itself (job imports cluster).
var ErrBadInput = errors.New("bad cluster input")

// badInput keeps its error's message and wraps ErrBadInput too.
type badInput struct{ error }

func (e badInput) Unwrap() []error { return []error{e.error, ErrBadInput} }

func badInputf(format string, a ...any) error { return badInput{fmt.Errorf(format, a...)} }

// ErrInterrupted is wrapped by Up's error when its context ended while
// the servers started: those it had started are stopped, and the caller
// reports an interrupt (the CLI's exit 130), not a failure.
var ErrInterrupted = errors.New("interrupted")

// Up is the one start of a cluster, for every caller (`cluster up`,
// run --cluster, an experiment's cluster and so a study's): it checks
// the request (ErrBadInput), prepares the state in dir before the first
// server starts (Prepare: from then on every server is in the SpawnLog
// the moment it exists), says on progress where the state is and how to
// stop the servers (UpNote), starts them with the engine's Up and saves
// the cluster. A failed or interrupted start stops what it had started
// (abandon) before it returns. dir is made if needed; it must not hold a
// cluster already. (Start, in process.go, starts one server process.)
func Up(ctx context.Context, engine string, opts Options, dir string, progress io.Writer) (*Cluster, error) {
	e, err := Get(engine)
	if err != nil {
		return nil, badInput{err}
	}
	if err := CheckNetwork(engine, opts.Network); err != nil {
		return nil, badInput{err}
	}
	if opts.Network == NetworkHosts {
		SweepNetworks(ctx, progress)
	}
	if err := CheckNodes(engine, opts.Nodes, opts.Extra); err != nil {
		return nil, badInput{err}
	}
	if err := CheckOptions(engine, opts); err != nil {
		return nil, badInput{err}
	}
	if err := CheckBudget(engine, opts, 0); err != nil {
		return nil, badInput{err}
	}
	if err := e.Check(); err != nil {
		return nil, fmt.Errorf("%s is not installed here: %w (run scripts/install-servers.sh)", engine, err)
	}
	if dir == "" {
		return nil, errors.New("cluster.Up: no directory")
	}
	if _, err := os.Stat(filepath.Join(dir, StateFile)); err == nil {
		return nil, badInputf("%s already holds a cluster: use another --dir or 'fieldbench cluster down --dir %s' first", dir, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, badInputf("cluster directory %s is not writable: %v", dir, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	// The state exists before the first server starts, and every server
	// is recorded the moment it starts (SpawnLog): an interrupted or
	// killed Up leaves nothing 'cluster down' cannot stop.
	prepared, err := Prepare(abs, engine)
	if err != nil {
		return nil, err
	}
	if !opts.Budget.Empty() {
		prepared.Budget = opts.Budget
		if err := prepared.Save(); err != nil {
			return nil, err
		}
	}
	fmt.Fprint(progress, UpNote(engine, opts.Nodes, abs))
	if c := opts.Budget.Caveat(); c != "" {
		fmt.Fprintf(progress, "  note: %s\n", c)
	}
	t0 := time.Now()
	cl, err := e.Up(ctx, abs, opts)
	if err == nil {
		err = checkHeld(cl)
	}
	if err != nil {
		stopped := abandon(ctx, e, cl, prepared, progress)
		if ctx.Err() != nil {
			fmt.Fprintf(progress, "cluster up interrupted: stopped the %d server(s) it had started; data and logs are in %s\n", stopped, abs)
			return nil, fmt.Errorf("start %s: %w", engine, ErrInterrupted)
		}
		return nil, fmt.Errorf("start %s: %w", engine, err)
	}
	if err := cl.Save(); err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "%s up in %s\n", engine, time.Since(t0).Round(100*time.Millisecond))
	return cl, nil
}

// UpNote is what Up says before the first server starts: where the
// cluster's state is and the command that stops its servers, so that both
// are on screen before a run on it starts (run --cluster) and stay there
// if fieldbench is killed (SIGKILL runs no clean-up).
func UpNote(engine string, nodes int, dir string) string {
	return fmt.Sprintf("starting %s with %d node(s) in %s...\n"+
		"  its state is %s: if fieldbench is killed before it stops the servers, stop them with: fieldbench cluster down --dir %s\n",
		engine, nodes, dir, filepath.Join(dir, StateFile), dir)
}

// abandon stops everything a failed or interrupted Up started (every
// recorded server at once, then the engine's own Down for what it knows,
// then the virtual network), saves the cluster's state with its nodes
// stopped, and returns how many servers were still running. It has its
// own deadline: ctx is already cancelled when Ctrl-C brought it here.
func abandon(ctx context.Context, e Engine, cl, prepared *Cluster, progress io.Writer) int {
	stopped, err := StopSpawned(prepared.Dir, 3*time.Second)
	if err != nil {
		fmt.Fprintf(progress, "stopping the servers started: %v\n", err)
	}
	if cl == nil {
		cl = prepared
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	if err := e.Down(dctx, cl); err != nil {
		fmt.Fprintf(progress, "stopping the cluster: %v\n", err)
	}
	if err := DestroyNetwork(dctx, prepared.Dir); err != nil {
		fmt.Fprintf(progress, "removing the virtual network: %v\n", err)
	}
	cl.Budget = prepared.Budget
	if err := removeGroups(cl); err != nil {
		fmt.Fprintf(progress, "removing the control groups: %v\n", err)
	}
	if err := cl.Save(); err != nil {
		fmt.Fprintf(progress, "saving the cluster state: %v\n", err)
	}
	return stopped
}

// Teardown is the one teardown of a cluster Up started, for every
// caller (`cluster down`, run --cluster, an experiment's cluster and so a
// study's): the engine's Down, then every server the SpawnLog still lists
// (an interrupted start's servers that never became nodes; after a clean
// Down there are none), then the virtual network (--network hosts; found
// from the directory alone, so also one a crashed start left), then the
// SpawnLog and the StateFile, which say that the cluster runs.
//
// It stops at the first step that fails and returns its error, keeping
// the state file, whoever called it: `cluster down --dir` then finds what
// is left and is tried again, which the error says. (run --cluster and
// experiments used to remove the state file even then, so that `cluster
// down` on their directory found no cluster while its servers ran on.)
// ctx bounds the whole teardown; callers give one an interrupt does not
// cancel (teardown runs after Ctrl-C too), each with its own deadline.
func Teardown(ctx context.Context, cl *Cluster) error {
	if err := teardown(ctx, cl); err != nil {
		return fmt.Errorf("%w (what is left is in %s: stop it with fieldbench cluster down --dir %s)", err, cl.Dir, cl.Dir)
	}
	return nil
}

func teardown(ctx context.Context, cl *Cluster) error {
	e, err := Get(cl.Engine)
	if err != nil {
		return err
	}
	if err := e.Down(ctx, cl); err != nil {
		return err
	}
	if _, err := StopSpawned(cl.Dir, 15*time.Second); err != nil {
		return err
	}
	if err := DestroyNetwork(ctx, cl.Dir); err != nil {
		return err
	}
	if err := removeGroups(cl); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(cl.Dir, SpawnLog)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.Remove(filepath.Join(cl.Dir, StateFile))
}
