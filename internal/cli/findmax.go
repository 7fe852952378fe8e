package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/findmax"
	"github.com/fieldbench/fieldbench/job"
)

func newFindmaxCmd() *cobra.Command {
	var subs []*cobra.Command
	for _, name := range job.Names() {
		j, err := job.New(name)
		if err != nil || findmax.Supported(j) != "" {
			continue
		}
		subs = append(subs, findmaxCmd(j, name))
	}
	return parentCmd("findmax", "Search the maximum rate a database sustains under a latency objective (open-loop steps, ramp then bisection)", subs...)
}

func findmaxCmd(j job.Job, name string) *cobra.Command {
	var slo string
	cfg := findmax.Config{Job: j}
	cmd := &cobra.Command{
		Use:     name,
		Short:   "Maximum sustainable " + name + " throughput under --slo",
		Long:    findmax.Help(),
		Example: findmaxExample(name),
		Args:    cobra.NoArgs,
		// The objective is checked before RunE, which --cluster wraps: a
		// rule naming an operation the workload lacks is refused before a
		// server starts or a step runs.
		PreRunE: func(*cobra.Command, []string) (err error) {
			cfg.Rules, err = findmax.Objective(slo, j.Workload().Operations)
			return err
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Results = j.Opts().Get("results")
			cfg.Stdout, cfg.Stderr, cfg.Version = cmd.OutOrStdout(), cmd.ErrOrStderr(), Version
			_, _, err := findmax.Run(job.WithProgress(cmd.Context(), cfg.Stderr), cfg)
			return err
		},
	}
	own := findmax.StepOptions(j)
	for _, f := range j.Opts().For("run") {
		if !own[f.Name] {
			cmd.Flags().AddFlag(f)
		}
	}
	fl := cmd.Flags()
	fl.StringVar(&slo, "slo", "", "latency objective, required: FIGURE[:OP]<DURATION, comma-separated (figures: mean, p50, p90, p99, p99.9, max), e.g. 'p99<50ms'")
	fl.Float64Var(&cfg.MinShare, "min-achieved", 0.95, "share of the offered rate that must complete for a step to hold")
	fl.Float64Var(&cfg.From, "from-rate", 100, "first offered rate, operations per second")
	fl.Float64Var(&cfg.Max, "max-rate", 1e6, "highest offered rate tried")
	fl.Float64Var(&cfg.Precision, "precision", 0.05, "stop when the bracket [held, broke) is this narrow (0.05: within 5 %)")
	fl.IntVar(&cfg.MaxSteps, "max-steps", 20, "most steps run (each takes --step-duration)")
	fl.BoolVar(&cfg.RepeatClose, "repeat-close", true, "decide a step whose verdict is within 10 % of a limit (held or broken) by the best of three runs")
	fl.DurationVar(&cfg.StepDuration, "step-duration", 30*time.Second, "length of one step, warm-up included")
	fl.DurationVar(&cfg.StepWarmup, "step-warmup", 5*time.Second, "start of each step excluded from its verdict")
	fl.DurationVar(&cfg.Confirm, "confirm", 0, "after the search, confirm the answer with fixed-rate runs this long: at the rate found, backing off until one holds (the answer for runs this long), then --confirm-over above it (should break); 0 = none")
	fl.Float64Var(&cfg.ConfirmOver, "confirm-over", 0.2, "how far above the confirmed rate the last confirmation run offers (0.2: 20 %)")
	fl.IntVar(&cfg.ConfirmBackoffs, "confirm-backoffs", 3, "most times a confirmation that breaks is run again one --precision step lower")
	// check runs before a --cluster is started, and again in Run; the
	// objective is in cfg since PreRunE.
	check := func() error { return findmax.Check(cfg) }
	inner := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := check(); err != nil {
			return err
		}
		return inner(cmd, args)
	}
	withCluster(cmd, check, func(*cluster.Cluster) {})
	return cmd
}

func findmaxExample(name string) string {
	if name == "microblog" {
		return `  fieldbench findmax microblog --slo 'p99<50ms' --clients 50 --step-duration 20s
  fieldbench findmax microblog --db postgres://... --slo 'p99<20ms,p99.9:post<100ms' --from-rate 500 --confirm 1m`
	}
	return "  fieldbench findmax " + name + " --slo 'p99<50ms' --step-duration 20s\n" +
		"  fieldbench findmax " + name + " --db postgres://... --slo 'p99<100ms' --from-rate 50 --confirm 1m"
}
