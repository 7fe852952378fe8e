package main

import (
	"bytes"
	"strings"
	"testing"
)

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
