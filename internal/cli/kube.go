package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/kubernetes"
)

func newKubeCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "kube",
		Short: "Run a workload's shards on Kubernetes",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return usagef("kube needs a subcommand: job")
		},
	}
	c.AddCommand(newKubeJobCmd())
	return c
}

func newKubeJobCmd() *cobra.Command {
	var s kubernetes.Spec
	var secret, verb string
	var shards int
	c := &cobra.Command{
		Use:   "job WORKLOAD [-- RUN OPTIONS...]",
		Short: "Print the Indexed Job that runs WORKLOAD as --shards shards (kubectl apply -f -)",
		Long: `kube job prints a Kubernetes Indexed Job (completions = parallelism = --shards,
completionMode Indexed): every pod runs 'fieldbench run WORKLOAD RUN OPTIONS
--shards N' (or load or sweep, with --command), taking its index from JOB_COMPLETION_INDEX, its DSN from the
Secret --secret NAME/KEY (never written in the manifest) and writing its run
directory under /results (a PersistentVolumeClaim with --results-claim, or an
emptyDir, which is deleted with its pod: copy it out with kubectl cp first).
Collect every shard's directory, then 'fieldbench merge' them. The run
options are checked here as every pod would check them (with the command's
own flags and checks, as shard I of --shards for every I), so a Job whose
pods must refuse their options is refused instead (exit 2). Give
--start-at so the shards start their measured phase together: a time
ahead, at most 24 h ahead.`,
		Example: `  kubectl create secret generic fb-db --from-literal=dsn='postgres://...'
  fieldbench kube job microblog --shards 4 --image registry/fieldbench:dev --secret fb-db/dsn \
    --results-claim fb-results --start-at $(date -u -d '+5 min' +%FT%TZ) -- --clients 200 --rate 2000 --duration 4m | kubectl apply -f -`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, runArgs := args[0], args[1:]
			j, err := job.New(name)
			if err != nil {
				return job.Usage(err)
			}
			if err := kubernetes.Plan(j, verb, name, runArgs, secret, shards, &s); err != nil {
				return err
			}
			out, err := s.YAML()
			if err != nil {
				return job.Usage(err)
			}
			if s.ResultsClaim == "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: no --results-claim: every shard writes its results to an emptyDir, which is deleted with its pod; copy each pod's %s out (kubectl cp) before the pods go, or give --results-claim PVC\n", kubernetes.ResultsDir)
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), string(out))
			return err
		},
	}
	f := c.Flags()
	f.IntVar(&shards, "shards", 2, "number of shards (pods), 1..1000")
	f.StringVar(&verb, "command", "run", "what every pod runs ("+kubernetes.ShardedCommands()+"); a load: each pod loads its share of the dataset; a sweep: give -- --barrier DIR on a ReadWriteMany --results-claim, e.g. /results/barrier")
	f.StringVar(&s.Image, "image", "", "container image with fieldbench (build it with the repository's Dockerfile); required")
	f.StringVar(&secret, "secret", "", "Secret NAME/KEY holding the DSN; required")
	f.StringVar(&s.Name, "name", "", "the Job's name (default fieldbench-WORKLOAD)")
	f.StringVar(&s.Namespace, "namespace", "", "the Job's namespace (default: kubectl's)")
	f.StringVar(&s.ResultsClaim, "results-claim", "", "PersistentVolumeClaim mounted at /results (default: an emptyDir)")
	f.StringVar(&s.CPU, "cpu", "1", "CPU request and limit of each shard")
	f.StringVar(&s.Memory, "memory", "1Gi", "memory request and limit of each shard")
	f.StringVar(&s.StartAt, "start-at", "", fmt.Sprintf("common start of the shards' measured phase (RFC 3339): a time ahead, at most %g h ahead", job.MaxStartAhead.Hours()))
	return c
}
