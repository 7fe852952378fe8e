// Package recorder times operations into HDR histograms. Workers record
// into a bounded set of shards (a small multiple of GOMAXPROCS, each with its
// own histograms behind its own mutex); a worker picks its shard once, when
// it asks for a Handle, so the recording state does not grow with the number
// of clients: 100,000 clients share the same few shards as 8 do. Once a
// second Tick merges and resets every shard into one Interval. HDR merging
// adds bucket counts, so the merged figures are exactly those one histogram
// per client would give. Recording does not allocate and takes no lock shared
// by all workers.
package recorder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/fieldbench/fieldbench/result"
)

// maxGroups bounds the power-of-two groups (2^31 followers is plenty).
const maxGroups = 33

// maxErrorKinds bounds distinct error kinds per operation, shard and
// interval so an error message with ids in it cannot grow the result file
// without bound.
const maxErrorKinds = 32

// shardsPerProc is how many shards a recorder opens per GOMAXPROCS: more
// than one so that a worker preempted while holding its shard's mutex
// rarely blocks another. shardCap caps them on large machines: a shard
// holds about 139 KB per operation and as much again per follower group
// hit, so 32 shards of three grouped operations can reach ~150 MB.
const (
	shardsPerProc = 2
	shardCap      = 32
)

// Recorder collects the shards of one run.
type Recorder struct {
	ops       []string
	maxShards int
	mu        sync.Mutex
	handles   []*Handle // the shards, at most maxShards
	given     int       // handles given out, to spread workers round-robin
	start     time.Time
	last      time.Time
}

// New returns a recorder for the named operations; start is time zero of the
// run (interval offsets are relative to it). It records into at most
// 2 × GOMAXPROCS shards, and never more than 32.
func New(ops []string, start time.Time) *Recorder {
	return NewSharded(ops, start, min(shardsPerProc*runtime.GOMAXPROCS(0), shardCap))
}

// NewSharded is New with an explicit bound on the shards (at least 1);
// tests use it to compare one shard per client with a few shared ones.
func NewSharded(ops []string, start time.Time, maxShards int) *Recorder {
	return &Recorder{ops: append([]string(nil), ops...), maxShards: max(maxShards, 1), start: start, last: start}
}

// Ops returns the operation names; an operation's index is its position.
func (r *Recorder) Ops() []string { return r.ops }

// Start is time zero of the run.
func (r *Recorder) Start() time.Time { return r.start }

// Shards is how many shards the recorder holds so far (at most its bound).
func (r *Recorder) Shards() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.handles)
}

// Handle returns the recording surface of one worker: a shard of its own
// while the recorder has fewer shards than its bound, then the existing
// shards in turn. Call it once per worker, not per operation.
func (r *Recorder) Handle() *Handle {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.given++
	if len(r.handles) >= r.maxShards {
		return r.handles[(r.given-1)%len(r.handles)]
	}
	h := &Handle{
		hists:  make([]*hdrhistogram.Histogram, len(r.ops)),
		groups: make([][maxGroups]*hdrhistogram.Histogram, len(r.ops)),
		errs:   make([]map[string]int64, len(r.ops)),
		late:   result.NewHist(),
	}
	for i := range h.hists {
		h.hists[i] = result.NewHist()
		h.errs[i] = map[string]int64{}
	}
	r.handles = append(r.handles, h)
	return h
}

// Handle is one recording shard, shared by the workers that were given it.
// Its methods are safe for concurrent use.
type Handle struct {
	mu     sync.Mutex
	hists  []*hdrhistogram.Histogram
	groups [][maxGroups]*hdrhistogram.Histogram
	errs   []map[string]int64
	late   *hdrhistogram.Histogram // open loop: how late operations started
	_      [64]byte                // keeps two shards' mutexes off one cache line
}

// Record adds one successful operation taking d.
func (h *Handle) Record(op int, d time.Duration) {
	h.mu.Lock()
	_ = h.hists[op].RecordValue(micros(d)) // out-of-range values are clamped by micros
	h.mu.Unlock()
}

// Late records how late an open-loop operation started against its
// intended start: the load generator's own error, kept beside the
// latencies that contain it (see result.Interval.Lateness).
func (h *Handle) Late(d time.Duration) {
	h.mu.Lock()
	_ = h.late.RecordValue(micros(d))
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
	if g == nil { // once per shard and bucket, not per operation
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
	// Late is how late the interval's open-loop operations started (empty
	// in closed loop).
	Late *hdrhistogram.Histogram
}

// Tick merges and resets every handle into a snapshot ending at now.
func (r *Recorder) Tick(now time.Time) Snapshot {
	s := Snapshot{
		Start:  r.last.Sub(r.start),
		End:    now.Sub(r.start),
		Hists:  make([]*hdrhistogram.Histogram, len(r.ops)),
		Errors: make([]map[string]int64, len(r.ops)),
		Groups: make([]map[int]*hdrhistogram.Histogram, len(r.ops)),
		Late:   result.NewHist(),
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
		if h.late.TotalCount() > 0 {
			s.Late.Merge(h.late)
			h.late.Reset()
		}
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
	if s.Late != nil && s.Late.TotalCount() > 0 {
		enc, err := result.EncodeHist(s.Late)
		if err != nil {
			return iv, fmt.Errorf("schedule lateness: %w", err)
		}
		iv.Lateness = enc
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

// maxKindLen bounds an error kind in bytes. It is generous because the
// whole reason matters: a PostgreSQL error wrapped by the adapter and the
// workload ("post tweet N: insert timeline: ERROR: could not serialize
// access due to ... (SQLSTATE N)") runs past 150 characters before its cause.
const maxKindLen = 300

// Kind classifies an error for counting: timeouts, refused or reset
// connections and cancellations are named; anything else is the first line
// of its message (up to a \n or \r) with every number replaced by N, whole unless longer than
// 300 bytes, then cut at the last word boundary before and marked "…".
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
	// The first line, ended by \n or \r: an HTTP body's CRLF (HBase's REST
	// gateway answers "Unavailable\r\n...") left a \r in the kind.
	msg := err.Error()
	if i := strings.IndexAny(msg, "\r\n"); i >= 0 {
		msg = msg[:i]
	}
	return cutKind(digits.ReplaceAllString(msg, "N"))
}

// cutKind shortens msg to at most maxKindLen bytes, at a space when one is
// in the second half of the bound, else at a character boundary.
func cutKind(msg string) string {
	if len(msg) <= maxKindLen {
		return msg
	}
	const mark = "…"
	cut := maxKindLen - len(mark)
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	if sp := strings.LastIndexByte(msg[:cut+1], ' '); sp >= maxKindLen/2 {
		cut = sp
	}
	return strings.TrimRight(msg[:cut], " ,:;") + mark
}

// digits are replaced by N in error kinds: "post tweet 3606: timed out" and
// "post tweet 3608: timed out" are one kind, not one kind per row or port.
var digits = regexp.MustCompile(`[0-9]+`)
