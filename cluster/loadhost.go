package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/fieldbench/fieldbench/cluster/budget"
	"github.com/fieldbench/fieldbench/cluster/vnet"
	"github.com/fieldbench/fieldbench/probe"
)

// RunOnLoadHost runs fieldbench's own binary with args on load host
// load<index> of c's virtual network (a namespace of its own, address
// vnet.LoadAddr(index)), with probe.LoadHostEnv set so the child knows it
// is there (it runs the command itself and records the host), and removes
// the host once the child ended. The child writes to stdout and stderr;
// it is in a process group of its own, so a terminal's Ctrl-C reaches
// this process only, which passes every SIGINT and SIGTERM on (one each):
// the child sees exactly the signals the user sent.
//
// exit is the child's exit code, -1 when a signal ended it; err is what
// kept it from running (or from being waited for), and the host's
// removal's failure. The caller checks index and vnet.Check first: both
// are its bad input.
//
// With --load-budget in args, the child runs in a control group of that
// budget from its first instruction (budget.Join: the child's own /sys,
// which ip netns exec mounts afresh, has no control groups to move into),
// checked first like the run's own (CheckLoad: bad input, before the host
// exists); the child is handed the group (budget.LoadGroupEnv) to write
// the load's budget series from, the group's totals are printed once the
// child ended, and the group is removed on every path.
func RunOnLoadHost(ctx context.Context, c *Cluster, index int, args []string, stdout, stderr io.Writer) (exit int, err error) {
	load, err := loadBudgetArg(args)
	if err != nil {
		return 0, err
	}
	dir := c.Dir
	net := vnet.ForDir(c.Dir)
	if !vnet.Exists(net.BridgeNS()) {
		return 0, fmt.Errorf("--load-host %s: the cluster's virtual network %s does not exist (is the cluster up?)", dir, net.ID)
	}
	name := "load" + strconv.Itoa(index)
	if vnet.Exists(net.HostNS(name)) {
		return 0, fmt.Errorf("--load-host: load host %s of %s exists already (another process runs on it, or one crashed: 'cluster down' removes it); pick another --load-host-index", name, dir)
	}
	h, err := net.AddHost(ctx, name, vnet.LoadAddr(index))
	if err != nil {
		return 0, err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if rerr := net.RemoveHost(rctx, name); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("--load-host: find fieldbench's own binary: %w", err)
	}
	argv := append(vnet.Command(h.NS, exe), args...)
	env := append(os.Environ(), probe.LoadHostVar(h.Name, h.Addr, h.NS))
	if !load.Empty() {
		g, err := budget.Create(budget.LoadGroup(os.Getpid()), load, "")
		if err != nil {
			_ = budget.Here(budget.LoadGroup(os.Getpid())).Remove()
			return 0, fmt.Errorf("--load-budget: %w", err)
		}
		defer func() {
			if u, uerr := g.Usage(); uerr == nil && load.CPU > 0 {
				fmt.Fprintf(stderr, "load budget %s on %s: %.1f CPU-s used, held back in %.0f%% of %d periods\n", load, h.Name, u.CPUSeconds, u.ThrottledShare(), u.Periods)
			}
			if rerr := errors.Join(killGroup(g), g.Remove()); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}()
		argv = g.Join(argv)
		env = append(env, g.Seen(os.Getpid()).Env())
	}
	fmt.Fprintf(stderr, "on load host %s (%s, network namespace %s)\n", h.Name, h.Addr, h.NS)
	child := exec.Command(argv[0], argv[1:]...)
	child.Stdout, child.Stderr = stdout, stderr
	child.Env = env
	child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := child.Start(); err != nil {
		return 0, fmt.Errorf("--load-host: start on %s: %w", h.Name, err)
	}
	done := make(chan error, 1)
	go func() { done <- child.Wait() }()
	for {
		select {
		case s := <-sigs:
			_ = child.Process.Signal(s)
		case werr := <-done:
			var ee *exec.ExitError
			if errors.As(werr, &ee) {
				return ee.ExitCode(), nil
			}
			return 0, werr
		}
	}
}

// loadBudgetArg is the --load-budget=B among a load host's args
// (LoadHostArgs writes every flag so), checked as the run checks its own
// (CheckLoad), its refusals bad input; the zero budget without one.
func loadBudgetArg(args []string) (budget.Budget, error) {
	for _, a := range args {
		v, ok := strings.CutPrefix(a, "--load-budget=")
		if !ok || v == "" {
			continue
		}
		b, err := budget.ParseLoad(v)
		if err != nil {
			return budget.Budget{}, badInput{fmt.Errorf("--load-budget: %w", err)}
		}
		if err := CheckLoad(b, nil); err != nil {
			return budget.Budget{}, badInput{err}
		}
		return b, nil
	}
	return budget.Budget{}, nil
}

// The command line around RunOnLoadHost: which cluster --load-host DIR
// names, which load host a run takes and the child's arguments. They
// moved here from the CLI (issue 45: internal/cli is wiring only), which
// keeps the flags and the exit codes (ErrBadInput: 2, the child's own).

// LoadForLoadHost is the cluster of --load-host DIR: one that cannot be
// loaded, or one on loopback (whose nodes no load host can tell apart from
// its own loopback), is bad input.
func LoadForLoadHost(dir string) (*Cluster, error) {
	cl, err := Load(dir)
	if err != nil {
		return nil, badInput{fmt.Errorf("--load-host: %w", err)}
	}
	if !cl.OnHosts() {
		return nil, badInputf("--load-host %s: that cluster is on loopback, not on hosts (start it with 'cluster up ENGINE --network hosts')", dir)
	}
	return cl, nil
}

// LoadHostIndex is K of the load host load<K> a command runs on: index
// when given (--load-host-index), else 1, or I+1 for shard I (--shard I/N
// in flags, or --shards N with I in JOB_COMPLETION_INDEX, as each pod of
// a Kubernetes Indexed Job has it), so each shard is a host of its own.
// A K outside 1..254 (vnet.LoadAddr's) is bad input; a malformed shard
// counts as none (the child refuses it).
func LoadHostIndex(flags *pflag.FlagSet, index int) (int, error) {
	if index == 0 {
		i := ""
		if f := flags.Lookup("shard"); f != nil && f.Changed {
			i, _, _ = strings.Cut(f.Value.String(), "/")
		} else if f := flags.Lookup("shards"); f != nil && f.Changed {
			i = os.Getenv("JOB_COMPLETION_INDEX")
		}
		index = 1
		if n, err := strconv.Atoi(i); err == nil && n >= 0 && n < 254 {
			index = n + 1
		}
	}
	if index < 1 || index > 254 {
		return 0, badInputf("--load-host-index %d: want 1..254", index)
	}
	return index, nil
}

// LoadHostArgs is the command line of fieldbench re-run on a load host:
// path (the command's words, without the binary's name), then every flag
// of flags that was set, as --name=value (a list flag once per value),
// but --cluster's (the cluster is up: the child runs against it), and
// --db=dsn when no --db was given.
func LoadHostArgs(path []string, flags *pflag.FlagSet, dsn string) []string {
	args := append([]string{}, path...)
	db := false
	flags.Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "db":
			db = true
		case "cluster", "cluster-opt", "cluster-network":
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				args = append(args, "--"+f.Name+"="+v)
			}
			return
		}
		args = append(args, "--"+f.Name+"="+f.Value.String())
	})
	if !db {
		args = append(args, "--db="+dsn)
	}
	return args
}
