package report

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/fieldbench/fieldbench/result"
)

// palette colours the runs, in order.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

// runData is one run prepared for reporting: its summary (recomputed from
// the intervals when the run was killed before writing one), per-interval
// samples and merged post-warm-up histograms.
type runData struct {
	run        *result.Run
	name       string
	color      string
	summary    result.Summary
	recomputed bool
	samples    map[string][]sample                           // op -> one per interval
	merged     map[string]*hdrhistogram.Histogram            // op -> post-warm-up
	groups     map[string]map[string]*hdrhistogram.Histogram // op -> label -> post-warm-up
	events     []numberedEvent                               // by time, numbered across the page
}

// sample is one operation's figures for one interval.
type sample struct {
	t        float64 // interval midpoint, seconds since start
	rate     float64 // successful ops/s
	errRate  float64 // failed ops/s
	errs     int64
	p50, p99 float64 // µs; NaN when the interval has no successful op
	// drain: the interval is time after the clients stopped (see
	// drained): its latencies are drawn, but it is no measured second, so
	// rates over time leave it out.
	drain bool
}

func loadRuns(runs []*result.Run) ([]*runData, error) {
	out := make([]*runData, len(runs))
	for i, r := range runs {
		d, err := loadRun(r, i)
		if err != nil {
			return nil, fmt.Errorf("report %s: %w", runName(r, i), err)
		}
		out[i] = d
	}
	numberEvents(out)
	return out, nil
}

func loadRun(r *result.Run, i int) (*runData, error) {
	d := &runData{run: r, name: runName(r, i), color: palette[i%len(palette)]}
	if r.Summary != nil {
		d.summary = *r.Summary
	} else {
		s, err := r.Summarize()
		if err != nil {
			return nil, err
		}
		d.summary, d.recomputed = s, true
	}
	var err error
	if d.merged, err = r.Merged(true); err != nil {
		return nil, err
	}
	if d.samples, err = samplesOf(r); err != nil {
		return nil, err
	}
	if d.groups, err = groupsOf(r); err != nil {
		return nil, err
	}
	return d, nil
}

// runName is the run directory's base name and the adapter, and the
// server when it is not the one the adapter is named after (the mongodb
// adapter on FerretDB), so that no label calls a stand-in's figure by the
// name of the database it stands in for.
func runName(r *result.Run, i int) string {
	base := filepath.Base(r.Dir)
	if r.Dir == "" || base == "." || base == "/" {
		base = "run " + strconv.Itoa(i+1)
	}
	a, db := r.Header.Adapter, r.Header.Database.Name
	switch {
	case a == "":
		return base
	case db != "" && !strings.HasPrefix(strings.ToLower(db), strings.ToLower(a)): // "PostgreSQL" is the postgres adapter's own
		return base + " (" + a + " adapter on " + db + ")"
	}
	return base + " (" + a + ")"
}

func samplesOf(r *result.Run) (map[string][]sample, error) {
	out := map[string][]sample{}
	ops := operations([]*result.Run{r})
	for i, iv := range r.Intervals {
		drain := drained(r, i)
		dur := iv.End - iv.Start
		if dur <= 0 {
			dur = 1
		}
		for _, op := range ops {
			s, err := sampleOf(iv.Ops[op], dur)
			if err != nil {
				return nil, fmt.Errorf("interval at %.0fs, %s: %w", iv.Start, op, err)
			}
			s.t = (iv.Start + iv.End) / 2
			s.drain = drain
			out[op] = append(out[op], s)
		}
	}
	return out, nil
}

func sampleOf(oi result.OpInterval, dur float64) (sample, error) {
	s := sample{rate: float64(oi.Count) / dur, p50: math.NaN(), p99: math.NaN()}
	for _, n := range oi.Errors {
		s.errs += n
	}
	s.errRate = float64(s.errs) / dur
	h, err := result.DecodeHist(oi.Hist)
	if err != nil {
		return s, err
	}
	if h.TotalCount() > 0 {
		s.p50 = float64(h.ValueAtQuantile(50))
		s.p99 = float64(h.ValueAtQuantile(99))
	}
	return s, nil
}

func groupsOf(r *result.Run) (map[string]map[string]*hdrhistogram.Histogram, error) {
	out := map[string]map[string]*hdrhistogram.Histogram{}
	for _, iv := range r.Intervals {
		if iv.Warmup {
			continue
		}
		for op, byLabel := range iv.Groups {
			if out[op] == nil {
				out[op] = map[string]*hdrhistogram.Histogram{}
			}
			for label, enc := range byLabel {
				h, err := result.DecodeHist(enc)
				if err != nil {
					return nil, fmt.Errorf("interval at %.0fs, %s group %s: %w", iv.Start, op, label, err)
				}
				if out[op][label] == nil {
					out[op][label] = result.NewHist()
				}
				out[op][label].Merge(h)
			}
		}
	}
	return out, nil
}

// operations lists the runs' operations: the header order of each run in
// turn, then any operation seen only in intervals or summaries, sorted.
func operations(runs []*result.Run) []string {
	var ops []string
	seen := map[string]bool{}
	add := func(op string) {
		if !seen[op] {
			seen[op] = true
			ops = append(ops, op)
		}
	}
	for _, r := range runs {
		for _, op := range r.Header.Operations {
			add(op)
		}
	}
	extra := map[string]bool{}
	for _, r := range runs {
		for _, iv := range r.Intervals {
			for op := range iv.Ops {
				extra[op] = true
			}
		}
		if r.Summary != nil {
			for op := range r.Summary.Ops {
				extra[op] = true
			}
		}
	}
	for _, op := range sortedKeys(extra) {
		add(op)
	}
	return ops
}

// measuredOps lists the operations some run has intervals or a summary
// figure for: runs that write only points have none, and get no empty
// operation tables or charts.
func measuredOps(data []*runData) []string {
	var out []string
	for _, op := range operations(runsOf(data)) {
		for _, d := range data {
			if _, ok := d.summary.Ops[op]; ok || len(d.samples[op]) > 0 {
				out = append(out, op)
				break
			}
		}
	}
	return out
}

func runsOf(data []*runData) []*result.Run {
	out := make([]*result.Run, len(data))
	for i, d := range data {
		out[i] = d.run
	}
	return out
}

// groupLabels lists the group labels of op over all runs, ordered by their
// numeric lower bound ("0", "1", "2-3", "4-7", ...); labels without a
// leading number sort last, by name.
func groupLabels(data []*runData, op string) []string {
	set := map[string]bool{}
	for _, d := range data {
		for l := range d.groups[op] {
			set[l] = true
		}
	}
	labels := sortedKeys(set)
	SortGroupLabels(labels)
	return labels
}

// SortGroupLabels orders group labels in place by their numeric lower
// bound ("0", "1", "2-3", "4-7", ...), labels without a leading number
// last; a sorted input keeps ties by name. The order groups are drawn in,
// and the one the study's verdicts read them in.
func SortGroupLabels(labels []string) {
	sort.SliceStable(labels, func(i, j int) bool {
		a, aok := lowerBound(labels[i])
		b, bok := lowerBound(labels[j])
		if aok != bok {
			return aok
		}
		return aok && a < b
	})
}

// lowerBound parses the leading integer of a label such as "8-15" or "1024+".
func lowerBound(label string) (int64, bool) {
	end := strings.IndexFunc(label, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(label)
	}
	n, err := strconv.ParseInt(label[:end], 10, 64)
	return n, err == nil
}

// groupedOps lists the operations with group histograms in any run, in
// display order.
func groupedOps(data []*runData) []string {
	var out []string
	for _, op := range operations(runsOf(data)) {
		for _, d := range data {
			if len(d.groups[op]) > 0 {
				out = append(out, op)
				break
			}
		}
	}
	return out
}

// groupTitle names op's grouping from the first header that names it.
func groupTitle(data []*runData, op string) string {
	for _, d := range data {
		if g := d.run.Header.Groups[op]; g != "" {
			return g
		}
	}
	return "group"
}

// hasErrors reports whether op failed at least once in any interval.
func hasErrors(data []*runData, op string) bool {
	for _, d := range data {
		for _, s := range d.samples[op] {
			if s.errs > 0 {
				return true
			}
		}
	}
	return false
}

// tickJitter is how late a run's last full-second tick may come after its
// planned end.
const tickJitter = 0.05

// drained reports whether interval i of r is time after the clients
// stopped: marked so (Interval.Drain), or the run's last interval when it
// starts at its planned --duration (within a tick's jitter), where the
// runner records the operations in flight finishing. Drawn as a measured
// second, that sliver showed the fast operations falling to 0 ops/s at the
// end of every closed-loop run while the slow posts finished.
func drained(r *result.Run, i int) bool {
	iv := r.Intervals[i]
	if iv.Drain {
		return true
	}
	if i != len(r.Intervals)-1 || i == 0 {
		return false
	}
	ds, ok := r.Header.Options["duration"].(string)
	if !ok {
		return false
	}
	d, err := time.ParseDuration(ds)
	return err == nil && d > 0 && iv.Start >= d.Seconds()-tickJitter
}
