package result_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/result"
)

func interval(t *testing.T, start float64, warm bool, values ...int64) result.Interval {
	t.Helper()
	h := result.NewHist()
	for _, v := range values {
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
	}
	enc, err := result.EncodeHist(h)
	if err != nil {
		t.Fatal(err)
	}
	return result.Interval{Start: start, End: start + 1, Warmup: warm, Ops: map[string]result.OpInterval{
		"get": {Count: int64(len(values)), Hist: enc, Errors: map[string]int64{"timeout": 1}},
	}}
}

func header() result.Header {
	return result.Header{
		Version: "test", Workload: "w", Adapter: "sqlite", DSN: "sqlite:///x.db",
		Database: result.Database{Name: "sqlite", Version: "3"}, Options: map[string]any{"clients": 2.0},
		Seed: 7, Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Operations: []string{"get"},
		Machine: result.Machine{CPUModel: "cpu", Cores: 2},
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := result.Create(dir, header())
	if err != nil {
		t.Fatal(err)
	}
	ivs := []result.Interval{interval(t, 0, true, 5000), interval(t, 1, false, 100, 200), interval(t, 2, false, 300)}
	for _, iv := range ivs {
		if err := w.Interval(iv); err != nil {
			t.Fatal(err)
		}
	}
	ev := result.Event{At: 1.5, Name: "kill", Detail: "node 2"}
	if err := w.Event(ev); err != nil {
		t.Fatal(err)
	}
	pt := result.Point{Series: "request-set", X: 3, Y: 1.5, SD: 0.2, N: 10, Labels: map[string]string{"set": "1"}}
	if err := w.Point(pt); err != nil {
		t.Fatal(err)
	}
	sum := result.Summary{DurationSeconds: 2, Ops: map[string]result.OpSummary{"get": {Count: 3}}, Extra: map[string]float64{"x": 1},
		Client: &result.ClientCost{CPUUserSeconds: 1.5, CPUSysSeconds: 0.25, WallSeconds: 3, CPUs: 2, MaxRSSBytes: 40 << 20, PeakGoroutines: 12, Clients: 2}}
	if err := w.Summary(sum); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	run, err := result.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(run.Header, header()) {
		t.Fatalf("header changed:\n%+v\n%+v", run.Header, header())
	}
	if !reflect.DeepEqual(run.Intervals, ivs) || !reflect.DeepEqual(run.Events, []result.Event{ev}) || !reflect.DeepEqual(run.Points, []result.Point{pt}) || !reflect.DeepEqual(*run.Summary, sum) {
		t.Fatal("intervals, events or summary changed in the round trip")
	}
	got, err := run.Summarize()
	if err != nil {
		t.Fatal(err)
	}
	g := got.Ops["get"]
	// Warm-up (5000µs, one timeout) excluded.
	if g.Count != 3 || g.MaxUS >= 5000 || g.Errors["timeout"] != 2 || got.DurationSeconds != 2 || g.OpsPerSec != 1.5 {
		t.Fatalf("summary %+v duration %g", g, got.DurationSeconds)
	}
	if g.P50US < 199 || g.P50US > 201 {
		t.Fatalf("p50 %d, want 200", g.P50US)
	}
	if got.Client == nil || *got.Client != *sum.Client {
		t.Fatalf("client cost %+v, want %+v", got.Client, sum.Client)
	}
	raw, err := os.ReadFile(filepath.Join(dir, result.FileName))
	if err != nil || !strings.Contains(string(raw), `"max_rss_bytes":41943040`) || !strings.Contains(string(raw), `"cpu_user_seconds":1.5`) {
		t.Fatalf("the result file does not name the client's cost (%v)", err)
	}
}

// A summary written before the client's cost was recorded still reads.
func TestReadSummaryWithoutClientCost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := result.Create(dir, header())
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	f, err := os.OpenFile(filepath.Join(dir, result.FileName), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"kind":"summary","summary":{"duration_seconds":2,"ops":{"get":{"count":3,"ops_per_sec":1.5}}}}` + "\n")
	f.Close()
	run, err := result.Read(dir)
	if err != nil || run.Summary == nil || run.Summary.Client != nil || run.Summary.Ops["get"].Count != 3 {
		t.Fatalf("old summary: %v %+v", err, run.Summary)
	}
}

func TestClientCostShareAndWarning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		c     result.ClientCost
		share float64
	}{
		{"idle", result.ClientCost{CPUUserSeconds: 1, WallSeconds: 10, CPUs: 2}, 0.05},
		{"busy", result.ClientCost{CPUUserSeconds: 14, CPUSysSeconds: 3, WallSeconds: 10, CPUs: 2, Busy: true}, 0.85},
		{"unknown", result.ClientCost{CPUUserSeconds: 1}, 0},
	} {
		if got := tc.c.CPUShare(); got < tc.share-1e-9 || got > tc.share+1e-9 {
			t.Errorf("%s: share %g, want %g", tc.name, got, tc.share)
		}
		if w := tc.c.Warning(); (w != "") != tc.c.Busy || (tc.c.Busy && !strings.Contains(w, "85 %")) {
			t.Errorf("%s: warning %q", tc.name, w)
		}
	}
}

func TestHarnessOnly(t *testing.T) {
	t.Parallel()
	h := header()
	if h.HarnessOnly() {
		t.Fatal("a sqlite run is not harness only")
	}
	h.Adapter = "null"
	if !h.HarnessOnly() {
		t.Fatal("a null run is harness only")
	}
	for _, tc := range []struct {
		opts map[string]any
		want int
	}{
		{map[string]any{"clients": 2.0}, 2}, {map[string]any{"threads": 6}, 6}, {map[string]any{"sources": int64(8)}, 8}, {nil, 0},
	} {
		h.Options = tc.opts
		if got := h.Clients(); got != tc.want {
			t.Errorf("Clients() of %v = %d, want %d", tc.opts, got, tc.want)
		}
	}
}

// A run killed mid-write leaves a partial last line: everything before it
// must still read.
func TestReadKilledRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := result.Create(dir, header())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Interval(interval(t, 0, false, 100)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	f, err := os.OpenFile(filepath.Join(dir, result.FileName), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"kind":"interval","interval":{"start":1,"en`)
	f.Close()
	run, err := result.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !run.Truncated || len(run.Intervals) != 1 || run.Summary != nil {
		t.Fatalf("truncated=%v intervals=%d summary=%v", run.Truncated, len(run.Intervals), run.Summary)
	}
}

func TestReadRejectsNonResult(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, result.FileName), []byte("{\"kind\":\"interval\",\"interval\":{}}\n"), 0o644)
	if _, err := result.Read(dir); err == nil {
		t.Fatal("a file without header must be rejected")
	}
	if _, err := result.Read(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing directory must be an error")
	}
}

// Time without service from the intervals: seconds with no success, the
// longest stretch, warm-up and drain left out, empty seconds counted only
// beside seconds with failures.
func TestUnavailable(t *testing.T) {
	t.Parallel()
	ok := map[string]result.OpInterval{"read": {Count: 5}}
	failed := map[string]result.OpInterval{"read": {Errors: map[string]int64{"connection refused": 3}}}
	mixed := map[string]result.OpInterval{"read": {Count: 1, Errors: map[string]int64{"timeout": 1}}}
	empty := map[string]result.OpInterval{}
	ivs := func(ops ...map[string]result.OpInterval) []result.Interval {
		out := make([]result.Interval, len(ops))
		for i, o := range ops {
			out[i] = result.Interval{Start: float64(i), End: float64(i + 1), Ops: o}
		}
		return out
	}
	warm := ivs(failed, ok)
	warm[0].Warmup = true
	drain := ivs(ok, failed)
	drain[1].Drain = true
	for _, tc := range []struct {
		name          string
		ivs           []result.Interval
		total, longst float64
	}{
		{"always served", ivs(ok, ok, mixed), 0, 0},
		{"two outages", ivs(ok, failed, failed, mixed, failed, ok), 3, 2},
		{"hung, then failing", ivs(ok, empty, empty, failed, ok), 3, 3},
		{"failing, then hung to the end", ivs(ok, failed, empty, empty), 3, 3},
		{"idle seconds alone", ivs(ok, empty, ok, empty), 0, 0},
		{"warm-up left out", warm, 0, 0},
		{"drain left out", drain, 0, 0},
	} {
		run := &result.Run{Intervals: tc.ivs}
		total, longest := run.Unavailable()
		if total != tc.total || longest != tc.longst {
			t.Errorf("%s: Unavailable() = %v, %v; want %v, %v", tc.name, total, longest, tc.total, tc.longst)
		}
	}
}

// What a kill can leave before any measurement: no result file in the run
// directory, an empty one, a cut-off header. Each is refused with a
// message that says the run is incomplete, not that the file is foreign.
func TestReadIncompleteRefusedClearly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, content string
		write         bool
	}{
		{"no result file", "", false},
		{"empty", "", true},
		{"header cut off", `{"kind":"header","header":{"fieldbench_ver`, true},
	} {
		dir := t.TempDir()
		if tc.write {
			if err := os.WriteFile(filepath.Join(dir, result.FileName), []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, err := result.Read(dir)
		if err == nil || !strings.Contains(err.Error(), "incomplete") {
			t.Errorf("%s: %v; want an error saying the run is incomplete", tc.name, err)
		}
	}
	// A foreign file is still called foreign.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, result.FileName), []byte("{\"kind\":\"summary\",\"summary\":{}}\n"), 0o644)
	if _, err := result.Read(dir); err == nil || !strings.Contains(err.Error(), "not a fieldbench result") {
		t.Errorf("file without a header: %v", err)
	}
}

// damage rewrites the result file in dir line by line: edit gets each
// line (1-based, without its newline) and returns what to write instead
// (the file ends without a newline when last is cut).
func damage(t *testing.T, dir string, edit func(n int, line string) string, cut bool) string {
	t.Helper()
	path := filepath.Join(dir, result.FileName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for i := range lines {
		lines[i] = edit(i+1, lines[i])
	}
	out := strings.Join(lines, "\n")
	if !cut {
		out += "\n"
	}
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A damaged result file is read as far as it goes: a garbage line in the
// middle, a line of an unknown kind, a last line cut off are each skipped
// and named as FILE:LINE in Warnings; the rest of the run is there. A file
// whose header is damaged is refused, saying so.
func TestReadDamaged(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		edit      func(n int, line string) string
		cut       bool
		intervals int
		skipped   []int
		truncated bool
		err       string
	}{
		{name: "intact", edit: func(_ int, l string) string { return l }, intervals: 4},
		{name: "garbage in the middle", edit: func(n int, l string) string {
			if n == 3 {
				return "x\x00garbage{"
			}
			return l
		}, intervals: 3, skipped: []int{3}},
		{name: "half a line in the middle", edit: func(n int, l string) string {
			if n == 2 {
				return l[:len(l)/2]
			}
			return l
		}, intervals: 3, skipped: []int{2}},
		{name: "unknown kind", edit: func(n int, l string) string {
			if n == 4 {
				return `{"kind":"bogus"}`
			}
			return l
		}, intervals: 3, skipped: []int{4}},
		{name: "last line cut off", edit: func(n int, l string) string {
			if n == 5 {
				return l[:10]
			}
			return l
		}, cut: true, intervals: 3, skipped: []int{5}, truncated: true},
		{name: "garbage and cut off", edit: func(n int, l string) string {
			switch n {
			case 2:
				return "}"
			case 5:
				return l[:10]
			}
			return l
		}, cut: true, intervals: 2, skipped: []int{2, 5}, truncated: true},
		{name: "header damaged", edit: func(n int, l string) string {
			if n == 1 {
				return l[:20]
			}
			return l
		}, err: "line 1 is no header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			w, err := result.Create(dir, header())
			if err != nil {
				t.Fatal(err)
			}
			for i := range 4 {
				if err := w.Interval(interval(t, float64(i), false, 100)); err != nil {
					t.Fatal(err)
				}
			}
			w.Close()
			path := damage(t, dir, tc.edit, tc.cut)
			run, err := result.Read(dir)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(run.Intervals) != tc.intervals || run.Truncated != tc.truncated || run.Header.Workload != "w" {
				t.Errorf("intervals %d truncated %v, want %d %v", len(run.Intervals), run.Truncated, tc.intervals, tc.truncated)
			}
			var got []int
			for _, s := range run.Skipped {
				got = append(got, s.Line)
			}
			if !reflect.DeepEqual(got, tc.skipped) {
				t.Errorf("skipped lines %v, want %v", got, tc.skipped)
			}
			warns := run.Warnings()
			if len(warns) != len(tc.skipped) {
				t.Fatalf("warnings %q for skipped lines %v", warns, tc.skipped)
			}
			for i, n := range tc.skipped {
				if want := path + ":" + strconv.Itoa(n) + ":"; !strings.HasPrefix(warns[i], want) {
					t.Errorf("warning %q does not name %s", warns[i], want)
				}
			}
			if _, err := run.Summarize(); err != nil {
				t.Errorf("the rest does not summarize: %v", err)
			}
		})
	}
}

// A file of garbage after its header is one bounded message, not a line
// per damaged line.
func TestWarningsBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"kind":"header","header":{"workload":"w"}}` + "\n")
	for range 500 {
		b.WriteString("garbage\n")
	}
	run, err := result.Decode(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	w := run.Warnings()
	if len(run.Skipped) != 500 || len(w) != 11 || !strings.Contains(w[10], "490 more damaged lines") {
		t.Errorf("%d skipped, warnings %q", len(run.Skipped), w)
	}
}

// Two runs' files joined into one are refused at the second header, with
// its line: read as one run, the second run's intervals were taken for the
// first's without a word (issue 40, finding 10).
func TestSecondHeaderRefused(t *testing.T) {
	t.Parallel()
	one := `{"kind":"header","header":{"workload":"w"}}` + "\n" + `{"kind":"summary","summary":{}}` + "\n"
	_, err := result.Decode(strings.NewReader(one + one))
	if !errors.Is(err, result.ErrSecondHeader) || !strings.Contains(err.Error(), "line 3 ") {
		t.Errorf("two files joined: %v, want ErrSecondHeader at line 3", err)
	}
	// A header after garbage is still the first.
	if _, err := result.Decode(strings.NewReader("garbage\n" + one)); err != nil {
		t.Errorf("one header after a damaged line: %v", err)
	}
}

// Decoding stops with the context's error once it is done, in the middle
// of a file (report on Ctrl-C, issue 40, finding 10), not at its end.
func TestDecodeContextStops(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := &linesReader{header: `{"kind":"header","header":{"workload":"w"}}` + "\n", line: `{"kind":"event","event":{"name":"x"}}` + "\n", n: 1_000_000, after: 10, cancel: cancel}
	_, err := result.DecodeContext(ctx, r)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled while decoding: %v, want context.Canceled", err)
	}
	if r.reads > r.after+2 {
		t.Errorf("read %d times after the cancel at read %d", r.reads, r.after)
	}
}

// linesReader yields header then n lines, one per Read, and calls cancel
// at Read number after.
type linesReader struct {
	header, line string
	n, after     int
	reads        int
	cancel       func()
}

func (l *linesReader) Read(p []byte) (int, error) {
	l.reads++
	if l.reads == l.after {
		l.cancel()
	}
	if l.reads == 1 {
		return copy(p, l.header), nil
	}
	if l.reads > l.n {
		return 0, io.EOF
	}
	return copy(p, l.line), nil
}
