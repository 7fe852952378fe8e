// Package cli builds the fieldbench command line from the workload and
// adapter registries, and decides exit codes in one place (Main).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/adapter"
)

// Version is fieldbench's version; release builds set it with -ldflags.
var Version = "0.1.0-dev"

// Exit codes.
const (
	ExitOK          = 0
	ExitFailure     = 1   // the work failed (database error, I/O...)
	ExitUsage       = 2   // bad input: flags, arguments, DSN
	ExitInterrupted = 130 // Ctrl-C: results up to then were written
)

// usageError marks bad input so Main exits with ExitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// profileFile is the open --cpuprofile file, closed when the command ends.
var profileFile *os.File

// errInterrupted is returned by commands stopped by a signal after they saved
// what they had.
var errInterrupted = errors.New("interrupted")

// Main runs fieldbench with args and returns the exit code. The first
// SIGINT/SIGTERM cancels the command's context (it stops cleanly and saves
// its results); a second one kills the process the default way.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // restore default handling: a second Ctrl-C ends at once
	}()
	defer stop()
	return Execute(ctx, args, stdout, stderr)
}

// Execute runs the command tree with ctx (tests call it directly).
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if profileFile != nil {
		pprof.StopCPUProfile()
		profileFile.Close()
		profileFile = nil
	}
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, errInterrupted):
		fmt.Fprintln(stderr, "fieldbench: interrupted; results measured so far were saved")
		return ExitInterrupted
	}
	fmt.Fprintf(stderr, "fieldbench: error: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) || errors.Is(err, adapter.ErrBadDSN) { // a malformed DSN is bad input too
		fmt.Fprintln(stderr, "Run 'fieldbench help' or 'fieldbench COMMAND --help' for usage.")
		return ExitUsage
	}
	return ExitFailure
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "fieldbench",
		Short: "Evaluate databases with realistic workloads on real servers",
		Long: `fieldbench evaluates databases the way published studies did by hand:
realistic application workloads — microblog (Fonseca et al. 2013), wiki
(Dory et al. 2011), ingest (Lourenço et al. 2015), trajectory
(Niyizamwiyitira & Lundberg 2017) — with exact latency measurement (HDR
histograms), one self-describing result file per run and an offline HTML
report.

Without --db everything runs on an embedded SQLite database inside the run
directory, so 'fieldbench run microblog --duration 30s' works on a fresh
machine. 'fieldbench cluster up postgres|mariadb|redis|cassandra|hbase' starts
real servers on loopback; 'fieldbench list' shows every workload and
adapter.`,
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	var cpuProfile string
	root.PersistentFlags().StringVar(&cpuProfile, "cpuprofile", "", "write a Go CPU profile of fieldbench itself to FILE (to see the client's own cost)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if cpuProfile == "" {
			return nil
		}
		f, err := os.Create(cpuProfile)
		if err != nil {
			return usagef("--cpuprofile: %v", err)
		}
		profileFile = f
		return pprof.StartCPUProfile(f)
	}
	root.AddCommand(newListCmd())
	for _, v := range verbs {
		if mks := workloadCmds[v.name]; len(mks) > 0 {
			subs := make([]*cobra.Command, len(mks))
			for i, mk := range mks {
				subs[i] = mk()
				if v.name == "run" || v.name == "sweep" {
					withCluster(subs[i])
				}
			}
			root.AddCommand(parentCmd(v.name, v.short, subs...))
		}
	}
	root.AddCommand(newClusterCmd(), newReportCmd(), newExperimentCmd(), newScoresCmd())
	usageArgs(root)
	return root
}

// usageArgs makes a wrong number of arguments a usage error (exit 2) in
// every command, like a bad flag.
func usageArgs(c *cobra.Command) {
	if v := c.Args; v != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := v(cmd, args); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		usageArgs(sub)
	}
}

// verbs are the commands whose subcommands are workloads, in help order.
var verbs = []struct{ name, short string }{
	{"generate", "Generate a workload's dataset as files"},
	{"load", "Populate a database with a workload's dataset"},
	{"run", "Run a workload and write its result file and report"},
	{"sweep", "Run a workload at a series of loads, several times each, with statistics"},
	{"op", "Run one operation of a workload against a database and print the result"},
}

// workloadCmds holds, per verb, the constructors of each workload's
// subcommand; every workload's file registers its own in init, so adding a
// workload touches no shared code.
var workloadCmds = map[string][]func() *cobra.Command{}

func registerWorkloadCmd(verb string, mk func() *cobra.Command) {
	workloadCmds[verb] = append(workloadCmds[verb], mk)
}

// parentCmd is a command whose subcommands are workloads: an unknown one is a
// usage error naming the known workloads, not cobra's generic help.
func parentCmd(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:   use + " WORKLOAD",
		Short: short,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("%s needs a workload (one of: %s)", use, subNames(cmd))
			}
			return usagef("unknown workload %q for %s (known: %s)", args[0], use, subNames(cmd))
		},
	}
	c.AddCommand(subs...)
	return c
}

func subNames(cmd *cobra.Command) string {
	s := ""
	for i, c := range cmd.Commands() {
		if i > 0 {
			s += ", "
		}
		s += c.Name()
	}
	return s
}
