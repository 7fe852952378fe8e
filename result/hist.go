package result

import (
	"fmt"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds used everywhere: 1 µs to 1 minute, 3 significant digits.
const (
	LowestUS  = 1
	HighestUS = 60_000_000
	SigFigs   = 3
)

// NewHist returns an empty histogram with the standard bounds.
func NewHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(LowestUS, HighestUS, SigFigs)
}

// EncodeHist encodes h in the HdrHistogram V2 compressed base64 format.
func EncodeHist(h *hdrhistogram.Histogram) (string, error) {
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("encode histogram: %w", err)
	}
	return string(b), nil
}

// DecodeHist decodes a histogram written by EncodeHist; "" is empty.
func DecodeHist(s string) (*hdrhistogram.Histogram, error) {
	if s == "" {
		return NewHist(), nil
	}
	h, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	return h, nil
}

// Merged returns, for each operation, the merge of its interval histograms,
// skipping warm-up intervals when skipWarmup is set.
func (r *Run) Merged(skipWarmup bool) (map[string]*hdrhistogram.Histogram, error) {
	out := map[string]*hdrhistogram.Histogram{}
	for _, iv := range r.Intervals {
		if skipWarmup && iv.Warmup {
			continue
		}
		for op, oi := range iv.Ops {
			h, err := DecodeHist(oi.Hist)
			if err != nil {
				return nil, fmt.Errorf("interval at %.0fs, %s: %w", iv.Start, op, err)
			}
			if out[op] == nil {
				out[op] = NewHist()
			}
			out[op].Merge(h)
		}
	}
	return out, nil
}

// Summarize computes the summary from the intervals alone (post warm-up), so a
// report of a killed run shows the same figures a finished run would.
func (r *Run) Summarize() (Summary, error) {
	merged, err := r.Merged(true)
	if err != nil {
		return Summary{}, err
	}
	s := Summary{Ops: map[string]OpSummary{}}
	var first, last float64 = -1, 0
	errs := map[string]map[string]int64{}
	counts := map[string]int64{}
	for _, iv := range r.Intervals {
		if iv.Warmup {
			continue
		}
		if !iv.Drain {
			if first < 0 {
				first = iv.Start
			}
			last = iv.End
		}
		for op, oi := range iv.Ops {
			counts[op] += oi.Count
			for k, n := range oi.Errors {
				if errs[op] == nil {
					errs[op] = map[string]int64{}
				}
				errs[op][k] += n
			}
		}
	}
	if first >= 0 {
		s.DurationSeconds = last - first
	}
	for op, n := range counts {
		os := OpSummary{Count: n, Errors: errs[op]}
		if s.DurationSeconds > 0 {
			os.OpsPerSec = float64(n) / s.DurationSeconds
		}
		if h := merged[op]; h != nil && h.TotalCount() > 0 {
			os.MeanUS = h.Mean()
			os.P50US = h.ValueAtQuantile(50)
			os.P90US = h.ValueAtQuantile(90)
			os.P99US = h.ValueAtQuantile(99)
			os.P999US = h.ValueAtQuantile(99.9)
			os.MaxUS = h.Max()
		}
		s.Ops[op] = os
	}
	if r.Summary != nil {
		s.Interrupted = r.Summary.Interrupted
		s.Extra = r.Summary.Extra
		s.Client = r.Summary.Client
	}
	return s, nil
}
