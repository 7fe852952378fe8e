package cli

import (
	"fmt"
	"strings"

	"github.com/fieldbench/fieldbench/job"
)

// Help texts name what the registries hold, never a hand-kept list: a
// list typed into a help text drifts from the code the day a workload or
// an engine is added.

// workloadLines is one line per registered workload: its name and its
// description up to the first colon (the study it comes from), indented.
func workloadLines(indent string) string {
	var b strings.Builder
	for _, name := range job.Names() {
		j, err := job.New(name)
		if err != nil {
			continue
		}
		d, _, _ := strings.Cut(j.Workload().Description, ":")
		fmt.Fprintf(&b, "%s%-11s %s\n", indent, name, d)
	}
	return strings.TrimRight(b.String(), "\n")
}
