package kubernetes

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/job"
)

// Plan refuses, as bad input, what every pod would refuse (run options
// the command lacks or refuses as a shard, a --split that is not one
// weight per shard, a start in the past or given twice) and what the Job
// lacks (a Secret NAME/KEY, a valid name), and fills the Job otherwise:
// its default name, the pods' arguments, the Secret.
func TestPlan(t *testing.T) {
	t.Parallel()
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		name, verb string
		args       []string
		secret     string
		shards     int
		spec       Spec   // what kube job's own flags set
		want       string // "": accepted; else in the refusal
	}{
		{"microblog", "run", []string{"--clients", "4"}, "fb-db/dsn", 2, Spec{}, ""},
		{"ingest", "run", []string{"--sources", "8", "--split", "5,3"}, "fb-db/dsn", 2, Spec{StartAt: later}, ""},
		{"microblog", "run", []string{"--no-such-option"}, "fb-db/dsn", 2, Spec{}, "run options: unknown flag: --no-such-option (db, shard, shards and results are set by the Job)"},
		{"microblog", "run", []string{"--db", "sqlite:///x"}, "fb-db/dsn", 2, Spec{}, "run options: unknown flag: --db"},
		{"microblog", "run", []string{"--clients", "2"}, "fb-db/dsn", 4, Spec{}, "share of the 2 clients is empty"},
		{"ingest", "run", []string{"--split", "5,x"}, "fb-db/dsn", 2, Spec{}, `--split 5,x: weight "x" is not a whole number from 1`},
		{"ingest", "run", []string{"--split", "5,3,1"}, "fb-db/dsn", 2, Spec{}, "--split 5,3,1 has 3 weights for --shards 2: give one per shard"},
		{"microblog", "run", nil, "fb-db", 2, Spec{}, `--secret "fb-db": want NAME/KEY of the Secret that holds the DSN`},
		{"microblog", "run", nil, "fb-db/dsn", 2, Spec{Name: "Bad_Name"}, `--name "Bad_Name": a Job name is lower case`},
		{"microblog", "run", nil, "fb-db/dsn", 2, Spec{StartAt: past}, "in the past"},
		{"microblog", "run", []string{"--start-at", later}, "fb-db/dsn", 2, Spec{StartAt: later}, "give --start-at once"},
		{"microblog", "load", nil, "fb-db/dsn", 2, Spec{StartAt: later}, "--start-at: 'load microblog' has no common start (only a run does)"},
		{"microblog", "op", nil, "fb-db/dsn", 2, Spec{}, "kube job: 'op microblog' cannot run as shards (these can: " + ShardedCommands() + ")"},
	} {
		j, err := job.New(c.name)
		if err != nil {
			t.Fatal(err)
		}
		s := c.spec
		s.Image = "reg/fb:dev"
		err = Plan(j, c.verb, c.name, c.args, c.secret, c.shards, &s)
		what := c.verb + " " + c.name + " " + strings.Join(c.args, " ")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", what, err)
		case c.want == "" && (s.Name != "fieldbench-"+c.name || s.SecretName != "fb-db" || s.SecretKey != "dsn" || int(s.Shards) != c.shards ||
			!slices.Equal(s.Args, append([]string{c.verb, c.name}, c.args...))):
			t.Errorf("%s: the Job %+v", what, s)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !job.IsUsage(err)):
			t.Errorf("%s: %v, want bad input saying %q", what, err, c.want)
		}
	}
}

// ShardedCommands names every registered workload's commands that have
// --shards, and no other (microblog among them), each workload once.
func TestShardedCommands(t *testing.T) {
	t.Parallel()
	got := ShardedCommands()
	seen := map[string]bool{}
	for _, part := range strings.Split(got, "; ") {
		verbs, name, ok := strings.Cut(part, " of ")
		if !ok || seen[name] {
			t.Fatalf("%q: part %q", got, part)
		}
		seen[name] = true
		j, err := job.New(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range strings.Split(verbs, " and ") {
			if !j.Opts().Has(v, "shards") {
				t.Errorf("%q names %s %s, which has no --shards", got, v, name)
			}
		}
		for _, c := range j.Commands() {
			if j.Opts().Has(c.Verb, "shards") && !slices.Contains(strings.Split(verbs, " and "), c.Verb) {
				t.Errorf("%q leaves out %s %s", got, c.Verb, name)
			}
		}
	}
	if !seen["microblog"] {
		t.Errorf("%q does not name microblog", got)
	}
}
