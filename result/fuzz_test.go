package result_test

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/fieldbench/fieldbench/result"
)

// realResults are result files fieldbench wrote (the report's family
// fixtures): the seeds of the fuzz targets below.
func realResults(f *testing.F) [][]byte {
	f.Helper()
	files, err := filepath.Glob("../report/testdata/families/*.jsonl")
	if err != nil || len(files) == 0 {
		f.Fatalf("no result files to seed from: %v", err)
	}
	var out [][]byte
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// extremeResult is a result file with the extreme figures a hostile or
// broken file may hold.
const extremeResult = `{"kind":"header","header":{"workload":"wiki","adapter":"sqlite","started":"2026-01-01T00:00:00Z","operations":["get"],"warmup_seconds":1e300}}
{"kind":"interval","interval":{"start":-1e16,"end":1.7e308,"ops":{"get":{"count":9223372036854775807,"errors":{"x":-5}}}}}
{"kind":"point","point":{"series":"s","x":-1e16,"y":1e300,"sd":-1e308,"lo":5e-324,"hi":-0}}
{"kind":"event","event":{"at":1e308,"name":"kill"}}
`

// FuzzDecode reads any bytes as a result file: an answer (a run or an
// error), never a panic, and a run that reads is summarized.
func FuzzDecode(f *testing.F) {
	for _, b := range realResults(f) {
		f.Add(b)
	}
	f.Add([]byte(extremeResult))
	f.Add([]byte(`{"kind":"header","header":{}}` + "\n" + `{"kind":"interval","interval":{"ops":{"get":{"hist":"HISTFAAAAB94nJNpmSzMwMDAzgABzFCaEUzLMNgzQARsHwAAtm0EJQ=="}}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		run, err := result.Decode(bytes.NewReader(b))
		if err != nil {
			return
		}
		if _, err := run.Merged(true); err != nil {
			return
		}
		_, _ = run.Summarize()
	})
}

var histRE = regexp.MustCompile(`"hist":"([^"]+)"`)

// FuzzDecodeHist decodes any string as a histogram (the "hist" of a result
// line): an error or a histogram that holds what it says, never a panic or
// an allocation beyond bounds.
func FuzzDecodeHist(f *testing.F) {
	for _, b := range realResults(f) {
		for _, m := range histRE.FindAllSubmatch(b, 20) {
			f.Add(string(m[1]))
		}
	}
	h := result.NewHist()
	for _, v := range []int64{1, 100, 5000, result.HighestUS} {
		if err := h.RecordValue(v); err != nil {
			f.Fatal(err)
		}
	}
	s, err := result.EncodeHist(h)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(s)
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := result.DecodeHist(s)
		if err != nil {
			return
		}
		if n := h.TotalCount(); n < 0 {
			t.Errorf("decoded a histogram with %d values", n)
		}
		if q := h.ValueAtQuantile(99); q < 0 || float64(q) > math.MaxInt64/2 {
			t.Errorf("p99 %d", q)
		}
		if _, err := result.EncodeHist(h); err != nil {
			t.Errorf("decoded histogram does not encode again: %v", err)
		}
	})
}
