package job_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/result"

	_ "github.com/fieldbench/fieldbench/adapter/sqlite"
)

// runTrajectory runs the trajectory job's run command with opts (on the
// embedded SQLite, into a temporary results directory) and reads its result.
func runTrajectory(t *testing.T, opts map[string]string) (*result.Run, error) {
	t.Helper()
	j, err := job.New("trajectory")
	if err != nil {
		t.Fatal(err)
	}
	res := filepath.Join(t.TempDir(), "results")
	if err := j.Opts().Set("results", res); err != nil {
		t.Fatal(err)
	}
	for k, v := range opts {
		if err := j.Opts().Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	c, ok := job.Find(j, "run")
	if !ok {
		t.Fatal("trajectory has no run command")
	}
	var out, errb bytes.Buffer
	if err := c.Run(context.Background(), &job.Env{Stdout: &out, Stderr: &errb}); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(res)
	if err != nil || len(entries) != 1 {
		t.Fatalf("want one run directory: %v %v", entries, err)
	}
	run, err := result.Read(filepath.Join(res, entries[0].Name()))
	if err != nil {
		t.Fatal(err)
	}
	return run, nil
}

// TestTrajectoryRate runs the sequential mode closed and open loop. 1297
// records (scale 0.0002) in requests of 100 make 13 write requests; at 40
// requests/s their intended starts span 12/40 s, so the open-loop write
// phase lasts at least 0.3 s and does at most 13/0.3 requests/s, whatever
// the machine. Both runs record the loop and the rate in their header.
func TestTrajectoryRate(t *testing.T) {
	t.Parallel()
	base := map[string]string{"scale": "0.0002", "batch": "100", "mode": "sequential", "queries": "2", "repeat": "1"}
	for _, tc := range []struct {
		name     string
		rate     string
		loop     string
		wantRate float64
	}{
		{"closed loop by default", "", "closed", 0},
		{"open loop", "40", "open", 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			opts := map[string]string{}
			for k, v := range base {
				opts[k] = v
			}
			if tc.rate != "" {
				opts["rate"] = tc.rate
			}
			run, err := runTrajectory(t, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := run.Header.Options["loop"]; got != tc.loop {
				t.Fatalf("header loop %v, want %s", got, tc.loop)
			}
			if got := run.Header.Options["rate"]; got != tc.wantRate {
				t.Fatalf("header rate %v (%T), want %v", got, got, tc.wantRate)
			}
			sum := run.Summary
			if sum == nil || sum.Ops["write"].Count != 13 || sum.Ops["region"].Count != 2 {
				t.Fatalf("summary %+v: want 13 writes and 2 region queries", sum)
			}
			if tc.wantRate == 0 {
				return
			}
			if secs := sum.Extra["sequential_write_seconds"]; secs < 0.3 {
				t.Fatalf("open-loop write phase took %.3fs; 13 starts at 40/s span at least 0.3s", secs)
			}
			if rps := sum.Extra["sequential_write_requests_per_sec"]; rps > 13/0.3 {
				t.Fatalf("open-loop write phase did %.1f requests/s, above what 40/s allows", rps)
			}
		})
	}
}

func TestTrajectoryBadRate(t *testing.T) {
	t.Parallel()
	_, err := runTrajectory(t, map[string]string{"scale": "0.0002", "rate": "-1"})
	if !job.IsUsage(err) || !strings.Contains(err.Error(), "--rate must be") {
		t.Fatalf("--rate -1: %v, want a usage error about --rate", err)
	}
	// NaN and infinities are refused as the option is set (every float
	// option refuses them).
	j, err := job.New("trajectory")
	if err != nil {
		t.Fatal(err)
	}
	for _, rate := range []string{"NaN", "+Inf", "-inf"} {
		if err := j.Opts().Set("rate", rate); err == nil || !strings.Contains(err.Error(), "not a finite number") {
			t.Errorf("--rate %s: %v, want it refused as not a finite number", rate, err)
		}
	}
}
