package result

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

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

// Bounds a decoded histogram's header must keep. The decoder allocates the
// counts for whatever range the header names (tens of MB for 1 to 2^63 at
// five digits, found by FuzzDecodeHist), so a corrupt or hostile result
// file could make a report slow or large; fieldbench writes 1 µs to 1
// minute at three digits, and these leave ample room around that.
const (
	maxHistSigFigs = 4
	maxHistHighest = 1e13 // µs: about 115 days
)

// ErrDamagedHist is wrapped by DecodeHist's errors. The histograms it
// decodes come from result files (and merged shards' files), so one that
// does not decode is a damaged input file: the CLI refuses it as bad input
// (exit 2), as it refuses a file whose header line is damaged, not as a
// failure of the work (a report of it exited 1).
var ErrDamagedHist = errors.New("damaged histogram")

// DecodeHist decodes a histogram written by EncodeHist; "" is empty.
func DecodeHist(s string) (*hdrhistogram.Histogram, error) {
	if s == "" {
		return NewHist(), nil
	}
	if err := checkHistHeader(s); err != nil {
		return nil, fmt.Errorf("%w in the result file: %w", ErrDamagedHist, err)
	}
	h, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("%w in the result file: %w", ErrDamagedHist, err)
	}
	return h, nil
}

// checkHistHeader reads the range and precision of an encoded V2
// histogram (base64 of: cookie, length, then zlib of a 40-byte header:
// cookie, payload length, offset, significant digits, lowest, highest,
// ratio) and refuses those beyond the bounds above before the decoder
// allocates for them.
func checkHistHeader(s string) error {
	n := base64.StdEncoding.DecodedLen(len(s))
	if n < 8 {
		return errors.New("too short")
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return err
	}
	if len(raw) < 8 {
		return errors.New("too short")
	}
	z, err := zlib.NewReader(bytes.NewReader(raw[8:]))
	if err != nil {
		return err
	}
	defer z.Close()
	var hdr [40]byte
	if _, err := io.ReadFull(z, hdr[:]); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	sig := int32(binary.BigEndian.Uint32(hdr[12:16]))
	lowest := int64(binary.BigEndian.Uint64(hdr[16:24]))
	highest := int64(binary.BigEndian.Uint64(hdr[24:32]))
	if sig < 1 || sig > maxHistSigFigs || lowest < 1 || highest < 2*lowest || highest > maxHistHighest {
		return fmt.Errorf("range %d..%d at %d significant digits is beyond what fieldbench reads (1..%g at 1 to %d digits)",
			lowest, highest, sig, float64(maxHistHighest), maxHistSigFigs)
	}
	return nil
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
	s := r.SummarizeMerged(merged)
	if err := r.AddLateness(&s); err != nil {
		return Summary{}, err
	}
	return s, nil
}

// AddLateness sets s.Schedule from the intervals, judged against s's
// operations (Summarize does; a caller of SummarizeMerged calls it).
func (r *Run) AddLateness(s *Summary) error {
	l, err := r.ScheduleLateness()
	if err != nil || l == nil {
		return err
	}
	l.judge(*s)
	s.Schedule = l
	return nil
}

// SummarizeMerged is Summarize with the operations' histograms already
// merged (what Merged(true) returns), for a caller that has them: merging
// the shards of a run adds them as it goes instead of decoding every
// merged interval again.
func (r *Run) SummarizeMerged(merged map[string]*hdrhistogram.Histogram) Summary {
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
	return s
}

// Unavailable is the time without service: the measured seconds (warm-up
// and drain excluded) in which no operation succeeded, and the longest
// such stretch of consecutive intervals. A server that was killed shows
// here as the seconds its clients got only errors; read from the intervals
// alone, so a killed run's file gives it too. Seconds with no operation
// finished at all (requests hanging) count when they join seconds with
// failures (before or after them): a run's last partial second, empty
// because the clients had stopped, is not an outage, and in open loop
// (a target rate) neither is a second in which nothing was due.
func (r *Run) Unavailable() (total, longest float64) {
	var stretch, pending float64 // pending: empty seconds not yet joined to failures
	failing := false
	end := func() {
		stretch, pending, failing = 0, 0, false
	}
	for _, iv := range r.Intervals {
		if iv.Warmup || iv.Drain {
			continue
		}
		var ok, failed int64
		for _, oi := range iv.Ops {
			ok += oi.Count
			for _, n := range oi.Errors {
				failed += n
			}
		}
		d := iv.End - iv.Start
		switch {
		case ok > 0:
			end()
			continue
		case failed > 0:
			failing = true
			stretch += pending + d
			total += pending + d
			pending = 0
		case failing:
			stretch += d
			total += d
		default:
			pending += d
			continue
		}
		longest = max(longest, stretch)
	}
	return total, longest
}
