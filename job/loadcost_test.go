package job

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/cluster/budget"
)

// TestLoadCost: the CPU a rate needs is read from the measured figures
// (docs/performance.md, scripts/scale-clients.sh): exact at a measured
// rate, between two of them in between, at the last CPU per operation
// beyond them; a workload not measured takes microblog's.
func TestLoadCost(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		family string
		rate   float64
		want   float64
	}{
		{"microblog", 0, 0},
		{"microblog", 1000, 0.0926},
		{"wiki", 10000, 0.105},
		{"ingest", 100000, 0.43},
		{"microblog", 5500, 0.0926 + (0.132-0.0926)*4500/9000},
		{"microblog", 200000, 0.56},
		{"trajectory", 1000, 0.0926},
		{"microblog", 0.5, 0.0024},
	} {
		if got := loadCost(c.family, c.rate); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("loadCost(%s, %g) = %g, want %g", c.family, c.rate, got, c.want)
		}
	}
}

// TestSayLoadCost: before a run at a rate with a CPU budget, fieldbench
// says what the rate needs and where the figure comes from, and warns when
// the budget is smaller; nothing without a rate or a CPU budget.
func TestSayLoadCost(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		p          loadPlan
		say, warns bool
	}{
		{loadPlan{budget: budget.Budget{CPU: 0.5}, rate: 1000, family: "microblog"}, true, false},
		{loadPlan{budget: budget.Budget{CPU: 0.05}, rate: 1000, family: "microblog"}, true, true},
		{loadPlan{budget: budget.Budget{CPU: 0.05}, family: "microblog"}, false, false},
		{loadPlan{budget: budget.Budget{Memory: 1 << 30}, rate: 1000, family: "microblog"}, false, false},
	} {
		var b bytes.Buffer
		sayLoadCost(&b, c.p)
		out := b.String()
		if said := strings.Contains(out, "need at least 0.093 CPU") && strings.Contains(out, "scripts/scale-clients.sh"); said != c.say {
			t.Errorf("%+v: said %q, want the need said: %v", c.p, out, c.say)
		}
		if warned := strings.Contains(out, "warning: --load-budget cpu=0.05 is below"); warned != c.warns {
			t.Errorf("%+v: said %q, want a warning: %v", c.p, out, c.warns)
		}
	}
}
