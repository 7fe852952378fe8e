package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/result"
)

// TestFamilyReportsGolden renders one real (small) run of every workload
// family, captured as testdata/families/*.jsonl, and compares the HTML and
// the terminal table with their goldens. Each case also names what the
// family's report must show, so a golden rewritten by mistake still fails.
func TestFamilyReportsGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		fixture string
		must    []string
	}{
		{"microblog", []string{"post: p50 and p99 latency over time", "async-lag", "author followers"}},
		{"wiki", []string{"Request-set time", "± SD", "read: p50 and p99 latency over time"}},
		{"ingest-sweep", []string{"95 % confidence interval", "records per source", "95% CI"}},
		{"trajectory", []string{"sequential knn", "random region", "throughput"}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			run, err := result.Read(filepath.Join("testdata", "families", tc.fixture+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			run.Dir = tc.fixture // the golden must not depend on where the test runs
			var html, term bytes.Buffer
			if err := HTML(&html, []*result.Run{run}); err != nil {
				t.Fatal(err)
			}
			if err := Terminal(&term, run); err != nil {
				t.Fatal(err)
			}
			for _, m := range tc.must {
				if !strings.Contains(html.String(), m) {
					t.Errorf("report lacks %q", m)
				}
			}
			for _, bad := range []string{"NaN", "Inf", "<script"} {
				if strings.Contains(html.String(), bad) {
					t.Errorf("report contains %q", bad)
				}
			}
			checkGolden(t, filepath.Join("families", tc.fixture+".html.golden"), html.String())
			checkGolden(t, filepath.Join("families", tc.fixture+".txt.golden"), term.String())
		})
	}
}
