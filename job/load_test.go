package job_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/result"
)

// maskLoad hides what a load's lines say of the machine: the run
// directory, times, rates and sizes on disk (whose decimals it keeps as
// #: how many is the output's, not the machine's).
func maskLoad(s, dir string) string {
	if dir != "" {
		s = strings.ReplaceAll(s, dir, "DIR")
	}
	for _, r := range []struct{ re, to string }{
		{`\d+\.\d+s\b`, "#s"},
		{`\d+ records/s`, "# records/s"},
	} {
		s = regexp.MustCompile(r.re).ReplaceAllString(s, r.to)
	}
	return regexp.MustCompile(`\d+\.\d+ MB on disk`).ReplaceAllStringFunc(s, func(m string) string {
		_, frac, _ := strings.Cut(strings.TrimSuffix(m, " MB on disk"), ".")
		return "#." + strings.Repeat("#", len(frac)) + " MB on disk"
	})
}

// progressLines are stderr's lines but the heartbeat's (indented, every
// 10 s) and the generator's time (said past 2 s): what every machine
// prints.
func progressLines(stderr string) string {
	var keep []string
	for _, l := range strings.SplitAfter(stderr, "\n") {
		if l != "" && !strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "generated ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "")
}

// loadRecord says what a load's run directory holds and, when there is
// one, what its result file records, without the machine's figures.
func loadRecord(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "file %s\n", e.Name())
	}
	path := filepath.Join(dir, result.FileName)
	f, err := os.Open(path)
	if err != nil {
		return b.String()
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var kinds []string
	for sc.Scan() {
		var line struct{ Kind string }
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, line.Kind)
	}
	fmt.Fprintf(&b, "lines %s\n", strings.Join(kinds, " "))
	run, err := result.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := run.Header
	fmt.Fprintf(&b, "header %s %s %s seed %d options %v operations %v series %v version set %t\n",
		h.Workload, h.Adapter, maskLoad(h.DSN, dir), h.Seed, h.Options, h.Operations, h.Series, h.Database.Version != "")
	for _, e := range run.Events {
		fmt.Fprintf(&b, "event %s %s at %g\n", e.Name, maskLoad(e.Detail, ""), e.At)
	}
	if s := run.Summary; s != nil {
		var extra []string
		for k, v := range s.Extra {
			if k == "populate_seconds" || k == "db_size_bytes" {
				extra = append(extra, k)
			} else {
				extra = append(extra, fmt.Sprintf("%s=%g", k, v))
			}
		}
		sort.Strings(extra)
		fmt.Fprintf(&b, "summary ops %d extra %s\n", len(s.Ops), strings.Join(extra, " "))
	}
	return b.String()
}

// TestLoadOutputsUnchanged pins what load prints and leaves behind, for
// each workload with a load: into a new run directory (no --db) and again
// into the database it made, which holds the dataset by then. It passed
// on the loads before they shared runLoad, and is what says that moving
// them onto it changed nothing.
func TestLoadOutputsUnchanged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		workload string
		opts     map[string]string
		// dir is the run directory's name's end; out, progress and record
		// what the first load prints on stdout and stderr and leaves in
		// it; again and againErr what a second load into its database
		// prints or refuses with.
		dir, out, progress, record string
		again, againErr            string
	}{
		{
			workload: "microblog", opts: map[string]string{"users": "40"}, dir: "-microblog-load-sqlite",
			out: "loaded 40 users, 593 follows, 250 tweets (denormalized model) into sqlite://DIR/microblog.db in #s; #.## MB on disk\n" +
				"run it with: fieldbench run microblog --db sqlite://DIR/microblog.db\n",
			progress: "loading 40 users, 593 follows, 250 tweets (denormalized model)...\n",
			record: "file microblog.db\nfile result.jsonl\nlines header event summary\n" +
				"header microblog sqlite sqlite://DIR/microblog.db seed 1 options map[command:load generator:3 model:denormalized seed:1 users:40] operations [] series map[] version set true\n" +
				"event populate #s at 0\n" +
				"summary ops 0 extra db_size_bytes follows=593 populate_seconds tweets=250 users=40\n",
			again: "database already holds this dataset (denormalized model); nothing to load\n",
		},
		{
			workload: "wiki", opts: map[string]string{"articles": "30", "seed": "3"}, dir: "-wiki-load-sqlite",
			out: "loaded 30 articles (0.1 MB of text) from synthetic (seed 3) into sqlite://DIR/wiki.db in #s; #.# MB on disk\n" +
				"run it with: fieldbench run wiki --db sqlite://DIR/wiki.db\n",
			progress: "loading 30 synthetic articles...\n",
			record: "file result.jsonl\nfile wiki.db\nlines header event summary\n" +
				"header wiki sqlite sqlite://DIR/wiki.db seed 3 options map[articles:30 command:load seed:3 source:synthetic (seed 3)] operations [] series map[] version set true\n" +
				"event populate #s at 0\n" +
				"summary ops 0 extra articles=30 db_size_bytes populate_seconds total_bytes=129841\n",
			again: "the database already holds 30 articles (0.1 MB); nothing to load (--reset replaces them)\n",
		},
		{
			workload: "trajectory", opts: map[string]string{"scale": "0.0002"}, dir: "-trajectory-load-sqlite",
			out: "loaded 1297 records (19 cells) into sqlite://DIR/trajectory.db in #s: # records/s\n" +
				"query it with: fieldbench op trajectory region --db sqlite://DIR/trajectory.db --weekday mon --slot 12:00\n",
			record:   "file trajectory.db\n",
			againErr: "already holds 1297 trajectory records",
		},
	} {
		t.Run(tc.workload, func(t *testing.T) {
			t.Parallel()
			results := t.TempDir()
			out, stderr, err := runJob(t, tc.workload, "load", with(tc.opts, "results", results))
			if err != nil {
				t.Fatalf("load: %v\n%s", err, stderr)
			}
			entries, _ := os.ReadDir(results)
			if len(entries) != 1 || !strings.HasSuffix(entries[0].Name(), tc.dir) {
				t.Fatalf("run directories %v, want one *%s", entries, tc.dir)
			}
			dir := filepath.Join(results, entries[0].Name())
			if got := maskLoad(out, dir); got != tc.out {
				t.Errorf("stdout:\n%s\nwant:\n%s", got, tc.out)
			}
			if got := maskLoad(progressLines(stderr), dir); got != tc.progress {
				t.Errorf("stderr:\n%s\nwant:\n%s", got, tc.progress)
			}
			if got := loadRecord(t, dir); got != tc.record {
				t.Errorf("run directory:\n%s\nwant:\n%s", got, tc.record)
			}
			dsn := "sqlite://" + filepath.Join(dir, tc.workload+".db")
			out, stderr, err = runJob(t, tc.workload, "load", with(tc.opts, "results", results, "db", dsn))
			switch {
			case tc.againErr != "" && (err == nil || !strings.Contains(err.Error(), tc.againErr)):
				t.Errorf("second load: %v, want an error saying %q", err, tc.againErr)
			case tc.againErr == "" && err != nil:
				t.Errorf("second load: %v\n%s", err, stderr)
			case tc.againErr == "" && out != tc.again:
				t.Errorf("second load's stdout:\n%s\nwant:\n%s", out, tc.again)
			}
			if entries, _ := os.ReadDir(results); len(entries) != 1 {
				t.Errorf("a load into --db made a run directory: %v", entries)
			}
			if got := loadRecord(t, dir); got != tc.record {
				t.Errorf("second load changed the run directory:\n%s\nwant:\n%s", got, tc.record)
			}
		})
	}
}

// TestLoadChecksEveryShard pins what load's check refuses, as each shard
// (CheckShards, what kube job asks before it prints a Job): the dataset's
// options first, then what a sharded load cannot do; run is still checked
// as run, and a command with no check of its own refuses nothing.
func TestLoadChecksEveryShard(t *testing.T) {
	t.Parallel()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "shared.db")
	const dump = "../workload/wiki/testdata/sample-pages-articles.xml"
	for _, tc := range []struct {
		workload, verb string
		opts           map[string]string
		want           string // "": no refusal
	}{
		{"microblog", "load", map[string]string{"users": "40"}, ""},
		{"microblog", "load", map[string]string{"users": "3"}, "share of the 3 users is empty"},
		{"microblog", "load", map[string]string{"users": "1"}, "--users must be at least 2"},
		{"microblog", "run", map[string]string{"clients": "2"}, "share of the 2 clients is empty"},
		{"microblog", "generate", map[string]string{"users": "3"}, ""},
		{"wiki", "load", map[string]string{"articles": "100"}, ""},
		{"wiki", "load", map[string]string{"reset": "true"}, "--reset with --shard would delete the other shards' articles"},
		{"wiki", "load", map[string]string{"from": dump}, "a dump is read in order and cannot be split"},
		{"wiki", "load", map[string]string{"articles": "0", "reset": "true"}, "--articles must be between 1"},
		{"trajectory", "load", map[string]string{"scale": "0.001"}, ""},
		{"trajectory", "load", map[string]string{"reset": "true"}, "--reset with --shard would delete the other shards' records"},
		{"trajectory", "load", map[string]string{"batch": "0", "reset": "true"}, "--batch must be at least 1"},
		{"trajectory", "run", map[string]string{"mode": "sequential"}, "the sequential mode is one client"},
	} {
		j, err := job.New(tc.workload)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range tc.opts {
			if err := j.Opts().Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		err = job.CheckShards(j, tc.verb, 4, dsn)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %s %v: %v, want no refusal", tc.verb, tc.workload, tc.opts, err)
		case tc.want != "" && (!job.IsUsage(err) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %s %v: %v, want a usage error saying %q", tc.verb, tc.workload, tc.opts, err, tc.want)
		}
	}
}
