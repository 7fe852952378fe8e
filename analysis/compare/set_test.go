package compare

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/result"
)

// Check refuses runs that differ in more than the build (a warning with
// force) and a gate on an operation neither run has, and warns of runs of
// different loads; All gives each pair's rows, the gates broken, and
// refuses a gate that gave no verdict (ErrUnevaluated), naming the runs.
func TestCheckAndAll(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	mk := func(dir string, n int, lat float64, opts map[string]any) *result.Run {
		r := build(t, rng, dir, steady(n, 200, lat, -1, 1))
		r.Header.Workload, r.Header.Adapter, r.Header.Options = "wiki", "sqlite", opts
		return r
	}
	base := mk("base", 30, 1000, map[string]any{"threads": 4})
	same := mk("same", 30, 1000, map[string]any{"threads": 4})
	slow := mk("slow", 30, 1500, map[string]any{"threads": 4})
	more := mk("more", 30, 1000, map[string]any{"threads": 8})
	short := mk("short", 5, 1000, map[string]any{"threads": 4})
	other := mk("other", 30, 1000, map[string]any{"threads": 4})
	other.Header.Workload = "ingest"
	p99, err := ParseGates("p99+10%")
	if err != nil {
		t.Fatal(err)
	}
	nosuch, err := ParseGates("p99:post+10%")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		news   []*result.Run
		gates  []Gate
		force  bool
		err    string // Check's refusal ("": none)
		warn   string // on warn ("": nothing)
		allErr string // All's refusal
		broken int
	}{
		{"same", []*result.Run{same}, p99, false, "", "", "", 0},
		{"slower, and the same", []*result.Run{slow, same}, p99, false, "", "", "", 1},
		{"another workload", []*result.Run{same, other}, nil, false, `base and other differ in more than the build: workload "wiki" against "ingest" (--force compares them anyway)`, "", "", 0},
		{"another workload, forced", []*result.Run{other}, nil, true, "", `warning: base and other differ in more than the build: workload "wiki" against "ingest"; compared anyway (--force)`, "", 0},
		{"a gate on no run's operation", []*result.Run{same}, nosuch, false, `--fail-on "p99:post+10%": operation "post" is in neither base nor same`, "", "", 0},
		{"another load", []*result.Run{more}, nil, false, "", "warning: base and more ran different loads: threads 4 against 8; a change between them need not be the build's", "", 0},
		{"too short for the gate", []*result.Run{same, short}, p99, false, "", "", "--fail-on NOT evaluated for base against short: p99+10%: read p99: short has 5 measured seconds; the test needs 10 in each run", 0},
		{"too short, no gate", []*result.Run{short}, nil, false, "", "", "", 0},
	} {
		var warn strings.Builder
		err := Check(&warn, base, c.news, c.gates, c.force)
		if c.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), c.err) {
				t.Errorf("%s: Check: %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: Check: %v", c.name, err)
			continue
		}
		if !strings.Contains(warn.String(), c.warn) || c.warn == "" && warn.Len() > 0 {
			t.Errorf("%s: warned %q, want %q", c.name, warn.String(), c.warn)
		}
		rows, broken, err := All(base, c.news, 0.95, c.gates)
		switch {
		case c.allErr != "" && (!errors.Is(err, ErrUnevaluated) || !strings.HasPrefix(err.Error(), c.allErr)):
			t.Errorf("%s: All: %v, want %q", c.name, err, c.allErr)
		case c.allErr == "" && (err != nil || len(rows) != len(c.news) || len(broken) != c.broken):
			t.Errorf("%s: All: %d row sets, broken %q, %v; want %d, %d broken", c.name, len(rows), broken, err, len(c.news), c.broken)
		}
	}
}
