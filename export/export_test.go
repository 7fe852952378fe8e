package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
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
