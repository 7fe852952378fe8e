package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestParallelSubtestsWallTime: a test whose subtests are parallel
// reports as its Elapsed only its own function's second; its time is its
// wall time, from its run event (or its last cont) to its end.
func TestParallelSubtestsWallTime(t *testing.T) {
	in := `{"Time":"2026-12-02T08:00:00Z","Action":"run","Package":"p/a","Test":"TestP"}
{"Time":"2026-12-02T08:00:01Z","Action":"run","Package":"p/a","Test":"TestP/x"}
{"Time":"2026-12-02T08:01:40Z","Action":"pass","Package":"p/a","Test":"TestP/x","Elapsed":99}
{"Time":"2026-12-02T08:01:40Z","Action":"pass","Package":"p/a","Test":"TestP","Elapsed":1}
{"Time":"2026-12-02T08:00:00Z","Action":"run","Package":"p/a","Test":"TestQ"}
{"Time":"2026-12-02T08:00:00Z","Action":"pause","Package":"p/a","Test":"TestQ"}
{"Time":"2026-12-02T08:10:00Z","Action":"cont","Package":"p/a","Test":"TestQ"}
{"Time":"2026-12-02T08:10:07Z","Action":"pass","Package":"p/a","Test":"TestQ","Elapsed":7}
`
	s, err := read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	s.print(&out, 25, false)
	got := out.String()
	if !strings.Contains(got, "100.0 s  p/a  TestP  ") {
		t.Errorf("the parallel parent's time is not its wall time:\n%s", got)
	}
	// A parallel test's time starts when it continues, not while it
	// waited for the serial tests.
	if !strings.Contains(got, "7.0 s  p/a  TestQ  ") {
		t.Errorf("the paused test's time counts its wait:\n%s", got)
	}
}

// TestRead counts tests and subtests by outcome, keeps package times, and
// attributes "waits on:" lines to the test that logged them.
func TestRead(t *testing.T) {
	in := `install-servers: all present
{"Action":"run","Package":"p/a","Test":"TestX"}
{"Action":"output","Package":"p/a","Test":"TestX","Output":"    shared.go:40: waits on: redis, 3 node(s) (started in 2.0 s)\n"}
{"Action":"run","Package":"p/a","Test":"TestX/sub"}
{"Action":"pass","Package":"p/a","Test":"TestX/sub","Elapsed":1}
{"Action":"pass","Package":"p/a","Test":"TestX","Elapsed":9.5}
{"Action":"skip","Package":"p/a","Test":"TestY","Elapsed":0}
{"Action":"fail","Package":"p/a","Test":"TestZ","Elapsed":3}
{"Action":"run","Package":"p/a","Test":"TestCut"}
{"Action":"fail","Package":"p/a","Elapsed":12.5}
{"Action":"pass","Package":"p/b","Elapsed":1.5}
fuzz FuzzX (./x), 10x
`
	s, err := read(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	s.print(&out, 25, false)
	got := out.String()
	for _, want := range []string{
		"packages: 2, 14 s in all",
		"tests: 3 (1 passed, 1 failed, 1 skipped); subtests: 1 (1 passed, 0 failed, 0 skipped)",
		"12.5 s  p/a FAIL",
		"9.5 s  p/a  TestX  [redis, 3 node(s) (started in 2.0 s)]",
		"3.0 s  p/a  TestZ  [—]",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "TestCut") {
		t.Errorf("a test that never ended is listed:\n%s", got)
	}
}

// TestFilter prints what plain go test would — package lines, non-JSON
// lines, a failed test's output — drops a passing test's output and the
// bare PASS, and records every line.
func TestFilter(t *testing.T) {
	in := `go: downloading example.com/x v1.0.0
{"Action":"run","Package":"p","Test":"TestOK"}
{"Action":"output","Package":"p","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"output","Package":"p","Test":"TestOK","Output":"    ok_test.go:9: chatter\n"}
{"Action":"pass","Package":"p","Test":"TestOK","Elapsed":0.1}
{"Action":"output","Package":"p","Test":"TestBad","Output":"    bad_test.go:3: want 1, got 2\n"}
{"Action":"output","Package":"p","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestBad","Elapsed":0}
{"Action":"output","Package":"p","Output":"PASS\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t0.2s\n"}
{"Action":"fail","Package":"p","Elapsed":0.2}
{"ImportPath":"q [q.test]","Action":"build-output","Output":"q/x.go:1:1: syntax error\n"}
`
	rec := t.TempDir() + "/rec.json"
	var out bytes.Buffer
	if err := filter(strings.NewReader(in), &out, rec); err != nil {
		t.Fatal(err)
	}
	want := "go: downloading example.com/x v1.0.0\n" +
		"    bad_test.go:3: want 1, got 2\n--- FAIL: TestBad (0.00s)\n" +
		"FAIL\tp\t0.2s\n" +
		"q/x.go:1:1: syntax error\n"
	if out.String() != want {
		t.Errorf("printed:\n%s\nwant:\n%s", out.String(), want)
	}
	b, err := os.ReadFile(rec)
	if err != nil || string(b) != in {
		t.Errorf("recorded %q, %v; want every line", b, err)
	}
}

// TestPrefixer begins each line with the prefix, a line written in two
// pieces included, and reports every byte written.
func TestPrefixer(t *testing.T) {
	var b bytes.Buffer
	p := &prefixer{w: &b, prefix: "[x] "}
	for _, s := range []string{"one\ntwo\n", "thr", "ee\n", "\n"} {
		if n, err := p.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if want := "[x] one\n[x] two\n[x] three\n[x] \n"; b.String() != want {
		t.Errorf("wrote %q, want %q", b.String(), want)
	}
}
