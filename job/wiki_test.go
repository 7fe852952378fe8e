package job_test

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	_ "github.com/fieldbench/fieldbench/adapter/sqlite"
	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// runWiki runs `run wiki` through the job with options given as on the
// command line, on a new SQLite database, and returns its result.
func runWiki(t *testing.T, opts map[string]string) (*result.Run, error) {
	t.Helper()
	j, err := job.New(wiki.Name)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	base := map[string]string{"results": filepath.Join(dir, "results"), "db": "sqlite://" + filepath.Join(dir, "wiki.db")}
	for k, v := range opts {
		base[k] = v
	}
	for k, v := range base {
		if err := j.Opts().Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	c, ok := job.Find(j, "run")
	if !ok {
		t.Fatal("wiki has no run command")
	}
	var stderr bytes.Buffer
	if err := c.Run(context.Background(), &job.Env{Stdout: io.Discard, Stderr: &stderr, Version: "test"}); err != nil {
		return nil, err
	}
	runs, _ := filepath.Glob(filepath.Join(dir, "results", "*", result.FileName))
	if len(runs) != 1 {
		t.Fatalf("result files %v\n%s", runs, stderr.String())
	}
	run, err := result.Read(filepath.Dir(runs[0]))
	if err != nil {
		t.Fatal(err)
	}
	return run, nil
}

// TestWikiRateOpenLoop runs request sets open loop: 200 requests at
// 2,000/s cannot finish before the last one's intended start, 99.5 ms after
// the set began (a lower bound, whatever the machine), every request is
// still made (the updates are those the oracle replays from the seeds), and
// the header records the rate. A closed-loop run's header stays as before.
func TestWikiRateOpenLoop(t *testing.T) {
	t.Parallel()
	const articles, requests, threads, sets, rate = 100, 200, 2, 2, 2000.0
	for _, tc := range []struct {
		name string
		rate float64
	}{
		{"open", rate},
		{"closed", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run, err := runWiki(t, map[string]string{
				"articles": strconv.Itoa(articles), "requests": strconv.Itoa(requests), "threads": strconv.Itoa(threads),
				"sets": strconv.Itoa(sets), "repeat": "1", "reads": "50", "seed": "3", "rate": strconv.FormatFloat(tc.rate, 'g', -1, 64),
			})
			if err != nil {
				t.Fatal(err)
			}
			// SQLite's pools (one writer connection, a few readers) report
			// how many connections served the threads.
			if c := run.Summary.Client; c == nil || c.Connections == nil || c.Connections.PeakOpen < 1 || c.Connections.Max < 2 {
				t.Fatalf("client cost %+v: want the connections that served the threads", c)
			}
			opts := run.Header.Options
			if tc.rate == 0 {
				if _, has := opts["rate"]; has {
					t.Fatalf("a closed-loop run records a rate: %v", opts)
				}
				return
			}
			if opts["rate"] != rate || opts["loop"] != "open" || !strings.Contains(run.Header.Series["request-set"].Title, "open loop at 2000 requests/s") {
				t.Fatalf("header options %v, series %v", opts, run.Header.Series)
			}
			if len(run.Points) != sets {
				t.Fatalf("%d request sets, want %d", len(run.Points), sets)
			}
			for _, p := range run.Points {
				if p.Y < (requests-1)/rate {
					t.Errorf("request set %s took %.4fs, less than the %.4fs of its last request's intended start", p.Labels["set"], p.Y, (requests-1)/rate)
				}
			}
			reads, updates := run.Summary.Ops["read"].Count, run.Summary.Ops["update"].Count
			if reads+updates != sets*requests {
				t.Fatalf("%d reads + %d updates, want %d requests", reads, updates, sets*requests)
			}
			g, _ := wiki.NewGenerator(3, articles)
			o, err := wiki.NewOracle(g.Source(1, articles))
			if err != nil {
				t.Fatal(err)
			}
			plan := wiki.Plan{Requests: requests, ReadPct: 50, Threads: threads, Dist: wiki.Uniform, Seed: 3, Articles: articles}
			if n := o.Replay(plan, sets, 1); n != updates {
				t.Fatalf("the oracle replays %d updates, the open-loop run made %d", n, updates)
			}
		})
	}
}

func TestWikiRateBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts map[string]string
		want string
	}{
		{"negative", map[string]string{"rate": "-1"}, "--rate must be a number of requests per second, 0 or more (got -1)"},
		{"with --loop", map[string]string{"rate": "100", "loop": "true", "reads": "100"}, "--rate and --loop exclude each other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := runWiki(t, tc.opts)
			if !job.IsUsage(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want a usage error saying %q", err, tc.want)
			}
		})
	}
}
