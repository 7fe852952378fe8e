package history

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/result"
)

// A run is recorded once however often it is added, and its stored
// histogram gives back the run's own percentiles: a p99 recomputed from
// the history equals the p99 the run printed (its warm-up left out, as
// the run's summary leaves it out), and so does any other.
func TestAddOnceAndRecomputePercentiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTemp(t)
	f := fakeRun{started: t0, ops: []string{"post", "timeline"}, seconds: 14, warmup: 2, rate: 400, latencyUS: 2000, seed: 1}
	run := f.write(t, filepath.Join(t.TempDir(), "run"))
	rec, err := FromRun(run, "abc123")
	if err != nil {
		t.Fatal(err)
	}
	for i, wantNew := range []bool{true, false, false} {
		got, err := s.Add(ctx, []Run{rec})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].New != wantNew || got[0].ID != rec.ID {
			t.Fatalf("add %d: %+v, want new=%v", i+1, got, wantNew)
		}
	}
	// A run recorded without a commit gets the one given later, and keeps
	// it.
	bare, err := FromRun(run, "")
	if err != nil {
		t.Fatal(err)
	}
	bare.ID = "0" + bare.ID[1:]
	for _, commit := range []string{"", "def456", "later"} {
		bare.Commit = commit
		if _, err := s.Add(ctx, []Run{bare}); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := s.Run(ctx, bare.ID); err != nil || r.Commit != "def456" {
		t.Errorf("commit %q (%v), want def456", r.Commit, err)
	}
	if _, err := s.db.ExecContext(ctx, "DELETE FROM runs WHERE id = ?", bare.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, "DELETE FROM ops WHERE run_id = ?", bare.ID); err != nil {
		t.Fatal(err)
	}
	// The same file read again is the same run.
	again, err := result.Read(run.Dir)
	if err != nil {
		t.Fatal(err)
	}
	rec2, err := FromRun(again, "")
	if err != nil {
		t.Fatal(err)
	}
	if rec2.ID != rec.ID || rec2.Series != rec.Series {
		t.Fatalf("read twice: IDs %s and %s, series %s and %s", rec.ID, rec2.ID, rec.Series, rec2.Series)
	}
	if n, err := s.Count(ctx); err != nil || n != 1 {
		t.Fatalf("%d runs (%v), want 1", n, err)
	}
	runs, err := s.Runs(ctx, rec.Series)
	if err != nil || len(runs) != 1 {
		t.Fatalf("series %s: %d runs (%v)", rec.Series, len(runs), err)
	}
	got := runs[0]
	if got.Commit != "abc123" || got.Server != "sqlite" || got.ServerVersion != "3.54.1" || got.Model != "denormalized" || got.Host != "vm" || !got.Started.Equal(t0) {
		t.Errorf("stored run %+v", got)
	}
	for _, name := range []string{"post", "timeline"} {
		want := run.Summary.Ops[name]
		o, ok := got.Op(name)
		if !ok {
			t.Fatalf("no %s", name)
		}
		if o.Count != want.Count || o.P99 != want.P99US || o.P50 != want.P50US || o.Rate != want.OpsPerSec || o.Seconds != 12 {
			t.Errorf("%s: stored %+v, run's %+v", name, o, want)
		}
		lo, hi := o.Interval("p99")
		if !(lo < float64(o.P99) && float64(o.P99) < hi) {
			t.Errorf("%s: p99 %d outside its interval [%g, %g]", name, o.P99, lo, hi)
		}
		b, err := s.Histogram(ctx, got.ID, name)
		if err != nil {
			t.Fatal(err)
		}
		h, err := DecodeHist(b)
		if err != nil {
			t.Fatal(err)
		}
		if p99 := h.ValueAtQuantile(99); p99 != want.P99US {
			t.Errorf("%s: p99 recomputed from the history %d µs, the run's %d µs", name, p99, want.P99US)
		}
		if p999 := h.ValueAtQuantile(99.9); p999 != want.P999US {
			t.Errorf("%s: p99.9 recomputed %d µs, the run's %d µs", name, p999, want.P999US)
		}
		if h.TotalCount() != want.Count {
			t.Errorf("%s: histogram of %d, the run counted %d", name, h.TotalCount(), want.Count)
		}
	}
}

// A password anywhere in a result file — the DSN, an option holding a
// replica's DSN, an error kind quoting a DSN, the commit — is stored
// nowhere: not in the database file, not in its WAL. The file is written
// by hand, as an old or foreign writer would, not by result.Create
// (which redacts already).
func TestNoPasswordStored(t *testing.T) {
	t.Parallel()
	const secret = "S3CRETpw"
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := fakeRun{started: t0, ops: []string{"read"}, seconds: 3, rate: 10, latencyUS: 100, seed: 2}.run(t)
	r.Header.DSN = "postgres://bench:" + secret + "@db1:5432/fb"
	r.Header.Options["replica"] = "postgres://bench:" + secret + "@db2/fb"
	r.Header.Options["extra"] = map[string]any{"url": "redis://:" + secret + "@cache:6379"}
	r.Header.Database.Config = map[string]string{"conninfo": "host=db1 password=" + secret}
	r.Header.Cluster = &result.ClusterInfo{Engine: "postgres", Options: map[string]string{"primary": "postgres://u:" + secret + "@h/x"}}
	op := r.Summary.Ops["read"]
	op.Errors = map[string]int64{"dial postgres://bench:" + secret + "@db1: refused": 3}
	r.Summary.Ops["read"] = op
	var b bytes.Buffer
	for _, l := range []result.Line{{Kind: "header", Header: &r.Header}, {Kind: "interval", Interval: &r.Intervals[0]}, {Kind: "summary", Summary: r.Summary}} {
		j, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(j, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, result.FileName), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), secret) {
		t.Fatal("the test file holds no password to redact")
	}
	back, err := result.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := FromRun(back, "https://ci:"+secret+"@git.example/commit/1")
	if err != nil {
		t.Fatal(err)
	}
	dbDir := t.TempDir()
	s, err := Open(context.Background(), filepath.Join(dbDir, "history.db"), true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(context.Background(), []Run{rec}); err != nil {
		t.Fatal(err)
	}
	runs, err := s.Runs(context.Background(), rec.Series)
	if err != nil || len(runs) != 1 {
		t.Fatalf("%d runs (%v)", len(runs), err)
	}
	stored, _ := json.Marshal(runs[0])
	if strings.Contains(string(stored), secret) {
		t.Errorf("the stored run holds the password: %s", stored)
	}
	if !strings.Contains(string(runs[0].Header), "db1") {
		t.Errorf("the header lost more than the password: %s", runs[0].Header)
	}
	// Before closing (the WAL holds the writes) and after.
	check := func(when string) {
		entries, err := os.ReadDir(dbDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(dbDir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(data, []byte(secret)) {
				t.Errorf("%s: %s holds the password", when, e.Name())
			}
		}
	}
	check("open")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	check("closed")
}

// A history whose schema is newer than this fieldbench's is refused with
// a message that says so, and left as it was.
func TestNewerSchemaRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "history.db")
	s, err := Open(ctx, path, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, "UPDATE history_schema SET version = ?", SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = Open(ctx, path, false)
	if !errors.Is(err, ErrNewerSchema) || !strings.Contains(err.Error(), "newer fieldbench") || !strings.Contains(err.Error(), fmt.Sprintf("schema version %d", SchemaVersion()+1)) {
		t.Fatalf("opened a newer history: %v", err)
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var v int
	if err := raw.QueryRowContext(ctx, "SELECT version FROM history_schema").Scan(&v); err != nil || v != SchemaVersion()+1 {
		t.Errorf("the refused history's version is now %d (%v)", v, err)
	}
}

// A history from an older fieldbench is migrated forward, its runs kept;
// the newer one is then refused by the older code.
func TestMigratesForward(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "history.db")
	s, err := Open(ctx, path, true)
	if err != nil {
		t.Fatal(err)
	}
	rec := fakeRun{started: t0, ops: []string{"post"}, seconds: 3, rate: 10, latencyUS: 100, seed: 3}.record(t, filepath.Join(t.TempDir(), "run"))
	if _, err := s.Add(ctx, []Run{rec}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	old := migrations
	migrations = append(append([]func(*Store) []string(nil), old...), func(*Store) []string {
		return []string{"CREATE TABLE notes (run_id TEXT NOT NULL, note TEXT NOT NULL)"}
	})
	s, err = Open(ctx, path, false)
	if err != nil {
		migrations = old
		t.Fatal(err)
	}
	var v, n int
	if err := s.db.QueryRowContext(ctx, "SELECT version FROM history_schema").Scan(&v); err != nil || v != len(old)+1 {
		t.Errorf("version %d (%v), want %d", v, err, len(old)+1)
	}
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM notes").Scan(&n); err != nil {
		t.Errorf("the new table is missing: %v", err)
	}
	if c, err := s.Count(ctx); err != nil || c != 1 {
		t.Errorf("%d runs after the migration (%v), want 1", c, err)
	}
	s.Close()
	migrations = old
	if _, err := Open(ctx, path, false); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("the older code opened the migrated history: %v", err)
	}
}

// Two goroutines, each with its own connection as two processes have,
// adding 40 runs each in batches at once, lose nothing.
func TestConcurrentAddsLoseNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "history.db")
	runsDir := t.TempDir()
	var recs [2][]Run
	for w := range 2 {
		for i := range 40 {
			f := fakeRun{started: t0.Add(time.Duration(w*100+i) * time.Minute), ops: []string{"post", "timeline"}, seconds: 2, rate: 20, latencyUS: 500, seed: uint64(w*100 + i)}
			recs[w] = append(recs[w], f.record(t, filepath.Join(runsDir, fmt.Sprintf("%d-%d", w, i))))
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(ctx, path, true)
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			for i := 0; i < len(recs[w]); i += 4 {
				if _, err := s.Add(ctx, recs[w][i:i+4]); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s, err := Open(ctx, path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := s.Count(ctx); err != nil || n != 80 {
		t.Fatalf("%d runs (%v), want 80", n, err)
	}
	var ops int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM ops").Scan(&ops); err != nil || ops != 160 {
		t.Fatalf("%d operations (%v), want 160", ops, err)
	}
}

// The same with two processes (this test binary run again as a child,
// TestHelperAdd): each adds 30 runs of its own into one new file at the
// same moment, and also the 10 runs they share; 70 are there after.
func TestTwoProcessesAddingLoseNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "history.db")
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	start := time.Now().Add(2 * time.Second).UnixNano()
	for p := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperAdd$", "-test.count=1")
		cmd.Env = append(os.Environ(), "FB_HISTORY_HELPER="+path, fmt.Sprintf("FB_HISTORY_PROC=%d", p), fmt.Sprintf("FB_HISTORY_START=%d", start), "FB_HISTORY_RUNS="+dir)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, &out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, outs[i])
		}
	}
	s, err := Open(context.Background(), path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := s.Count(context.Background()); err != nil || n != 70 {
		t.Fatalf("%d runs (%v), want 70", n, err)
	}
}

// TestHelperAdd is the child of TestTwoProcessesAddingLoseNothing.
func TestHelperAdd(t *testing.T) {
	path := os.Getenv("FB_HISTORY_HELPER")
	if path == "" {
		t.Skip("the child of TestTwoProcessesAddingLoseNothing")
	}
	var p int
	var start int64
	fmt.Sscan(os.Getenv("FB_HISTORY_PROC"), &p)
	fmt.Sscan(os.Getenv("FB_HISTORY_START"), &start)
	var recs []Run
	for i := range 30 {
		f := fakeRun{started: t0.Add(time.Duration(p*1000+i) * time.Minute), ops: []string{"post"}, seconds: 2, rate: 20, latencyUS: 500, seed: uint64(p*1000 + i)}
		recs = append(recs, f.record(t, filepath.Join(os.Getenv("FB_HISTORY_RUNS"), fmt.Sprintf("p%d-%d", p, i))))
	}
	for i := range 10 { // the same runs in both processes
		f := fakeRun{started: t0.Add(time.Duration(5000+i) * time.Minute), ops: []string{"post"}, seconds: 2, rate: 20, latencyUS: 500, seed: uint64(5000 + i)}
		recs = append(recs, f.record(t, filepath.Join(t.TempDir(), fmt.Sprint(i))))
	}
	time.Sleep(time.Until(time.Unix(0, start)))
	ctx := context.Background()
	s, err := Open(ctx, path, true) // both create the file and switch it to WAL together
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < len(recs); i += 5 {
		if _, err := s.Add(ctx, recs[i:i+5]); err != nil {
			t.Fatal(err)
		}
	}
}
