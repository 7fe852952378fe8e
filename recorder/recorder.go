// Package recorder times operations into HDR histograms. Each worker owns a
// Handle (its own histograms behind an uncontended mutex); once a second Tick
// merges and resets every handle into one Interval. Recording does not
// allocate and takes no lock shared between workers.
package recorder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/fieldbench/fieldbench/result"
)

// maxGroups bounds the power-of-two groups (2^31 followers is plenty).
const maxGroups = 33

// maxErrorKinds bounds distinct error kinds per operation and interval so an
// error message with ids in it cannot grow the result file without bound.
const maxErrorKinds = 32

// Recorder collects the handles of one run.
type Recorder struct {
	ops     []string
	mu      sync.Mutex
	handles []*Handle
	start   time.Time
	last    time.Time
}

// New returns a recorder for the named operations; start is time zero of the
// run (interval offsets are relative to it).
func New(ops []string, start time.Time) *Recorder {
	return &Recorder{ops: append([]string(nil), ops...), start: start, last: start}
}

// Ops returns the operation names; an operation's index is its position.
func (r *Recorder) Ops() []string { return r.ops }

// Start is time zero of the run.
func (r *Recorder) Start() time.Time { return r.start }

// Handle returns a new handle for one worker.
func (r *Recorder) Handle() *Handle {
	h := &Handle{
		hists:  make([]*hdrhistogram.Histogram, len(r.ops)),
		groups: make([][maxGroups]*hdrhistogram.Histogram, len(r.ops)),
		errs:   make([]map[string]int64, len(r.ops)),
	}
	for i := range h.hists {
		h.hists[i] = result.NewHist()
		h.errs[i] = map[string]int64{}
	}
	r.mu.Lock()
	r.handles = append(r.handles, h)
	r.mu.Unlock()
	return h
}

// Handle is one worker's recording surface.
type Handle struct {
	mu     sync.Mutex
	hists  []*hdrhistogram.Histogram
	groups [][maxGroups]*hdrhistogram.Histogram
	errs   []map[string]int64
}

// Record adds one successful operation taking d.
func (h *Handle) Record(op int, d time.Duration) {
	h.mu.Lock()
	_ = h.hists[op].RecordValue(micros(d)) // out-of-range values are clamped by micros
	h.mu.Unlock()
}

// RecordGroup adds one successful operation to its histogram and to the
// power-of-two group of n (see Pow2Bucket).
func (h *Handle) RecordGroup(op int, n int, d time.Duration) {
	us := micros(d)
	b := Pow2Bucket(n)
	h.mu.Lock()
	_ = h.hists[op].RecordValue(us)
	g := h.groups[op][b]
	if g == nil { // once per worker and bucket, not per operation
		g = result.NewHist()
		h.groups[op][b] = g
	}
	_ = g.RecordValue(us)
	h.mu.Unlock()
}

// Error counts one failed operation by the kind of err.
func (h *Handle) Error(op int, err error) {
	kind := Kind(err)
	h.mu.Lock()
	m := h.errs[op]
	if _, ok := m[kind]; !ok && len(m) >= maxErrorKinds {
		kind = "other"
	}
	m[kind]++
	h.mu.Unlock()
}

func micros(d time.Duration) int64 {
	us := d.Microseconds()
	if us < result.LowestUS {
		return result.LowestUS
	}
	if us > result.HighestUS {
		return result.HighestUS
	}
	return us
}

// Pow2Bucket maps n to its power-of-two bucket: 0 -> 0, 1 -> 1, 2-3 -> 2,
// 4-7 -> 3, ... as the study grouped post latency by follower count.
func Pow2Bucket(n int) int {
	if n <= 0 {
		return 0
	}
	b := bits.Len(uint(n))
	if b >= maxGroups {
		return maxGroups - 1
	}
	return b
}

// Pow2Label is the label of bucket b: "0", "1", "2-3", "4-7", ...
func Pow2Label(b int) string {
	switch b {
	case 0:
		return "0"
	case 1:
		return "1"
	}
	lo := 1 << (b - 1)
	return strconv.Itoa(lo) + "-" + strconv.Itoa(2*lo-1)
}

// Snapshot is one interval's merged figures, still as histograms.
type Snapshot struct {
	Start, End time.Duration // since the recorder's start
	Hists      []*hdrhistogram.Histogram
	Errors     []map[string]int64
	Groups     []map[int]*hdrhistogram.Histogram
}

// Tick merges and resets every handle into a snapshot ending at now.
func (r *Recorder) Tick(now time.Time) Snapshot {
	s := Snapshot{
		Start:  r.last.Sub(r.start),
		End:    now.Sub(r.start),
		Hists:  make([]*hdrhistogram.Histogram, len(r.ops)),
		Errors: make([]map[string]int64, len(r.ops)),
		Groups: make([]map[int]*hdrhistogram.Histogram, len(r.ops)),
	}
	r.last = now
	for i := range r.ops {
		s.Hists[i] = result.NewHist()
		s.Errors[i] = map[string]int64{}
	}
	r.mu.Lock()
	handles := r.handles
	r.mu.Unlock()
	for _, h := range handles {
		h.mu.Lock()
		for i := range r.ops {
			if h.hists[i].TotalCount() > 0 {
				s.Hists[i].Merge(h.hists[i])
				h.hists[i].Reset()
			}
			for k, n := range h.errs[i] {
				s.Errors[i][k] += n
				delete(h.errs[i], k)
			}
			for b, g := range h.groups[i] {
				if g == nil || g.TotalCount() == 0 {
					continue
				}
				if s.Groups[i] == nil {
					s.Groups[i] = map[int]*hdrhistogram.Histogram{}
				}
				if s.Groups[i][b] == nil {
					s.Groups[i][b] = result.NewHist()
				}
				s.Groups[i][b].Merge(g)
				g.Reset()
			}
		}
		h.mu.Unlock()
	}
	return s
}

// Interval encodes s for the result file.
func (r *Recorder) Interval(s Snapshot, warmup bool) (result.Interval, error) {
	iv := result.Interval{
		Start:  s.Start.Seconds(),
		End:    s.End.Seconds(),
		Warmup: warmup,
		Ops:    map[string]result.OpInterval{},
	}
	for i, op := range r.ops {
		oi := result.OpInterval{Count: s.Hists[i].TotalCount()}
		if len(s.Errors[i]) > 0 {
			oi.Errors = s.Errors[i]
		}
		if oi.Count > 0 {
			enc, err := result.EncodeHist(s.Hists[i])
			if err != nil {
				return iv, fmt.Errorf("%s: %w", op, err)
			}
			oi.Hist = enc
		}
		iv.Ops[op] = oi
		for b, g := range s.Groups[i] {
			enc, err := result.EncodeHist(g)
			if err != nil {
				return iv, fmt.Errorf("%s group %d: %w", op, b, err)
			}
			if iv.Groups == nil {
				iv.Groups = map[string]map[string]string{}
			}
			if iv.Groups[op] == nil {
				iv.Groups[op] = map[string]string{}
			}
			iv.Groups[op][Pow2Label(b)] = enc
		}
	}
	return iv, nil
}

// KindError lets a driver error name its own kind.
type KindError interface{ Kind() string }

// Kind classifies an error for counting: timeouts, refused or reset
// connections and cancellations are named; anything else is the first line
// of its message with every number replaced by N, cut to 80 characters.
func Kind(err error) string {
	var ke KindError
	var ne net.Error
	switch {
	case err == nil:
		return "none"
	case errors.As(err, &ke):
		return ke.Kind()
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	msg, _, _ := strings.Cut(err.Error(), "\n")
	msg = digits.ReplaceAllString(msg, "N")
	if len(msg) > 80 {
		msg = msg[:80]
	}
	return msg
}

// digits are replaced by N in error kinds: "post tweet 3606: timed out" and
// "post tweet 3608: timed out" are one kind, not one kind per row or port.
var digits = regexp.MustCompile(`[0-9]+`)
