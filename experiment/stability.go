package experiment

import (
	"fmt"
	"strconv"

	"github.com/fieldbench/fieldbench/analysis/score"
	"github.com/fieldbench/fieldbench/result"
)

// RequestSet is the wiki's seam (job.RequestSetWatcher): every request
// set's point goes through the stability tracking.
func (o *observer) RequestSet(pt *result.Point) bool {
	return o.es.wikiSet(pt)
}

// wikiSet labels one request-set point and tracks stability: the baseline
// after the warm-up and baseline sets, and after a join the first window of
// request sets whose delta times are all below the baseline once data has
// settled. It returns true when the experiment has what it needs.
func (es *expSession) wikiSet(pt *result.Point) bool {
	if es == nil {
		return false
	}
	x := es.x
	st := x.sc.Stability
	es.mu.Lock()
	i := len(es.means)
	es.means = append(es.means, pt.Y)
	es.ends = append(es.ends, pt.X)
	if i < st.WarmupSets {
		pt.Warmup = true
	}
	if x.cl != nil {
		pt.Labels["nodes"] = strconv.Itoa(x.nodesUp())
	}
	if x.step > 0 {
		pt.Labels["step"] = strconv.Itoa(x.step)
	}
	var events [][2]string
	var signals []string
	if !es.haveBase && i+1 == st.WarmupSets+st.BaselineSets {
		es.baseline = score.Baseline(es.means[st.WarmupSets:])
		es.haveBase = true
		events = append(events, [2]string{"baseline", fmt.Sprintf("variability %.4fs over %d request sets", es.baseline, st.BaselineSets)})
		signals = append(signals, "baseline")
	}
	stop := false
	if es.haveBase && es.settledAt >= 0 && es.stableIdx < 0 {
		if k, detail := st.StableAfter(es.means, es.ends, es.joinAt, es.settledAt); k >= 0 {
			es.stableIdx = k
			events = append(events, [2]string{"stable", detail})
			signals = append(signals, "stable")
		}
	}
	if es.stableIdx >= 0 && i >= es.stableIdx+st.AfterStable {
		stop = true
	}
	es.mu.Unlock()
	for _, e := range events {
		_ = es.s.Event(e[0], e[1])
	}
	if es.tl != nil {
		es.tl.SetDone()
		for _, c := range signals {
			es.tl.Signal(c)
		}
	}
	return stop || es.stop.Load()
}
