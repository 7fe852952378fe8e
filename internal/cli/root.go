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
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/outpath"
	"github.com/fieldbench/fieldbench/result"
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
type usageError = job.UsageError

func usagef(format string, a ...any) error { return job.Usagef(format, a...) }

// errInterrupted is returned by commands stopped by a signal after they saved
// what they had.
var errInterrupted = job.ErrInterrupted

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
	var profile *os.File // the open --cpuprofile file, closed when the command ends
	root := newRoot(stdout, stderr, &profile)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if profile != nil {
		pprof.StopCPUProfile()
		profile.Close()
	}
	if code, ok := loadHostDone(err); ok {
		return code // the child on the load host said why
	}
	switch {
	case err == nil:
		return ExitOK
	case err == errInterrupted:
		fmt.Fprintln(stderr, "fieldbench: interrupted; results measured so far were saved")
		return ExitInterrupted
	case errors.Is(err, errInterrupted):
		fmt.Fprintf(stderr, "fieldbench: %v\n", err)
		return ExitInterrupted
	case ctx.Err() != nil:
		// A signal cut work short that has nothing to save (a load, a
		// cluster start): still an interrupt, with what it cut short.
		fmt.Fprintf(stderr, "fieldbench: interrupted: %v\n", err)
		return ExitInterrupted
	}
	var reg errRegression
	if errors.As(err, &reg) {
		fmt.Fprintf(stderr, "fieldbench: %v\n", err)
		return ExitRegression
	}
	fmt.Fprintf(stderr, "fieldbench: error: %v\n", err)
	var ue usageError
	// A malformed DSN is bad input too, and so is a result file whose
	// histogram is damaged.
	if errors.As(err, &ue) || errors.Is(err, adapter.ErrBadDSN) || errors.Is(err, result.ErrDamagedHist) {
		fmt.Fprintln(stderr, "Run 'fieldbench help' or 'fieldbench COMMAND --help' for usage.")
		return ExitUsage
	}
	return ExitFailure
}

func newRoot(stdout, stderr io.Writer, profile **os.File) *cobra.Command {
	root := &cobra.Command{
		Use:   "fieldbench",
		Short: "Evaluate databases with realistic workloads on real servers",
		// The workloads and engines come from the registries: a hand-kept
		// list named 8 of the 10 engines `cluster up` knows.
		Long: fmt.Sprintf(`fieldbench evaluates databases the way published studies did by hand:
realistic application workloads with exact latency measurement (HDR
histograms), one self-describing result file per run and an offline HTML
report. The workloads:

%s

Without --db everything runs on an embedded SQLite database inside the run
directory, so 'fieldbench run microblog --duration 30s' works on a fresh
machine. 'fieldbench cluster up ENGINE' starts real servers on loopback
(engines: %s); 'fieldbench list' shows every workload and adapter.`, workloadLines("  "), strings.Join(cluster.Engines(), ", ")),
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	// An unknown command is bad input (exit 2), not a failure; without
	// arguments fieldbench shows its help.
	root.Args = cobra.ArbitraryArgs
	root.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		return usagef("unknown command %q (see 'fieldbench help')", args[0])
	}
	root.SetHelpCommand(&cobra.Command{
		Use:   "help [COMMAND]",
		Short: "Help about any command",
		RunE: func(cmd *cobra.Command, args []string) error {
			c, rest, err := cmd.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return usagef("no help topic %q (commands: see 'fieldbench help')", strings.Join(args, " "))
			}
			return c.Help()
		},
	})
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return job.Usage(err) })
	var cpuProfile string
	root.PersistentFlags().StringVar(&cpuProfile, "cpuprofile", "", "write a Go CPU profile of fieldbench itself to FILE (to see the client's own cost)")
	root.PersistentPreRunE = func(_ *cobra.Command, args []string) error {
		if cpuProfile == "" {
			return nil
		}
		if err := outpath.Output(cpuProfile, args...); err != nil {
			return usagef("--cpuprofile %v", err)
		}
		f, err := os.Create(cpuProfile)
		if err != nil {
			return usagef("--cpuprofile: %v", err)
		}
		*profile = f
		return pprof.StartCPUProfile(f)
	}
	root.AddCommand(newListCmd())
	for _, v := range verbs {
		subs := jobCmds(v.name)
		if len(subs) > 0 {
			sort.Slice(subs, func(i, k int) bool { return subs[i].Name() < subs[k].Name() })
			root.AddCommand(parentCmd(v.name, v.short, subs...))
		}
	}
	root.AddCommand(newClusterCmd(), newReportCmd(), newExperimentCmd(), newStudyCmd(), newScoresCmd(), newCompareCmd(), newFindmaxCmd(), newMergeCmd(), newKubeCmd(), newHistoryCmd())
	completionCmd(root)
	usageArgs(root)
	finiteFloats(root)
	return root
}

// finiteFloats makes every float64 flag of c and its subcommands refuse
// NaN and ±Inf at parsing (exit 2), whichever package declared it.
func finiteFloats(c *cobra.Command) {
	c.Flags().VisitAll(job.Finite)
	c.PersistentFlags().VisitAll(job.Finite)
	for _, sub := range c.Commands() {
		finiteFloats(sub)
	}
}

// usageArgs makes a wrong number of arguments a usage error (exit 2) in
// every command, like a bad flag.
func usageArgs(c *cobra.Command) {
	if v := c.Args; v != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := v(cmd, args); err != nil {
				return job.Usage(err)
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
