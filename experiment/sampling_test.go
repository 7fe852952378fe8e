package experiment

import (
	"math"
	"testing"

	"github.com/fieldbench/fieldbench/cluster/budget"
)

// TestBudgetUse: two readings of a node's control group become its use of
// its budget over the interval; a resource the budget does not set has no
// figure.
func TestBudgetUse(t *testing.T) {
	t.Parallel()
	prev := budget.Usage{CPUSeconds: 10, Periods: 100, Throttled: 20, Memory: 64 << 20}
	cur := budget.Usage{CPUSeconds: 10.5, Periods: 120, Throttled: 35, Memory: 128 << 20}
	for _, c := range []struct {
		name                string
		b                   budget.Budget
		dt                  float64
		cpu, throttled, mem float64 // NaN: no figure
	}{
		{"cpu and memory", budget.Budget{CPU: 0.25, Memory: 256 << 20}, 2, 100, 75, 50},
		{"cpu alone", budget.Budget{CPU: 0.5}, 2, 50, 75, math.NaN()},
		{"memory alone", budget.Budget{Memory: 512 << 20}, 2, math.NaN(), math.NaN(), 25},
		{"no time passed", budget.Budget{CPU: 0.5}, 0, math.NaN(), 75, math.NaN()},
	} {
		cpu, throttled, mem := budgetUse(c.b, prev, cur, c.dt)
		for _, f := range []struct {
			what      string
			got, want float64
		}{{"cpu", cpu, c.cpu}, {"throttled", throttled, c.throttled}, {"memory", mem, c.mem}} {
			if math.IsNaN(f.want) != math.IsNaN(f.got) || (!math.IsNaN(f.want) && math.Abs(f.got-f.want) > 1e-9) {
				t.Errorf("%s: %s = %v, want %v", c.name, f.what, f.got, f.want)
			}
		}
	}
}
