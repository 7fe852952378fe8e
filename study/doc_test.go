package study

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// docs/studies.md states how many values and claims each file has.
func TestDocCounts(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "studies.md"))
	if err != nil {
		t.Fatal(err)
	}
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		approx := 0
		for _, v := range s.Values {
			if v.Approx {
				approx++
			}
		}
		row := regexp.MustCompile(`(?m)^\| \[` + s.Name + `\.yaml\]\([^)]*\) \| [^|]* \| (\d+) \| (\d+) \| (\d+) \|`).FindSubmatch(doc)
		if row == nil {
			t.Errorf("docs/studies.md has no counts row for %s", s.Name)
			continue
		}
		if got := string(row[1]) + "/" + string(row[2]) + "/" + string(row[3]); got != strconv.Itoa(len(s.Values))+"/"+strconv.Itoa(approx)+"/"+strconv.Itoa(len(s.Claims)) {
			t.Errorf("docs/studies.md says %s has values/approx/claims %s, the file %d/%d/%d", s.Name, got, len(s.Values), approx, len(s.Claims))
		}
	}
}
