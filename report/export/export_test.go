package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/fieldbench/fieldbench/result"
)

func sampleRun(t *testing.T) *result.Run {
	t.Helper()
	r := &result.Run{Dir: "x", Header: result.Header{Version: "test", Workload: "wiki", Adapter: "sqlite",
		Started: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC), Operations: []string{"read", "update"}}}
	for i := range 5 {
		ops := map[string]result.OpInterval{}
		for k, op := range []string{"read", "update"} {
			h := result.NewHist()
			for v := range 50 * (k + 1) {
				if err := h.RecordValue(int64(100 + v*(i+1))); err != nil {
					t.Fatal(err)
				}
			}
			enc, err := result.EncodeHist(h)
			if err != nil {
				t.Fatal(err)
			}
			ops[op] = result.OpInterval{Count: h.TotalCount(), Hist: enc, Errors: map[string]int64{"timeout": int64(k)}}
		}
		r.Intervals = append(r.Intervals, result.Interval{Start: float64(i), End: float64(i + 1), Ops: ops})
	}
	return r
}

// The logs read back with HdrHistogram's own log reader give exactly the
// result file's histograms, second by second.
func TestHDRLogsReadBack(t *testing.T) {
	run := sampleRun(t)
	dir := t.TempDir()
	files, err := HDRLogs(run, dir)
	if err != nil || len(files) != 2 {
		t.Fatalf("files %v, %v", files, err)
	}
	for fi, op := range []string{"read", "update"} {
		b, err := os.ReadFile(files[fi])
		if err != nil {
			t.Fatal(err)
		}
		rd := hdrhistogram.NewHistogramLogReader(bytes.NewReader(b))
		for i, iv := range run.Intervals {
			got, err := rd.NextIntervalHistogram()
			if err != nil || got == nil {
				t.Fatalf("%s interval %d: %v", op, i, err)
			}
			want, _ := result.DecodeHist(iv.Ops[op].Hist)
			if got.TotalCount() != want.TotalCount() || got.ValueAtQuantile(99) != want.ValueAtQuantile(99) || got.Max() != want.Max() {
				t.Errorf("%s interval %d: count %d p99 %d, want %d %d", op, i, got.TotalCount(), got.ValueAtQuantile(99), want.TotalCount(), want.ValueAtQuantile(99))
			}
			if got.Tag() != op {
				t.Errorf("tag %q, want %q", got.Tag(), op)
			}
			if wantStart := run.Header.Started.UnixMilli() + int64(iv.Start*1000); got.StartTimeMs() != wantStart {
				t.Errorf("start %d, want %d", got.StartTimeMs(), wantStart)
			}
		}
		if h, err := rd.NextIntervalHistogram(); h != nil || err != nil {
			t.Errorf("%s: more than %d intervals (%v)", op, len(run.Intervals), err)
		}
	}
}

func TestSummaryCSVAndJSON(t *testing.T) {
	run := sampleRun(t)
	var b bytes.Buffer
	if err := SummaryCSV(&b, run); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(rows) != 3 || len(rows[0]) != len(CSVHeader) {
		t.Fatalf("csv %v, %v", rows, err)
	}
	if rows[2][2] != "update" || rows[2][3] != "500" || rows[2][4] != "5" {
		t.Errorf("update row %v: want 500 operations and 5 errors", rows[2])
	}
	b.Reset()
	if err := SummaryJSON(&b, run); err != nil {
		t.Fatal(err)
	}
	var js JSONSummary
	if err := json.Unmarshal(b.Bytes(), &js); err != nil {
		t.Fatal(err)
	}
	if js.Summary.Ops["read"].Count != 250 || js.Workload != "wiki" {
		t.Errorf("json %+v", js)
	}
}

// hlogTimes reads a log's header times and its intervals' absolute starts
// the way HdrHistogram's Java and Python readers do: "#[StartTime: " and
// "#[BaseTime: " followed by seconds since the epoch (fractional allowed)
// and a space; each interval line "[Tag=T,]start,length,max,payload" with
// start relative to the base time. Times are returned in milliseconds,
// rounded (the file holds three decimals).
func hlogTimes(t *testing.T, text string) (start, base int64, intervals []int64) {
	t.Helper()
	reStart := regexp.MustCompile(`^#\[StartTime: *([\d.]*) `)
	reBase := regexp.MustCompile(`^#\[BaseTime: *([\d.]*) `)
	reInterval := regexp.MustCompile(`^([\d.]*),([\d.]*),([\d.]*),(.*)$`)
	ms := func(s string) int64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		return int64(math.Round(v * 1000))
	}
	start, base = -1, -1
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if m := reStart.FindStringSubmatch(line); m != nil {
			start = ms(m[1])
			continue
		}
		if m := reBase.FindStringSubmatch(line); m != nil {
			base = ms(m[1])
			continue
		}
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, `"`) {
			continue
		}
		if i := strings.Index(line, ","); strings.HasPrefix(line, "Tag=") && i > 0 {
			line = line[i+1:]
		}
		m := reInterval.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("line %q is not an interval", line)
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		intervals = append(intervals, int64(math.Round(v*1000))+base)
	}
	if start < 0 || base < 0 {
		t.Fatalf("no StartTime or BaseTime line in\n%s", text)
	}
	return start, base, intervals
}

// StartTime and BaseTime are the run's start to the millisecond (the
// library writes whole seconds, up to a second early), and every interval's
// absolute start read back is the result file's, to the millisecond.
func TestHDRLogTimesToTheMillisecond(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		started time.Time
	}{
		{"whole second", time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC)},
		{"123 ms", time.Date(2025, 11, 27, 20, 0, 0, 123_456_789, time.UTC)},
		{"999 ms", time.Date(2026, 11, 27, 20, 0, 0, 999_000_000, time.UTC)},
		{"1 ms, not UTC", time.Date(2026, 1, 2, 3, 4, 5, 1_000_000, time.FixedZone("x", 5*3600))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := sampleRun(t)
			run.Header.Started = tc.started
			files, err := HDRLogs(run, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			want := tc.started.UnixMilli()
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				start, base, ivs := hlogTimes(t, string(b))
				if start != want || base != want {
					t.Errorf("%s: StartTime %d ms, BaseTime %d ms, want the run's start %d ms", f, start, base, want)
				}
				if len(ivs) != len(run.Intervals) {
					t.Fatalf("%s: %d intervals, want %d", f, len(ivs), len(run.Intervals))
				}
				for i, iv := range run.Intervals {
					if w := want + int64(iv.Start*1000); ivs[i] != w {
						t.Errorf("%s interval %d starts at %d ms, want %d", f, i, ivs[i], w)
					}
				}
				// The library's own reader agrees (its float arithmetic
				// may truncate by one millisecond).
				rd := hdrhistogram.NewHistogramLogReader(bytes.NewReader(b))
				h, err := rd.NextIntervalHistogram()
				if err != nil || h == nil {
					t.Fatalf("library reader: %v", err)
				}
				if d := h.StartTimeMs() - want; d < -1 || d > 0 {
					t.Errorf("library reader: first interval at %d ms, want %d", h.StartTimeMs(), want)
				}
			}
		})
	}
}
