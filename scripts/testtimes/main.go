// Command testtimes reads the output of `go test -json` (what
// scripts/test.sh records in FIELDBENCH_TEST_JSON) and prints where the
// test suite's time goes: each package's time, the slowest tests with
// what they waited on, and the number of tests and subtests that ran,
// passed, failed and were skipped — the count that must not fall when the
// suite is made faster (docs/testing.md).
//
//	go run ./scripts/testtimes [-n 25] [-md] FILE.json...
//	go test -json ./... | testtimes -stream FILE.json
//
// With -stream it is the filter scripts/test.sh runs go test through: it
// appends every line to FILE.json and prints what a plain `go test` would
// (each package's result, and the output of each test that failed), so
// the record costs the reader of a CI log nothing.
//
// "What it waits on" is read from the lines a test logs when it starts a
// server: cluster/clustertest prints "waits on: ENGINE…" (SharedCluster and
// OwnCluster); a test without such a line waited on nothing fieldbench
// started, or on the CLI starting one (its name says which).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
	// Time is when the event happened. A test whose subtests are parallel
	// reports as its Elapsed only its own function's time (they run after
	// it returned), so its wall time is read from its run and end events.
	Time time.Time
}

// test is what the report keeps of one test or subtest.
type test struct {
	pkg, name string
	action    string // pass, fail or skip
	elapsed   float64
	started   time.Time // its run event's, or its last cont's
	waits     []string
}

func main() {
	n := flag.Int("n", 25, "how many of the slowest tests to print")
	md := flag.Bool("md", false, "print Markdown tables (for docs/testing.md)")
	stream := flag.String("stream", "", "read go test -json from standard input, append it to `FILE` and print what plain go test would")
	prefix := flag.String("prefix", "", "with -stream, begin every printed line with `TEXT` (which of several streams printed it)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: testtimes [-n 25] [-md] FILE.json (go test -json output)")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *stream != "" {
		var w io.Writer = os.Stdout
		if *prefix != "" {
			w = &prefixer{w: os.Stdout, prefix: *prefix}
		}
		if err := filter(os.Stdin, w, *stream); err != nil {
			fmt.Fprintln(os.Stderr, "testtimes:", err)
			os.Exit(1)
		}
		return
	}
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var files []io.Reader
	for _, name := range flag.Args() {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testtimes:", err)
			os.Exit(2)
		}
		defer f.Close()
		files = append(files, f)
	}
	s, err := read(io.MultiReader(files...))
	if err != nil {
		fmt.Fprintln(os.Stderr, "testtimes:", err)
		os.Exit(1)
	}
	s.print(os.Stdout, *n, *md)
}

// prefixer begins every line written through it with prefix; each Write
// goes out whole, in one write of the lines it holds, so lines of several
// streams on one terminal never mix within a line.
type prefixer struct {
	w      io.Writer
	prefix string
	mid    bool // the last write ended inside a line
}

func (p *prefixer) Write(b []byte) (int, error) {
	var out []byte
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line == "" {
			continue
		}
		if !p.mid {
			out = append(out, p.prefix...)
		}
		out = append(out, line...)
		p.mid = !strings.HasSuffix(line, "\n")
	}
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// filter copies go test -json from r to the file record (appended, a line
// at a time) and
// writes to w what plain go test prints: every line that is not JSON (go
// itself: downloads, build errors), each package's own output but its
// bare PASS line, build output, and the whole output of a test when it
// fails — a passing or skipped test's is dropped as go test drops it.
func filter(r io.Reader, w io.Writer, record string) error {
	f, err := os.OpenFile(record, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	held := map[string][]string{} // package + test -> output so far
	var buf []byte
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		// One write a line, appended: scripts/test.sh runs two of these
		// filters into one record, and a line must never be split.
		buf = append(append(buf[:0], line...), '\n')
		if _, err := f.Write(buf); err != nil {
			return err
		}
		var e struct {
			event
			ImportPath string
		}
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil || (e.Package == "" && e.ImportPath == "") {
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		if e.Test == "" {
			if (e.Action == "output" || e.Action == "build-output") && e.Output != "PASS\n" {
				fmt.Fprint(w, e.Output)
			}
			continue
		}
		key := e.Package + "\x00" + e.Test
		switch e.Action {
		case "output":
			held[key] = append(held[key], e.Output)
		case "fail":
			fmt.Fprint(w, strings.Join(held[key], ""))
			delete(held, key)
		case "pass", "skip":
			delete(held, key)
		}
	}
	return sc.Err()
}

// suite is the whole run: packages with their time and every test.
type suite struct {
	pkgs  map[string]float64 // package -> elapsed, for packages that ended
	fails map[string]bool    // packages that failed
	tests map[string]*test   // package + "\x00" + test name
	order []string
}

// read parses go test -json output. Lines that are not JSON (what
// scripts/test.sh prints around go test) are ignored.
func read(r io.Reader) (*suite, error) {
	s := &suite{pkgs: map[string]float64{}, fails: map[string]bool{}, tests: map[string]*test{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var e event
		if json.Unmarshal(line, &e) != nil || e.Package == "" {
			continue
		}
		if e.Test == "" {
			switch e.Action {
			case "pass", "fail", "skip":
				s.pkgs[e.Package] = e.Elapsed
				s.fails[e.Package] = e.Action == "fail"
			}
			continue
		}
		key := e.Package + "\x00" + e.Test
		t := s.tests[key]
		if t == nil {
			t = &test{pkg: e.Package, name: e.Test}
			s.tests[key] = t
			s.order = append(s.order, key)
		}
		switch e.Action {
		case "run", "cont":
			// A parallel test pauses at t.Parallel until the serial
			// tests are done: its time runs from its last start.
			t.started = e.Time
		case "pass", "fail", "skip":
			t.action, t.elapsed = e.Action, e.Elapsed
			if !t.started.IsZero() && !e.Time.IsZero() {
				t.elapsed = max(t.elapsed, e.Time.Sub(t.started).Seconds())
			}
		case "output":
			if i := strings.Index(e.Output, "waits on: "); i >= 0 {
				t.waits = append(t.waits, strings.TrimSpace(e.Output[i+len("waits on: "):]))
			}
		}
	}
	return s, sc.Err()
}

func short(pkg string) string { return strings.TrimPrefix(pkg, "github.com/fieldbench/fieldbench/") }

func (s *suite) print(w io.Writer, n int, md bool) {
	var tops, subs [3]int // pass, fail, skip
	idx := map[string]int{"pass": 0, "fail": 1, "skip": 2}
	var all []*test
	for _, k := range s.order {
		t := s.tests[k]
		i, ok := idx[t.action]
		if !ok {
			continue // started, never ended: the package's timeout or crash
		}
		if strings.Contains(t.name, "/") {
			subs[i]++
		} else {
			tops[i]++
			all = append(all, t)
		}
	}
	var total float64
	pkgs := make([]string, 0, len(s.pkgs))
	for p, e := range s.pkgs {
		pkgs = append(pkgs, p)
		total += e
	}
	sort.Slice(pkgs, func(i, k int) bool { return s.pkgs[pkgs[i]] > s.pkgs[pkgs[k]] })
	fmt.Fprintf(w, "packages: %d, %.0f s in all (the sum of each package's own time)\n", len(pkgs), total)
	fmt.Fprintf(w, "tests: %d (%d passed, %d failed, %d skipped); subtests: %d (%d passed, %d failed, %d skipped)\n\n",
		tops[0]+tops[1]+tops[2], tops[0], tops[1], tops[2], subs[0]+subs[1]+subs[2], subs[0], subs[1], subs[2])

	if md {
		fmt.Fprintln(w, "| package | s |\n|---|---:|")
	}
	for i, p := range pkgs {
		if i == n {
			break
		}
		mark := ""
		if s.fails[p] {
			mark = " FAIL"
		}
		if md {
			fmt.Fprintf(w, "| `%s`%s | %.0f |\n", short(p), mark, s.pkgs[p])
		} else {
			fmt.Fprintf(w, "%8.1f s  %s%s\n", s.pkgs[p], short(p), mark)
		}
	}
	fmt.Fprintln(w)

	sort.Slice(all, func(i, k int) bool { return all[i].elapsed > all[k].elapsed })
	if md {
		fmt.Fprintln(w, "| test | package | s | waits on |\n|---|---|---:|---|")
	}
	for i, t := range all {
		if i == n {
			break
		}
		waits := strings.Join(dedup(t.waits), "; ")
		if waits == "" {
			waits = "—"
		}
		if md {
			fmt.Fprintf(w, "| `%s` | `%s` | %.0f | %s |\n", t.name, short(t.pkg), t.elapsed, waits)
		} else {
			fmt.Fprintf(w, "%8.1f s  %s  %s  [%s]\n", t.elapsed, short(t.pkg), t.name, waits)
		}
	}
}

func dedup(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
