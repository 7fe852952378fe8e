package report

import (
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/result"
)

// TestLinesSVG: lines drawn outside a run's report take their group's
// colour, the dashed ones a dash, their names in the legend, intervals as
// error bars on a "ci" chart and events as numbered markers over time; no
// point, no chart.
func TestLinesSVG(t *testing.T) {
	for _, tc := range []struct {
		name  string
		meta  result.SeriesMeta
		lines []Line
		want  []string
		avoid []string
	}{
		{"paper dashed beside fieldbench solid, one colour", result.SeriesMeta{Title: "write throughput", XLabel: "nodes", YLabel: "throughput (ops/s)"},
			[]Line{{Name: "cassandra (paper)", Group: 1, Dashed: true, Points: []result.Point{{X: 1, Y: 10}, {X: 2, Y: 20}}},
				{Name: "cassandra (fieldbench)", Group: 1, Points: []result.Point{{X: 1, Y: 5}, {X: 2, Y: 4}}}},
			[]string{"<svg", "write throughput", "cassandra (paper)", "cassandra (fieldbench)", `stroke-dasharray="` + runDashes[1] + `"`, palette[1]},
			[]string{palette[0]}},
		{"intervals", result.SeriesMeta{Title: "ingest", XLabel: "records per source", YLabel: "records/s", Band: "ci"},
			[]Line{{Name: "a", Points: []result.Point{{X: 1000, Y: 10, Lo: 9, Hi: 11, N: 10}, {X: 2000, Failed: "write timeout"}}}},
			[]string{"95% CI", "failed"}, nil},
		{"events over time", result.SeriesMeta{Title: "request sets", XIsTime: true, Band: "sd"},
			[]Line{{Name: "hbase", Points: []result.Point{{X: 10, Y: 8, SD: 1}, {X: 20, Y: 9, SD: 1}}, Events: []result.Event{{At: 15, Name: "add-node", Detail: "hbase3"}}}},
			[]string{"add-node"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := LinesSVG(tc.meta, tc.lines)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("chart lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.avoid {
				if strings.Contains(got, w) {
					t.Errorf("chart has %q", w)
				}
			}
		})
	}
	if got := LinesSVG(result.SeriesMeta{Title: "x"}, []Line{{Name: "empty"}}); got != "" {
		t.Errorf("no point drew %q", got)
	}
}
