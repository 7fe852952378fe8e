package compare

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/fieldbench/fieldbench/result"
)

// `fieldbench compare BASE NEW...` once its flags are checked: Check
// before anything is computed, then All. They live here, not in the CLI
// (issue 45: internal/cli is wiring only), which prints the tables and
// maps the refusals to exit 2 and the broken gates to exit 3.

// Check refuses what cannot be compared, before anything is computed:
// a new run that differs from base in more than the build (Differences;
// with force only a warning on warn), a gate naming an operation neither
// run measured (CheckGates). Runs of different loads are compared with a
// warning on warn naming each option (LoadDifferences). Every error it
// returns is the user's input.
func Check(warn io.Writer, base *result.Run, news []*result.Run, gates []Gate, force bool) error {
	for _, r := range news {
		if d := Differences(base, r); len(d) > 0 {
			msg := fmt.Sprintf("%s and %s differ in more than the build: %s", base.Dir, r.Dir, strings.Join(d, "; "))
			if !force {
				return fmt.Errorf("%s (--force compares them anyway)", msg)
			}
			fmt.Fprintf(warn, "warning: %s; compared anyway (--force)\n", msg)
		}
		if err := CheckGates(gates, base, r); err != nil {
			return err
		}
		if d := LoadDifferences(base, r); len(d) > 0 {
			fmt.Fprintf(warn, "warning: %s and %s ran different loads: %s; a change between them need not be the build's\n", base.Dir, r.Dir, strings.Join(d, ", "))
		}
	}
	return nil
}

// ErrUnevaluated is wrapped by All's refusal of a gate that gave no
// verdict: no pass, so a CI job must not go green on it (docs/compare.md).
var ErrUnevaluated = errors.New("--fail-on not evaluated")

// unevaluated keeps its error's message and wraps ErrUnevaluated too.
type unevaluated struct{ error }

func (e unevaluated) Unwrap() []error { return []error{e.error, ErrUnevaluated} }

// All compares each of news with base (Runs at level): each one's rows,
// in news' order, and the gates they broke (Violations). A gate that gave
// no verdict for a pair (Unevaluated: a run too short) ends it with
// ErrUnevaluated, saying which gate, which runs and why.
func All(base *result.Run, news []*result.Run, level float64, gates []Gate) (rows [][]Row, broken []string, err error) {
	for _, r := range news {
		rs, err := Runs(base, r, level)
		if err != nil {
			return nil, nil, err
		}
		rows = append(rows, rs)
		broken = append(broken, Violations(rs, gates)...)
		if un := Unevaluated(rs, gates, base.Dir, r.Dir); len(un) > 0 {
			return nil, nil, unevaluated{fmt.Errorf("--fail-on NOT evaluated for %s against %s: %s\nthe gate would pass any change: run both for at least %d measured seconds after warm-up (30 or more give useful intervals), or compare without --fail-on to see the change",
				base.Dir, r.Dir, strings.Join(un, "; "), MinSeconds)}
		}
	}
	return rows, broken, nil
}
