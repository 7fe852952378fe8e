// Package merge makes one result of the shards of a run made on several
// machines (or processes): intervals aligned on wall-clock seconds, HDR
// histograms added exactly (never percentiles averaged), counts and errors
// by kind summed, every event and point kept with its shard. The merged
// result is a result file like any other, for report, scores and compare.
package merge

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/fieldbench/fieldbench/result"
)

// ShardOption is the header option a shard records: "I/N".
const ShardOption = "shard"

// Shard reads a run's shard index and count from its header.
func Shard(r *result.Run) (i, n int, err error) {
	v, ok := r.Header.Options[ShardOption]
	s, _ := v.(string)
	if !ok || s == "" {
		return 0, 0, fmt.Errorf("%s is not a shard (its header has no %q option; run it with --shard I/N)", r.Dir, ShardOption)
	}
	return ParseShard(s)
}

// ParseShard reads "I/N" (0 <= I < N).
func ParseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	i, e1 := strconv.Atoi(a)
	n, e2 := strconv.Atoi(b)
	if !ok || e1 != nil || e2 != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("shard %q is not I/N with 0 <= I < N (e.g. 0/4)", s)
	}
	return i, n, nil
}

// RunKey is what shards of one run share, as a string: workload,
// database and every option but the shard's own (shard and shard_*).
func RunKey(h result.Header) (string, error) { return sameRun(h) }

// sameRun is what shards of one run share: every option but the shard's
// own (shard and shard_*).
func sameRun(h result.Header) (string, error) {
	opts := map[string]any{}
	for k, v := range h.Options {
		if k != ShardOption && !strings.HasPrefix(k, "shard_") {
			opts[k] = v
		}
	}
	b, err := json.Marshal(struct {
		W, A, DB, V string
		O           map[string]any
	}{h.Workload, h.Adapter, h.Database.Name, h.Database.Version, opts})
	return string(b), err
}

// Check refuses what is not the complete set of one run's shards: a run
// that is no shard, a shard given twice, shards of different runs or
// options, a missing shard, a shard that did not finish (no summary). It returns the runs ordered by shard.
func Check(runs []*result.Run) ([]*result.Run, error) {
	if len(runs) == 0 {
		return nil, errors.New("merge needs the shards' run directories")
	}
	byIndex := map[int]*result.Run{}
	n0, key0 := 0, ""
	for k, r := range runs {
		i, n, err := Shard(r)
		if err != nil {
			return nil, err
		}
		key, err := sameRun(r.Header)
		if err != nil {
			return nil, err
		}
		if k == 0 {
			n0, key0 = n, key
		}
		switch {
		case n != n0:
			return nil, fmt.Errorf("%s is shard %d/%d but %s is of %d shards: not one run", r.Dir, i, n, runs[0].Dir, n0)
		case key != key0:
			return nil, fmt.Errorf("%s and %s are shards of different runs (workload, database or options differ)", runs[0].Dir, r.Dir)
		case byIndex[i] != nil:
			return nil, fmt.Errorf("shard %d/%d given twice: %s and %s", i, n, byIndex[i].Dir, r.Dir)
		case r.Summary == nil:
			// A shard killed mid-run (SIGKILL, a pod evicted) wrote its
			// seconds but no summary: merged, the run would look whole
			// with a shard's end missing.
			return nil, fmt.Errorf("shard %d/%d in %s has no summary: it did not finish (killed?), so its result is partial and the merge would not be the whole run; run the shards again", i, n, r.Dir)
		}
		byIndex[i] = r
	}
	var missing []string
	out := make([]*result.Run, n0)
	for i := range n0 {
		if byIndex[i] == nil {
			missing = append(missing, strconv.Itoa(i))
		}
		out[i] = byIndex[i]
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("shards %s of %d missing: merge every shard of the run", strings.Join(missing, ", "), n0)
	}
	return out, nil
}

// Shards merges the complete shards of one run (see Check).
func Shards(runs []*result.Run) (*result.Run, error) {
	runs, err := Check(runs)
	if err != nil {
		return nil, err
	}
	t0 := runs[0].Header.Started
	last := t0
	for _, r := range runs {
		if r.Header.Started.Before(t0) {
			t0 = r.Header.Started
		}
		if r.Header.Started.After(last) {
			last = r.Header.Started
		}
	}
	h := runs[0].Header
	h.Started = t0
	h.Options = map[string]any{}
	for k, v := range runs[0].Header.Options {
		if k != ShardOption && !strings.HasPrefix(k, "shard_") {
			h.Options[k] = v
		}
	}
	h.Options["shards"] = len(runs)
	out := &result.Run{Dir: runs[0].Dir, Header: h}
	secs := map[int]*acc{}
	extra := map[string]float64{"shards": float64(len(runs)), "shard_start_skew_ms": float64(last.Sub(t0).Microseconds()) / 1000}
	for i, r := range runs {
		off := r.Header.Started.Sub(t0).Seconds()
		tag := "shard " + strconv.Itoa(i)
		for _, iv := range r.Intervals {
			key := int(math.Round(iv.Start + off))
			a := secs[key]
			if a == nil {
				a = &acc{start: float64(key), end: float64(key), drain: true, ops: map[string]*opAcc{}, groups: map[string]map[string][]string{}}
				secs[key] = a
			}
			if err := a.add(iv); err != nil {
				return nil, fmt.Errorf("%s: %w", r.Dir, err)
			}
		}
		for _, e := range r.Events {
			e.At += off
			e.Detail = strings.TrimSpace(tag + ": " + e.Detail)
			out.Events = append(out.Events, e)
		}
		for _, p := range r.Points {
			if m, ok := r.Header.Series[p.Series]; ok && m.XIsTime {
				p.X += off
			}
			labels := map[string]string{"shard": strconv.Itoa(i)}
			for k, v := range p.Labels {
				labels[k] = v
			}
			p.Labels = labels
			out.Points = append(out.Points, p)
		}
		if r.Summary != nil {
			var ops float64
			for _, o := range r.Summary.Ops {
				ops += o.OpsPerSec
			}
			extra[fmt.Sprintf("shard_%d_ops_per_sec", i)] = ops
		}
		extra[fmt.Sprintf("shard_%d_start_offset_ms", i)] = off * 1000
	}
	keys := make([]int, 0, len(secs))
	for k := range secs {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var hs histSum
	totals := map[string]*histSum{} // every operation's sum past warm-up, for the summary
	for _, k := range keys {
		iv, err := secs[k].interval(&hs, totals)
		if err != nil {
			return nil, err
		}
		out.Intervals = append(out.Intervals, iv)
		delete(secs, k) // its encodings can go
	}
	sort.SliceStable(out.Events, func(a, b int) bool { return out.Events[a].At < out.Events[b].At })
	merged := map[string]*hdrhistogram.Histogram{}
	for op, t := range totals {
		merged[op] = t.hist()
	}
	sum := out.SummarizeMerged(merged)
	shardRates(&sum, runs)
	if err := out.AddLateness(&sum); err != nil {
		return nil, err
	}
	sum.Extra = extra
	out.Summary = &sum
	return out, nil
}

// shardRates sets the merged summary's rates and duration from the
// shards' own: an operation's rate is the sum of the shards' rates, each
// its count over its own measured time, and the measured duration is the
// longest shard's. The merged seconds span from the first shard's start
// to the last one's end, so over them the start skew counts as time in
// which the shards that had not started (or had stopped) did nothing: two
// 5 s shards of 100 operations a second started 576 ms apart span 6
// merged seconds, 167 a second where 200 were done. While the shards run
// together — what a sharded run is for — the load offered is the sum of
// theirs; the skew is in shard_start_skew_ms.
func shardRates(sum *result.Summary, runs []*result.Run) {
	sum.DurationSeconds = 0
	for _, r := range runs {
		sum.DurationSeconds = math.Max(sum.DurationSeconds, r.Summary.DurationSeconds)
	}
	for op, o := range sum.Ops {
		o.OpsPerSec = 0
		for _, r := range runs {
			o.OpsPerSec += r.Summary.Ops[op].OpsPerSec
		}
		sum.Ops[op] = o
	}
}

// opAcc is one operation in one second of every shard: its histograms are
// kept encoded until the second is merged (decoding them all at once would
// hold a 140 KB counts array per shard, second and operation).
type opAcc struct {
	count  int64
	errors map[string]int64
	hists  []string
}

// acc is one wall-clock second of every shard.
type acc struct {
	start, end    float64
	warmup, drain bool
	ops           map[string]*opAcc
	groups        map[string]map[string][]string
	lateness      []string // every shard's schedule lateness of the second
}

func (a *acc) add(iv result.Interval) error {
	a.end = math.Max(a.end, a.start+(iv.End-iv.Start))
	a.warmup = a.warmup || iv.Warmup
	a.drain = a.drain && iv.Drain
	for op, oi := range iv.Ops {
		o := a.ops[op]
		if o == nil {
			o = &opAcc{errors: map[string]int64{}}
			a.ops[op] = o
		}
		o.count += oi.Count
		for k, n := range oi.Errors {
			o.errors[k] += n
		}
		o.hists = append(o.hists, oi.Hist)
	}
	if iv.Lateness != "" {
		a.lateness = append(a.lateness, iv.Lateness)
	}
	for op, gs := range iv.Groups {
		if a.groups[op] == nil {
			a.groups[op] = map[string][]string{}
		}
		for g, enc := range gs {
			a.groups[op][g] = append(a.groups[op][g], enc)
		}
	}
	return nil
}

// sumOf adds the encoded histograms hists exactly and encodes the sum.
func sumOf(sum *histSum, hists []string) (string, error) {
	sum.reset()
	for _, enc := range hists {
		if err := sum.add(enc); err != nil {
			return "", err
		}
	}
	return sum.encode()
}

// interval merges the second's histograms, adding each operation's sum to
// totals unless the second is warm-up (as Run.Merged(true) would).
func (a *acc) interval(sum *histSum, totals map[string]*histSum) (result.Interval, error) {
	iv := result.Interval{Start: a.start, End: a.end, Warmup: a.warmup, Drain: a.drain, Ops: map[string]result.OpInterval{}}
	for op, o := range a.ops {
		enc, err := sumOf(sum, o.hists)
		if err != nil {
			return iv, fmt.Errorf("interval at %.0fs, %s: %w", a.start, op, err)
		}
		if !a.warmup {
			if totals[op] == nil {
				totals[op] = &histSum{}
			}
			totals[op].addSum(sum)
		}
		oi := result.OpInterval{Count: o.count, Hist: enc}
		if len(o.errors) > 0 {
			oi.Errors = o.errors
		}
		iv.Ops[op] = oi
	}
	if len(a.lateness) > 0 {
		enc, err := sumOf(sum, a.lateness)
		if err != nil {
			return iv, fmt.Errorf("interval at %.0fs, schedule lateness: %w", a.start, err)
		}
		iv.Lateness = enc
	}
	for op, gs := range a.groups {
		if iv.Groups == nil {
			iv.Groups = map[string]map[string]string{}
		}
		iv.Groups[op] = map[string]string{}
		for g, hs := range gs {
			enc, err := sumOf(sum, hs)
			if err != nil {
				return iv, fmt.Errorf("interval at %.0fs, %s group %s: %w", a.start, op, g, err)
			}
			iv.Groups[op][g] = enc
		}
	}
	return iv, nil
}

// Write writes r as the result file of dir.
func Write(dir string, r *result.Run) error {
	w, err := result.Create(dir, r.Header)
	if err != nil {
		return err
	}
	var errs []error
	for _, iv := range r.Intervals {
		errs = append(errs, w.Interval(iv))
	}
	for _, e := range r.Events {
		errs = append(errs, w.Event(e))
	}
	for _, p := range r.Points {
		errs = append(errs, w.Point(p))
	}
	if r.Summary != nil {
		errs = append(errs, w.Summary(*r.Summary))
	}
	errs = append(errs, w.Close())
	return errors.Join(errs...)
}
