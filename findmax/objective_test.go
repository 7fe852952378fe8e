package findmax

import (
	"slices"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/job"
)

// Objective gives the rules of a good --slo and refuses, as bad input, one
// that does not parse and one naming an operation the clients do not send.
func TestObjective(t *testing.T) {
	t.Parallel()
	ops := []string{"post", "timeline", "async-lag"}
	for _, c := range []struct {
		slo   string
		rules int
		err   string // "": accepted
	}{
		{"p99<50ms", 1, ""},
		{"p99<20ms,p99.9:post<100ms", 2, ""},
		{"p99:nosuch<50ms", 0, `--slo "p99:nosuch<50ms": the workload's clients send no operation "nosuch" (they send: post, timeline, async-lag)`},
		{"p42<50ms", 0, "p42"},
		{"", 0, "slo"},
	} {
		rules, err := Objective(c.slo, ops)
		switch {
		case c.err == "" && (err != nil || len(rules) != c.rules):
			t.Errorf("%q: %d rules, %v; want %d", c.slo, len(rules), err, c.rules)
		case c.err != "" && (err == nil || !job.IsUsage(err) || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: %v, want bad input saying %q", c.slo, err, c.err)
		}
	}
}

// SizedWorkloads are the workloads findmax's help names as sized per
// step: wiki, ingest and trajectory (a fixed amount of work each), not
// microblog (a run of --duration); each can be searched.
func TestSizedWorkloads(t *testing.T) {
	t.Parallel()
	got := SizedWorkloads()
	for _, want := range []string{"wiki", "ingest", "trajectory"} {
		if !slices.Contains(got, want) {
			t.Errorf("SizedWorkloads() = %v, want %s in it", got, want)
		}
	}
	if slices.Contains(got, "microblog") {
		t.Errorf("SizedWorkloads() = %v names microblog, whose run has --duration", got)
	}
	for _, name := range got {
		j, err := job.New(name)
		if err != nil {
			t.Fatal(err)
		}
		if why := Supported(j); why != "" {
			t.Errorf("%s is sized per step but cannot be searched: %s", name, why)
		}
	}
}
