package job

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/fieldbench/fieldbench/adapter/null"
	_ "github.com/fieldbench/fieldbench/db/sqlite"
	"github.com/fieldbench/fieldbench/runner"
)

// sizingRow is one sizing option of one command: set to value (with the
// options in with), the command must be refused by the sizing rule on a
// machine of sizingMachine bytes, which the command's defaults fit.
type sizingRow struct {
	workload, verb, option, value string
	with                          map[string]string
}

// sizingMachine is the small machine of the table: the process's base and
// 64 MiB. The values below need about twice that, so that a command whose
// refusal went missing does a modest amount of work before its cancelled
// context stops it.
const sizingMachine = baseBytes + 64<<20

// sizingRows: every option of every command that sizes memory (issue 40,
// "what to build" 3), and every --rate.
var sizingRows = []sizingRow{
	{"ingest", "run", "batch", "20000", map[string]string{"records": "20000"}},
	{"ingest", "run", "sources", "100", map[string]string{"batch": "1000"}},
	{"ingest", "sweep", "batch", "20000", nil},
	{"ingest", "sweep", "sources", "100", map[string]string{"batch": "1000"}},
	{"ingest", "op batch", "count", "200000", map[string]string{"source": "0", "index": "0"}},
	{"microblog", "generate", "users", "200000", nil},
	{"microblog", "load", "users", "40000", nil},
	{"microblog", "run", "users", "40000", nil},
	{"microblog", "run", "clients", "4000", nil},
	{"wiki", "generate", "articles", "8000000", nil},
	{"wiki", "run", "threads", "4000", nil},
	{"wiki", "load", "from", "../workload/wiki/testdata/sample-pages-articles.xml", nil},
	{"wiki", "run", "from", "../workload/wiki/testdata/sample-pages-articles.xml", nil},
	{"trajectory", "generate", "scale", "50", nil},
	{"trajectory", "load", "scale", "30", nil},
	{"trajectory", "load", "batch", "700000", nil},
	{"trajectory", "op write", "scale", "30", map[string]string{"index": "0"}},
	{"trajectory", "run", "scale", "10", nil},
	{"trajectory", "run", "clients", "600", nil},
	{"trajectory", "run", "batch", "200000", nil},
	{"trajectory", "run", "queries", "50000", nil},
	{"trajectory", "run", "repeat", "400000", nil},
	// finding 4: a rate the schedule cannot honour ran 0 operations.
	{"ingest", "run", "rate", "1e19", nil},
	{"ingest", "sweep", "rate", "1e300", nil},
	{"microblog", "run", "rate", "1e19", nil},
	{"wiki", "run", "rate", "1e19", nil},
	{"trajectory", "run", "rate", "1e19", nil},
}

// notSizing are the numeric options that size neither memory nor the
// schedule, each with why ("workload verb option"; verb * is every verb):
// what only makes a command longer is the rule's other half (progress
// every 10 s, Ctrl-C within a second), not an estimate.
var notSizing = map[string]string{
	"* * seed":                  "a seed",
	"* * retries":               "retries of one operation",
	"* * shards":                "which share this process takes",
	"ingest run records":        "time: a source holds one batch (--batch) at a time",
	"ingest * source":           "an index",
	"ingest * index":            "an index",
	"ingest sweep from":         "time: loads are run one at a time",
	"ingest sweep to":           "time, and the batch of --batch records is the most a source holds",
	"ingest sweep step":         "time",
	"ingest sweep runs":         "time",
	"ingest sweep warmup-runs":  "a count of runs",
	"ingest generate sources":   "time: generate streams its records",
	"ingest generate records":   "time: generate streams its records",
	"microblog * user":          "an id",
	"trajectory * index":        "an index",
	"wiki * id":                 "an id",
	"wiki load articles":        "time: synthetic articles are streamed",
	"wiki run articles":         "time: synthetic articles are streamed",
	"wiki run requests":         "time: requests are drawn as they are sent",
	"wiki run reads":            "a percentage",
	"wiki run sets":             "time",
	"wiki run repeat":           "time: a set's repetitions are kept as they end",
	"wiki run zipf-s":           "a skew",
	"trajectory op write count": "time: op write sends requests of at most 1000 records",
	"trajectory * radius":       "a distance (answers are bounded by the city's cells)",
	"trajectory * max-dist":     "a distance",
	"trajectory * k":            "bounded by trajectory.MaxK and the city's cells",
	"trajectory * x":            "a coordinate",
	"trajectory * y":            "a coordinate",
}

// TestSizingRule: every sizing option of every command goes through the
// sizing rule where a command is found (Find: the CLI, experiments and
// findmax all take their commands there), and a value that cannot fit is
// refused as bad input (exit 2) with the estimate, before the command does
// anything. Every numeric option is either in the table or said not to size
// anything, so a new one cannot slip past. Not parallel: it gives the
// process a small machine (machineMemory) while it runs.
func TestSizingRule(t *testing.T) {
	was := machineMemory
	machineMemory = func() uint64 { return sizingMachine }
	t.Cleanup(func() { machineMemory = was })

	covered := map[string]bool{}
	for _, r := range sizingRows {
		covered[r.workload+" "+r.verb+" "+r.option] = true
	}
	for _, name := range Names() {
		j, _ := New(name)
		for _, c := range j.Commands() {
			verbs := []string{c.Verb}
			for _, sub := range c.Subs {
				verbs = append(verbs, sub.Verb)
			}
			for _, verb := range verbs {
				// Every command fits with its defaults.
				if err := Fit(j, verb); err != nil {
					t.Errorf("%s %s with its defaults: %v", verb, name, err)
				}
				for _, f := range j.Opts().For(verb) {
					if k := f.Value.Type(); k != "int" && k != "int64" && k != "float64" {
						continue
					}
					key := name + " " + verb + " " + f.Name
					if covered[key] || classified(name, verb, f.Name) {
						continue
					}
					t.Errorf("%s: --%s is in neither sizingRows (sizes memory or a schedule: give it a Need) nor notSizing (say why not)", verb+" "+name, f.Name)
				}
			}
		}
	}

	for _, r := range sizingRows {
		t.Run(strings.ReplaceAll(r.workload+" "+r.verb+" "+r.option, " ", "_"), func(t *testing.T) {
			j, err := New(r.workload)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			opts := map[string]string{r.option: r.value}
			for k, v := range r.with {
				opts[k] = v
			}
			for k, v := range map[string]string{"db": "sqlite://" + filepath.Join(dir, "x.db"), "out": dir, "results": dir} {
				if j.Opts().Has(r.verb, k) && opts[k] == "" {
					opts[k] = v
				}
			}
			for k, v := range opts {
				if err := j.Opts().Set(k, v); err != nil {
					t.Fatalf("--%s %s: %v", k, v, err)
				}
			}
			c := findVerb(t, j, r.verb)
			// A command whose refusal went missing stops where it looks
			// at its context.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			var out bytes.Buffer
			err = c.Run(ctx, &Env{Stdout: &out, Stderr: &out, Version: "test"})
			var se *SizeError
			switch {
			case !IsUsage(err):
				t.Fatalf("%s %s --%s %s: %v (%s); want a usage error (exit 2)", r.verb, r.workload, r.option, r.value, err, out.String())
			case r.option == "rate":
				if !strings.Contains(err.Error(), fmt.Sprintf("at most %g", float64(runner.MaxRate))) {
					t.Fatalf("--rate %s: %v; want the schedule's bound", r.value, err)
				}
			case !errors.As(err, &se):
				t.Fatalf("--%s %s: %v; want the sizing rule's refusal", r.option, r.value, err)
			case !strings.Contains(err.Error(), "--"+r.option+" ") || !strings.Contains(err.Error(), "needs about") || !strings.Contains(err.Error(), "this machine has"):
				t.Fatalf("--%s %s: %q does not name the option, the estimate and the machine", r.option, r.value, err)
			}
		})
	}
}

// classified reports whether notSizing says option of verb of workload
// sizes nothing.
func classified(workload, verb, option string) bool {
	for _, w := range []string{workload, "*"} {
		for _, v := range []string{verb, "*"} {
			if _, ok := notSizing[w+" "+v+" "+option]; ok {
				return true
			}
		}
	}
	return false
}

// findVerb is command verb ("run", "op batch") of j as Find gives it.
func findVerb(t *testing.T, j Job, verb string) Command {
	t.Helper()
	top, _, _ := strings.Cut(verb, " ")
	c, ok := Find(j, top)
	if ok && top != verb {
		ok = false
		for _, sub := range c.Subs {
			if sub.Verb == verb {
				c, ok = sub, true
			}
		}
	}
	if !ok {
		t.Fatalf("no command %q", verb)
	}
	return c
}

// TestSizeErrorSays: the refusal names each term large enough to matter,
// with its units and cost, the total and the machine.
func TestSizeErrorSays(t *testing.T) {
	t.Parallel()
	e := &SizeError{
		Needs: []Need{
			{Options: "--count 100000000", Units: 1e8, Cost: costIngestRecord},
			{Options: "--sources 8", Units: 8, Cost: costClient},
		},
		Total: 1e8*costIngestRecord.Bytes + baseBytes, Usable: 23 << 30,
	}
	got := e.Error()
	for _, want := range []string{"--count 100000000", "100,000,000", "660 B per ingest record", "needs about 66.1 GB", "this machine has 24.7 GB available"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q does not say %q", got, want)
		}
	}
	if strings.Contains(got, "--sources") {
		t.Errorf("%q names a term of less than 1 %% of the estimate", got)
	}
}
