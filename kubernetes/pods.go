package kubernetes

import (
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fieldbench/fieldbench/job"
)

// Plan fills s for `kube job`: the pods run verb of workload name (job j;
// a command without --shards is refused) with runArgs, as shards shards, their DSN from
// the Secret secret (NAME/KEY); the Job is named fieldbench-NAME unless
// s.Name says otherwise. It checks the run options now, as every pod
// would check them (with the command's own flags and checks, as shard I
// of N for every I: checkPods), so that a Job whose pods must refuse
// their options is refused instead. Every refusal is bad input
// (job.Usage: the CLI's exit 2). It lives here, not in the CLI, because
// what a pod will accept is the Job's (issue 45: internal/cli is wiring
// only).
func Plan(j job.Job, verb, name string, runArgs []string, secret string, shards int, s *Spec) error {
	if !j.Opts().Has(verb, "shards") {
		return job.Usagef("kube job: '%s %s' cannot run as shards (these can: %s)", verb, name, ShardedCommands())
	}
	fs := pflag.NewFlagSet(verb+" "+name, pflag.ContinueOnError)
	fs.SetOutput(new(strings.Builder))
	for _, f := range j.Opts().For(verb) {
		switch f.Name {
		case "db", "shard", "shards", "results":
			continue // the Job sets them
		}
		fs.AddFlag(f)
	}
	if err := fs.Parse(runArgs); err != nil {
		return job.Usagef("run options: %v (db, shard, shards and results are set by the Job)", err)
	}
	if f := fs.Lookup("split"); f != nil && f.Changed {
		// Every pod would refuse a split that is not one weight per shard.
		ws := strings.Split(f.Value.String(), ",")
		for _, w := range ws {
			if n, err := strconv.Atoi(strings.TrimSpace(w)); err != nil || n < 1 {
				return job.Usagef("--split %s: weight %q is not a whole number from 1", f.Value, w)
			}
		}
		if len(ws) != shards {
			return job.Usagef("--split %s has %d weights for --shards %d: give one per shard", f.Value, len(ws), shards)
		}
	}
	ns, key, ok := strings.Cut(secret, "/")
	if !ok {
		return job.Usagef("--secret %q: want NAME/KEY of the Secret that holds the DSN", secret)
	}
	s.SecretName, s.SecretKey, s.Shards = ns, key, int32(shards)
	if s.Name == "" {
		s.Name = "fieldbench-" + name
	}
	s.Args = append([]string{verb, name}, runArgs...)
	if err := s.Validate(); err != nil {
		return job.Usage(err)
	}
	return checkPods(j, verb, name, fs, *s)
}

// checkPods checks the pods' options as each pod of the Job would: the
// run options parsed into fs (the command's own flags), kube job's
// --start-at, and every shard index, with the command's own checks
// (job.CheckShards, the pods' --db standing for the Secret's DSN).
func checkPods(j job.Job, verb, name string, fs *pflag.FlagSet, s Spec) error {
	if s.StartAt != "" {
		switch f := fs.Lookup("start-at"); {
		case f == nil:
			return job.Usagef("--start-at: '%s %s' has no common start (only a run does)", verb, name)
		case f.Changed:
			return job.Usagef("give --start-at once: as kube job's option or after --, not both")
		}
		if err := j.Opts().Set("start-at", s.StartAt); err != nil {
			return job.Usage(err)
		}
	}
	if f := fs.Lookup("start-at"); f != nil && f.Value.String() != "" {
		// The pods may start a little late (job.LateStartGrace); the
		// Job itself must name a start ahead.
		if err := job.CheckStartAt(f.Value.String(), time.Now()); err != nil {
			return err
		}
	}
	// The pods' --db is $(FIELDBENCH_DB), from the Secret.
	return job.CheckShards(j, verb, int(s.Shards), "$("+DBEnv+")")
}

// ShardedCommands says, for every registered workload, which of its
// commands run as shards (they have --shards), so can be a Job's pods:
// "run and load of microblog; ...", for kube job's help and refusals.
func ShardedCommands() string {
	var parts []string
	for _, name := range job.Names() {
		j, err := job.New(name)
		if err != nil {
			continue
		}
		var verbs []string
		for _, c := range j.Commands() {
			if j.Opts().Has(c.Verb, "shards") {
				verbs = append(verbs, c.Verb)
			}
		}
		if len(verbs) > 0 {
			parts = append(parts, strings.Join(verbs, " and ")+" of "+name)
		}
	}
	return strings.Join(parts, "; ")
}
