package study

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// `fieldbench study NAME` once its flags are checked, and the list of
// studies its help shows: here beside the plans rather than in the CLI
// (issue 45: internal/cli is wiring only), which keeps the flags, the
// checks that are bad input and the exit codes.

// ErrInterrupted is RunThenReport's error when ctx ended while the steps
// ran: the completed steps are kept (and reported), and the CLI exits as
// interrupted (130).
var ErrInterrupted = errors.New("study interrupted")

// RunThenReport runs p's steps (Run; unless run is false: the report
// alone, rebuilt from cfg.Results), then writes the report of cfg.Results
// (Report) and names it on cfg.Stdout. A step's failure does not stop the
// report, and is returned with it. Cut short by ctx, it names the report
// of the completed steps (when it can write one), says on cfg.Stderr how
// to resume, and returns ErrInterrupted.
func RunThenReport(ctx context.Context, p Plan, cfg Config, run bool) error {
	var runErr error
	if run {
		runErr = Run(ctx, p, cfg)
		if ctx.Err() != nil {
			// The report of what completed is cheap (files only).
			if out, err := Report(p, cfg.Results); err == nil {
				fmt.Fprintf(cfg.Stdout, "study %s (completed steps only): %s and %s\n", p.Study, out, htmlBeside(out))
			}
			fmt.Fprintf(cfg.Stderr, "fieldbench: study %s interrupted; completed steps are kept in %s, run the same command again to resume\n", p.Study, cfg.Results)
			return ErrInterrupted
		}
	}
	out, err := Report(p, cfg.Results)
	if err != nil {
		return errors.Join(runErr, err)
	}
	fmt.Fprintf(cfg.Stdout, "study %s: %s and %s\n", p.Study, out, htmlBeside(out))
	return runErr
}

// htmlBeside is the HTML report's path beside the Markdown one's.
func htmlBeside(md string) string { return filepath.Join(filepath.Dir(md), HTMLFile) }

// Lines is one line per study that has a plan (Names), each indented: its
// name and paper (first author, year, title) and how many published
// values and claims it holds, from the study registry (package study),
// never a hand-kept list. A study that does not load is left out.
func Lines(indent string) string {
	var b strings.Builder
	for _, n := range Planned() {
		s, err := Load(n)
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "%s%-11s %s %d, %q (%d published values, %d claims)\n", indent, n, firstAuthor(s.Authors), s.Year, s.Title, len(s.Values), len(s.Claims))
	}
	return strings.TrimRight(b.String(), "\n")
}

// firstAuthor is the first of a comma-separated list of authors, "et al."
// when there are more.
func firstAuthor(a string) string {
	first, _, more := strings.Cut(a, ",")
	if more {
		return strings.TrimSpace(first) + " et al."
	}
	return a
}
