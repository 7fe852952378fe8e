package study

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/fieldbench/fieldbench/report"
)

// ReportFile is the study report's name in the study's results directory.
const ReportFile = "study-report.md"

// Report reads the plan's results and writes the study report to
// results/ReportFile and, the same for a browser with the shapes drawn,
// results/HTMLFile; it returns the Markdown file's path.
func Report(p Plan, results string) (string, error) {
	s, err := Load(p.Study)
	if err != nil {
		return "", err
	}
	ms, states, err := Collect(p, results)
	if err != nil {
		return "", err
	}
	var b, h bytes.Buffer
	if err := WriteReport(&b, s, p, results, ms, states); err != nil {
		return "", err
	}
	if err := WriteHTML(&h, s, p, results, ms, states); err != nil {
		return "", err
	}
	if err := os.MkdirAll(results, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(results, ReportFile)
	if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(results, HTMLFile), h.Bytes(), 0o644); err != nil {
		return "", err
	}
	return out, nil
}

// WriteReport writes the Markdown report: the steps, one row per
// published value, the claims, and the paper's shapes.
func WriteReport(w io.Writer, s *Study, p Plan, results string, ms []Measure, states []StepState) error {
	ran, incomplete := stepDatabases(states)
	rows := Match(s, ms, ran, incomplete)
	claims := Claims(s, ms, ran)

	fmt.Fprintf(w, "# Study %s: the paper's figures beside fieldbench's\n\n", s.Name)
	fmt.Fprintf(w, "%s (%s, %d; seed %s). Plan size **%s**, results in `%s`. Built by `fieldbench study %s --report-only --results %s` from the result files alone.\n\n",
		s.Title, s.Authors, s.Year, s.Seed, p.Size, results, s.Name, results)
	tally := Tally(claims)
	fmt.Fprintf(w, "**Claims: %d held, %d not held, %d not judged here** (of %d). A claim is held when every comparison it makes was measured under equal conditions and came out as the paper says with the 95 %% intervals apart; not held when one came out the other way or the intervals overlap (a tie: fieldbench could not confirm the paper's order); not judged here when the measures cannot answer it, with the reason (docs/studies.md).\n\n",
		tally[Held], tally[NotHeld], tally[NotJudged], len(claims))
	fmt.Fprintf(w, "The ratio is fieldbench's figure over the paper's. A figure is *comparable* only when nothing in the study file's conditions or the result's header differs: the server that really ran, the node count, replication factor, consistency level, the dataset's size, and for absolute figures (times, rates, sizes) the hardware — here every node and the client share one machine's cores. A ratio of an incomparable figure is shown for orientation, not as a finding.\n\n")

	fmt.Fprintf(w, "## Steps\n\nThe budget is each node's (`cluster.budget` in the result header); what bound the nodes is each run's budget verdict (docs/scale-model.md, \"What bound the run\"). Where the machine ran out first, or the nodes had no budget, a shape over node count is the machine's: docs/studies.md, \"Budgets\", says which claims that leaves not judged.\n\n")
	fmt.Fprintf(w, "| # | step | for | state | server(s) | runs | budget | what bound the nodes |\n|---|---|---|---|---|---|---|---|\n")
	for i, st := range states {
		state := "no complete result"
		if st.Experiment != "" {
			state = "`" + rel(results, st.Experiment) + "`"
		}
		budget, bound := stepBudget(st)
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %d | %s | %s |\n", i+1, cell(st.Step.Name), st.Step.For, state, cell(strings.Join(st.Servers, ", ")), len(st.Runs), cell(budget), cell(bound))
	}

	measured, comparable := 0, 0
	for _, r := range rows {
		if !math.IsNaN(r.Measured) {
			measured++
			if r.Comparable {
				comparable++
			}
		}
	}
	fmt.Fprintf(w, "\n## Published values\n\n%d values; fieldbench measured %d of them, %d under comparable conditions.\n\n", len(rows), measured, comparable)
	fmt.Fprintf(w, "| id | source | metric | conditions (paper) | paper | fieldbench | ratio | comparable | why not / how |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		v := r.Value
		what := v.Metric
		if v.Operation != "" {
			what += " (" + v.Operation + ")"
		}
		what += ", " + v.Database
		if v.Versus != "" {
			what += " vs " + v.Versus
		}
		paper := paperFig(v)
		fb, ratio, comp, why := "not measured", "–", "–", r.NotMeasured
		if !math.IsNaN(r.Measured) {
			fb = fig(r.Measured, v.Unit)
			if !math.IsNaN(r.MeasuredSD) {
				fb += " ± " + num(r.MeasuredSD) + " SD"
			}
			if !math.IsNaN(r.Ratio) {
				ratio = strconv.FormatFloat(r.Ratio, 'g', 3, 64)
			}
			comp = "yes"
			why = r.How
			if !r.Comparable {
				comp = "no"
				why = strings.Join(r.Reasons, "; ") + ". From: " + r.How
			}
		}
		fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s | %s | %s | %s | %s |\n", v.ID, cell(v.Source.String()), cell(what), cell(condText(r.Cond)), paper, fb, ratio, comp, cell(why))
	}

	fmt.Fprintf(w, "\n## Claims\n\n| claim | the paper | verdict | why | fieldbench's evidence |\n|---|---|---|---|---|\n")
	for _, c := range claims {
		said := strings.Join(strings.Fields(c.Claim.Claim), " ")
		if c.Claim.Hint {
			said += " *(A hint: the paper reports it from tests it does not show.)*"
		}
		if c.Claim.Note != "" {
			said += " Note: " + strings.Join(strings.Fields(c.Claim.Note), " ")
		}
		fmt.Fprintf(w, "| `%s` | %s | **%s** | %s | %s |\n", c.Claim.ID, cell(said), c.Verdict, cell(c.Reason), cell(c.Found))
	}
	if len(s.Notes) > 0 {
		fmt.Fprintf(w, "\n## The study file's notes\n\nWhat the study file says of the paper as a whole: its own contradictions and what it leaves out.\n\n")
		for _, n := range s.Notes {
			fmt.Fprintf(w, "- %s\n", strings.Join(strings.Fields(n), " "))
		}
	}
	fmt.Fprintf(w, "\n## The paper's shapes\n\n")
	switch s.Name {
	case "trajectory":
		trajectoryShape(w, s, ms)
	case "ingest":
		ingestShape(w, ms)
	case "wiki":
		wikiShape(w, rows)
	default:
		fmt.Fprintf(w, "Not drawn for %s yet: its figures (latency per operation and model, by follower count; the join and crash timelines) are the charts of each step's own report.html.\n", s.Name)
	}
	return nil
}

// trajectoryShape is throughput against node count per dataset, access
// order and database: Tables 3, 5, 7, 9 (writes) and 11, 13 (reads).
func trajectoryShape(w io.Writer, s *Study, ms []Measure) {
	for _, op := range []string{"write", "distance"} {
		for _, ds := range []string{"dataset0", "dataset1"} {
			for _, acc := range []string{"sequential", "random"} {
				paper := map[string]map[int]float64{}
				for _, v := range s.Values {
					c := s.Effective(v)
					if v.Metric == "throughput" && v.Operation == op && c.Dataset == ds && c.Access == acc {
						if paper[v.Database] == nil {
							paper[v.Database] = map[int]float64{}
						}
						paper[v.Database][c.Nodes] = v.Value
					}
				}
				if len(paper) == 0 {
					continue
				}
				fmt.Fprintf(w, "### %s throughput (ops/s) against nodes: %s, %s\n\npaper / fieldbench\n\n| nodes |", op, ds, acc)
				for _, db := range s.Databases {
					fmt.Fprintf(w, " %s |", db)
				}
				fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---|", len(s.Databases)))
				for n := 1; n <= 4; n++ {
					fmt.Fprintf(w, "| %d |", n)
					for _, db := range s.Databases {
						p, fb := "–", "–"
						if x, ok := paper[db][n]; ok {
							p = report.Thousands(x)
						}
						if x, ok := meanOf(ms, func(m Measure) bool {
							return m.Metric == "throughput" && m.Operation == op && m.Database == db && m.Dataset == ds && m.Access == acc && m.Nodes == n && m.Failed == ""
						}); ok {
							fb = report.Thousands(x)
						}
						fmt.Fprintf(w, " %s / %s |", p, fb)
					}
					fmt.Fprintln(w)
				}
				fmt.Fprintln(w)
			}
		}
	}
}

// ingestShape is throughput against load per database with the 95 %
// confidence interval (Figures 3 and 4, whose data the paper does not
// publish: fieldbench's side only).
func ingestShape(w io.Writer, ms []Measure) {
	byDB := map[string][]Measure{}
	loads := map[int64]bool{}
	for _, m := range ms {
		if m.Metric == "throughput" && m.Operation == "batch" {
			byDB[m.Database] = append(byDB[m.Database], m)
			loads[m.Load] = true
		}
	}
	if len(byDB) == 0 {
		fmt.Fprintf(w, "No sweep measured yet.\n")
		return
	}
	var dbs []string
	for db := range byDB {
		dbs = append(dbs, db)
	}
	sort.Strings(dbs)
	var ls []int64
	for l := range loads {
		ls = append(ls, l)
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i] < ls[j] })
	fmt.Fprintf(w, "### Throughput (records/s) against load, mean and 95 %% confidence interval per database (Figures 3–4)\n\nThe paper publishes these figures only as plots; fieldbench's side:\n\n| records per source |")
	for _, db := range dbs {
		fmt.Fprintf(w, " %s: %s |", db, byDB[db][0].Server)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---|", len(dbs)))
	for _, l := range ls {
		fmt.Fprintf(w, "| %s |", report.Thousands(float64(l)))
		for _, db := range dbs {
			c := "–"
			for _, m := range byDB[db] {
				if m.Load != l {
					continue
				}
				switch {
				case m.Failed != "":
					c = "failed: " + cell(short(m.Failed, 90))
				case m.Hi > m.Lo:
					c = fmt.Sprintf("%s [%s, %s] (±%.1f %%, n %d)", report.Thousands(m.Value), report.Thousands(m.Lo), report.Thousands(m.Hi), 100*(m.Hi-m.Value)/m.Value, m.N)
				default:
					c = fmt.Sprintf("%s (n %d)", report.Thousands(m.Value), m.N)
				}
			}
			fmt.Fprintf(w, " %s |", c)
		}
		fmt.Fprintln(w)
	}
}

// wikiShape is Tables 1 and 2 (stabilisation and elasticity per doubling)
// and 3–4 (scalability, request-set time) as paper / fieldbench pairs.
func wikiShape(w io.Writer, rows []Row) {
	for _, t := range []struct {
		title   string
		metrics []string
	}{
		{"Tables 1–2: stabilisation (min) and elasticity per doubling", []string{"data_transfer_time", "additional_time", "stabilization_time", "elasticity_score"}},
		{"Tables 3–4: scalability score and mean request-set time (s)", []string{"scalability_score", "request_set_time"}},
	} {
		fmt.Fprintf(w, "### %s\n\npaper / fieldbench (fieldbench's node counts are in the value table's reasons)\n\n| database | nodes |", t.title)
		for _, m := range t.metrics {
			fmt.Fprintf(w, " %s |", m)
		}
		fmt.Fprintf(w, "\n|---|---|%s\n", strings.Repeat("---|", len(t.metrics)))
		type k struct {
			db  string
			n   int
			n2  int
			ord int
		}
		cells := map[k]map[string]string{}
		var keys []k
		for i, r := range rows {
			if !contains(t.metrics, r.Value.Metric) || r.Value.Unit == "%" {
				continue
			}
			kk := k{r.Value.Database, r.Cond.Nodes, r.Cond.NodesAfter, 0}
			found := false
			for _, e := range keys {
				if e.db == kk.db && e.n == kk.n && e.n2 == kk.n2 {
					kk, found = e, true
				}
			}
			if !found {
				kk.ord = i
				keys = append(keys, kk)
				cells[kk] = map[string]string{}
			}
			fb := "–"
			if !math.IsNaN(r.Measured) {
				fb = num(r.Measured)
			}
			cells[kk][r.Value.Metric] = num(r.Value.Value) + " / " + fb
		}
		for _, kk := range keys {
			nodes := strconv.Itoa(kk.n)
			if kk.n2 > 0 {
				nodes += " → " + strconv.Itoa(kk.n2)
			}
			fmt.Fprintf(w, "| %s | %s |", kk.db, nodes)
			for _, m := range t.metrics {
				c := cells[kk][m]
				if c == "" {
					c = "–"
				}
				fmt.Fprintf(w, " %s |", c)
			}
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w)
	}
}

func meanOf(ms []Measure, keep func(Measure) bool) (float64, bool) {
	var s float64
	n := 0
	for _, m := range ms {
		if keep(m) && !math.IsNaN(m.Value) {
			s += m.Value
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return s / float64(n), true
}

// condText is the conditions a reader needs to place a value.
func condText(c Conditions) string {
	var p []string
	if c.Nodes > 0 {
		n := strconv.Itoa(c.Nodes) + " node(s)"
		if c.NodesAfter > 0 {
			n = fmt.Sprintf("%d → %d nodes", c.Nodes, c.NodesAfter)
		}
		p = append(p, n)
	}
	if c.ReplicationFactor > 0 {
		p = append(p, "RF "+strconv.Itoa(c.ReplicationFactor))
	}
	if c.Consistency != "" {
		p = append(p, c.Consistency)
	}
	for _, s := range []string{c.Dataset, c.Access, c.Model, c.Event} {
		if s != "" {
			p = append(p, s)
		}
	}
	return strings.Join(p, ", ")
}

// paperFig is the paper's figure as the paper gives it: "up to", "more
// than", "at least" for a bound, "≈" for an approximate figure, its SD
// and its upper bound ("up to 17 %") where it gives one above the value.
func paperFig(v Value) string {
	p := fig(v.Value, v.Unit)
	if v.SD != nil {
		p += " ± " + num(*v.SD) + " SD"
	}
	switch {
	case Bounds[v.Bound] != "":
		p = Bounds[v.Bound] + " " + p
	case v.Approx:
		p = "≈ " + p
	}
	if v.Max != nil && *v.Max > v.Value {
		p += " (up to " + fig(*v.Max, v.Unit) + ")"
	}
	return p
}

// fig formats a figure with its unit.
func fig(v float64, unit string) string {
	if unit == "score" || unit == "ratio" || unit == "count" || unit == "records" || unit == "requests" {
		return num(v)
	}
	if unit == "%" {
		return num(v) + " %"
	}
	return num(v) + " " + unit
}

// num formats a number to about 4 significant digits, with thousands
// separators above 10,000.
func num(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "–"
	case math.Abs(v) >= 10000:
		return report.Thousands(v)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// cell makes text safe in a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.ReplaceAll(s, "\n", " ")
}

func rel(base, p string) string {
	if r, err := filepath.Rel(base, p); err == nil {
		return r
	}
	return p
}

// short cuts s to at most n runes, marking the cut.
func short(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
