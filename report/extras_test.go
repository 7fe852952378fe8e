package report

import (
	"regexp"
	"strings"
	"testing"
)

// The "Workload figures" of a run say that the dataset's counts are from
// before the run: 319 tweets beside a run that posted 4,415 read as the
// tweets after it (issue 40, finding 10).
func TestWorkloadFiguresSayBeforeTheRun(t *testing.T) {
	t.Parallel()
	r := fixtureRuns(t, runA())[0]
	for k, v := range map[string]float64{"tweets": 319, "follows": 792, "users": 50} {
		r.Summary.Extra[k] = v
	}
	page := renderHTML(t, r)
	_, section, ok := strings.Cut(page, "<h2>Workload figures</h2>")
	if !ok {
		t.Fatal("no Workload figures")
	}
	section, _, _ = strings.Cut(section, "</table>")
	for key, want := range map[string]string{"tweets": "tweets before the run", "follows": "follows before the run", "db_size_bytes": "before the run"} {
		row := regexp.MustCompile(`<tr><td[^>]*>([^<]*)(?:<span[^>]*>`+key+`</span>)?</td>`).FindAllStringSubmatch(section, -1)
		found := false
		for _, m := range row {
			if strings.Contains(m[0], ">"+key+"<") && strings.Contains(m[1], want) {
				found = true
			}
		}
		if !found {
			t.Errorf("the %s row does not say %q:\n%s", key, want, section)
		}
	}
}
