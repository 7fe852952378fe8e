package history

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fieldbench/fieldbench/analysis/compare"
	"github.com/fieldbench/fieldbench/result"
)

// Skip is a path that is not recorded, and why.
type Skip struct{ Path, Reason string }

// Source is one argument of `history add`: the result files found under
// it, in path order. A directory is searched for run directories (those
// holding a result file) at any depth: a run's, an experiment's (its
// runs, one per step), a sweep's, a study's (its steps' experiments), a
// merged run's, a results directory of all of them. A run directory's
// subdirectories are not searched, nor a cluster's data (cluster/), nor
// hidden ones. A file is read as a result file. self (the history's own
// SQLite file) and its -wal, -shm and -journal files are passed over.
func Source(path, self string) (files []string, skipped []Skip, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if !st.IsDir() {
		if isSelf(path, self) {
			return nil, []Skip{{path, selfReason}}, nil
		}
		return []string{path}, nil, nil
	}
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			skipped = append(skipped, Skip{p, err.Error()})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			return nil
		}
		if p != path && (d.Name() == "cluster" || strings.HasPrefix(d.Name(), ".")) {
			return fs.SkipDir
		}
		f := filepath.Join(p, result.FileName)
		if st, err := os.Stat(f); err == nil && !st.IsDir() {
			files = append(files, f)
			return fs.SkipDir
		}
		return nil
	})
	return files, skipped, err
}

// isSelf reports whether path is the history's SQLite file or one of
// SQLite's files beside it.
func isSelf(path, self string) bool {
	if self == "" {
		return false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		if abs == self+suffix {
			return true
		}
	}
	return false
}

// Analysis is one operation's figure over a series: its points and the
// change points among them (indexes into Points).
type Analysis struct {
	Op, Figure string
	Points     []Point
	Changes    []ChangePoint
}

// Analyze finds the change points of op's figure over the series' runs.
func Analyze(runs []Run, op, figure string, o Options) (Analysis, error) {
	a := Analysis{Op: op, Figure: figure, Points: Trend(runs, op, figure)}
	var err error
	a.Changes, err = Detect(Values(a.Points), o)
	return a, err
}

// Worse is how much worse the change makes the figure (a fraction; < 0
// for an improvement): a latency or the errors up, throughput down.
func (a Analysis) Worse(c ChangePoint) float64 {
	if HigherIsBetter(a.Figure) {
		return -c.Change()
	}
	return c.Change()
}

// At is the run a change point starts at.
func (a Analysis) At(c ChangePoint) *Run { return a.Points[c.Index].Run }

// Violation is a gate broken by a series' newest segment.
type Violation struct {
	Gate     compare.Gate
	Series   Series
	Analysis Analysis
	Change   ChangePoint
}

func (v Violation) String() string {
	c, a := v.Change, v.Analysis
	r := a.At(c)
	commit := ""
	if r.Commit != "" {
		commit = ", commit " + r.Commit
	}
	return fmt.Sprintf("%s: series %s (%s): %s %s changed %+.1f%% from run %s (%s%s): %s → %s, p %.2g; %d run(s) before, %d since (limit %s)",
		v.Gate.Spec, v.Series.ID, v.Series.Label, a.Op, a.Figure, 100*c.Change(), short(r.ID), r.Started.Format(time.RFC3339), commit,
		FormatFigure(a.Figure, c.Before), FormatFigure(a.Figure, c.After), c.P, c.NBefore, c.NAfter, v.Gate.Spec)
}

// short is a run ID's first 12 characters (what list shows).
func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// Short is how a run is named on the terminal.
func (r Run) Short() string { return short(r.ID) }

// FormatFigure writes a figure's value in its unit.
func FormatFigure(figure string, v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case figure == "throughput":
		return fmt.Sprintf("%.1f/s", v)
	case figure == "errors":
		return fmt.Sprintf("%.2f%%", v)
	case v >= 1e6:
		return fmt.Sprintf("%.3fs", v/1e6)
	case v >= 1000:
		return fmt.Sprintf("%.2fms", v/1000)
	}
	return fmt.Sprintf("%.0fµs", v)
}

// Regressions are the gates the series' newest segment breaks: for each
// gate, each operation it names (all of the series' when none) whose
// figure has a change point, the newest segment (the runs since the last
// change point) against the segment before it, worse by more than the
// gate's limit. A change point is significant by its test (p ≤ the
// options' level), so a change within the noise never fails.
func Regressions(s Series, runs []Run, gates []compare.Gate, o Options) ([]Violation, error) {
	var out []Violation
	ops := Ops(runs)
	for _, g := range gates {
		for _, op := range ops {
			if g.Op != "" && g.Op != op {
				continue
			}
			a, err := Analyze(runs, op, g.Figure, o)
			if err != nil {
				return nil, fmt.Errorf("series %s, %s %s: %w", s.ID, op, g.Figure, err)
			}
			if len(a.Changes) == 0 {
				continue
			}
			last := a.Changes[len(a.Changes)-1]
			if a.Worse(last) > g.Limit {
				out = append(out, Violation{Gate: g, Series: s, Analysis: a, Change: last})
			}
		}
	}
	return out, nil
}

// CheckGates refuses a gate naming an operation no run of the series
// measured: it could never fire (a typo passes every build), as compare
// refuses it.
func CheckGates(gates []compare.Gate, series []Series, runs map[string][]Run) error {
	have := map[string]bool{}
	for _, s := range series {
		for _, op := range Ops(runs[s.ID]) {
			have[op] = true
		}
	}
	for _, g := range gates {
		if g.Op != "" && !have[g.Op] {
			known := make([]string, 0, len(have))
			for op := range have {
				known = append(known, op)
			}
			sort.Strings(known)
			return fmt.Errorf("--fail-on %q: operation %q is in no run of the series checked (their operations: %s)", g.Spec, g.Op, strings.Join(known, ", "))
		}
	}
	return nil
}

// CSVColumn is the name of an operation's figure's column in the CSV
// export: "post_p99", "post_p99_9" (Otava's metric names).
func CSVColumn(op, figure string) string {
	return op + "_" + strings.ReplaceAll(figure, ".", "_")
}

// ErrNoColumns is a series without a figure every run has.
var ErrNoColumns = errors.New("no operation's figure is in every run of the series")

// WriteCSV writes the series' runs as Apache Otava's CSV importer reads
// them: one row per run in order, a time column (RFC 3339), the run's ID,
// commit, server version and host as attributes, and one column per
// operation and figure (CSVColumn; latencies in µs, throughput in
// operations a second, errors in %) that every run has (Otava takes no
// empty cell). It returns the figure columns written and those left out.
func WriteCSV(w io.Writer, runs []Run, figures []string) (written, omitted []string, err error) {
	type col struct{ op, figure string }
	var cols []col
	for _, op := range Ops(runs) {
		for _, fig := range figures {
			all := true
			for _, r := range runs {
				o, ok := r.Op(op)
				if !ok || math.IsNaN(o.Figure(fig)) {
					all = false
					break
				}
			}
			if all {
				cols = append(cols, col{op, fig})
				written = append(written, CSVColumn(op, fig))
			} else {
				omitted = append(omitted, CSVColumn(op, fig))
			}
		}
	}
	if len(cols) == 0 {
		return nil, omitted, ErrNoColumns
	}
	cw := csv.NewWriter(w)
	header := append([]string{"time", "run", "commit", "server_version", "host"}, written...)
	if err := cw.Write(header); err != nil {
		return nil, nil, err
	}
	for _, r := range runs {
		row := []string{r.Started.UTC().Format(time.RFC3339Nano), r.ID, r.Commit, r.ServerVersion, r.Host}
		for _, c := range cols {
			o, _ := r.Op(c.op)
			row = append(row, fmt.Sprintf("%.17g", o.Figure(c.figure)))
		}
		if err := cw.Write(row); err != nil {
			return nil, nil, err
		}
	}
	cw.Flush()
	return written, omitted, cw.Error()
}
