package history

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/result"
)

// Runs are in one series exactly when what decides the work is equal:
// the grouping rule of docs/history.md, case by case.
func TestSeriesGrouping(t *testing.T) {
	t.Parallel()
	base := func() result.Header {
		h := result.Header{Workload: "microblog", Adapter: "postgres", Version: "0.1.0",
			Options: map[string]any{"clients": 200, "model": "denormalized", "mix": "post=1,timeline=1", "duration": "30s", "seed": 1},
			Machine: result.Machine{CPUModel: "AMD EPYC", Cores: 2, MemoryBytes: 24 << 30, Hostname: "a", Kernel: "6.1"}}
		h.Database.Name, h.Database.Version = "PostgreSQL", "15.4"
		return h
	}
	key := func(h result.Header) string { return seriesKeyOf(h).id() }
	ref := key(base())
	for _, tc := range []struct {
		name string
		edit func(h *result.Header)
		same bool
	}{
		{"another server version", func(h *result.Header) { h.Database.Version = "16.1" }, true},
		{"another host of the same class", func(h *result.Header) { h.Machine.Hostname = "b"; h.Machine.Kernel = "6.5" }, true},
		{"another fieldbench", func(h *result.Header) { h.Version = "0.2.0" }, true},
		{"a longer run", func(h *result.Header) { h.Options["duration"] = "5m" }, true},
		{"the memory a few MB off", func(h *result.Header) { h.Machine.MemoryBytes -= 50 << 20 }, true},
		{"options read back from JSON", func(h *result.Header) { h.Options["clients"] = float64(200) }, true},
		{"another model", func(h *result.Header) { h.Options["model"] = "normalized" }, false},
		{"another mix", func(h *result.Header) { h.Options["mix"] = "post=1" }, false},
		{"more clients", func(h *result.Header) { h.Options["clients"] = 400 }, false},
		{"another seed", func(h *result.Header) { h.Options["seed"] = 2 }, false},
		{"another adapter", func(h *result.Header) { h.Adapter = "mariadb" }, false},
		{"another server", func(h *result.Header) { h.Database.Name = "FerretDB" }, false},
		{"another workload", func(h *result.Header) { h.Workload = "wiki" }, false},
		{"more cores", func(h *result.Header) { h.Machine.Cores = 4 }, false},
		{"another CPU", func(h *result.Header) { h.Machine.CPUModel = "Intel Xeon" }, false},
		{"a cluster of 3", func(h *result.Header) {
			h.Cluster = &result.ClusterInfo{Engine: "postgres", Nodes: make([]result.ClusterNode, 3)}
		}, false},
		{"on a load host", func(h *result.Header) { h.Machine.LoadHost = &result.LoadHost{Name: "load1"} }, false},
		{"an experiment step", func(h *result.Header) { h.Options["experiment"] = "join"; h.Options["step"] = 2 }, false},
	} {
		h := base()
		tc.edit(&h)
		if got := key(h) == ref; got != tc.same {
			t.Errorf("%s: same series %v, want %v", tc.name, got, tc.same)
		}
	}
	if l := seriesKeyOf(base()).label(); l != "microblog denormalized on postgres" {
		t.Errorf("label %q", l)
	}
	h := base()
	h.Adapter, h.Database.Name = "mongodb", "FerretDB"
	if l := seriesKeyOf(h).label(); l != "microblog denormalized on mongodb (FerretDB)" {
		t.Errorf("a stand-in's label %q does not name it", l)
	}
}

// What changes inside a series is marked at the run it starts at.
func TestMarks(t *testing.T) {
	t.Parallel()
	runs := []Run{{ServerVersion: "15", Host: "a", Version: "1"}, {ServerVersion: "15", Host: "a", Version: "1"}, {ServerVersion: "16", Host: "b", Version: "1"}}
	m := Marks(runs)
	if len(m) != 2 || m[0].Index != 2 || m[0].String() != "server version 15 → 16" || m[1].String() != "host a → b" {
		t.Errorf("marks %+v", m)
	}
}

// Source finds the runs of every layout fieldbench writes: a run, an
// experiment's runs (one per step), a study's steps' experiments, a
// results directory of all of them; not a cluster's data, not hidden
// directories, not the history's own files.
func TestSourceFindsEveryLayout(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	want := []string{}
	mk := func(dir string) {
		f := fakeRun{started: t0, ops: []string{"read"}, seconds: 1, rate: 1, latencyUS: 10, seed: 1}
		f.write(t, filepath.Join(root, dir))
	}
	for _, d := range []string{
		"20261201-100000-microblog-sqlite",
		"20261201-110000-experiment-crash/20261201-110001-microblog-cassandra",
		"20261201-120000-experiment-join/20261201-120001-wiki-redis",
		"20261201-120000-experiment-join/20261201-120500-wiki-redis",
		"study-ingest-quick/sweep-postgres/20261201-130000-experiment-sweep/20261201-130001-ingest-sweep-postgres",
		"merged/20261201-140000-microblog-redis",
	} {
		mk(d)
		want = append(want, filepath.Join(root, d, result.FileName))
	}
	mk("20261201-110000-experiment-crash/cluster/node1") // a result file inside cluster data is not a run
	mk(".trash/20261201-150000-microblog-sqlite")
	mk("20261201-100000-microblog-sqlite/hdr") // nothing below a run directory
	if err := os.MkdirAll(filepath.Join(root, "20261201-160000-microblog-sqlite"), 0o755); err != nil {
		t.Fatal(err) // a run stopped before it measured: no file
	}
	self := filepath.Join(root, "history.db")
	for _, f := range []string{self, self + "-wal"} {
		if err := os.WriteFile(f, []byte("SQLite format 3\x00"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, skipped, err := Source(root, self)
	if err != nil || len(skipped) > 0 {
		t.Fatalf("%v, skipped %v", err, skipped)
	}
	slices.Sort(want)
	if !slices.Equal(files, want) {
		t.Errorf("found\n  %s\nwant\n  %s", strings.Join(files, "\n  "), strings.Join(want, "\n  "))
	}
	for _, f := range []string{self, self + "-wal"} {
		files, skipped, err := Source(f, self)
		if err != nil || len(files) > 0 || len(skipped) != 1 || skipped[0].Reason != "the history database itself" {
			t.Errorf("%s: %v %v %v", f, files, skipped, err)
		}
	}
	if files, _, err := Source(want[0], self); err != nil || len(files) != 1 {
		t.Errorf("a result file: %v %v", files, err)
	}
}

// A shard alone and a run that did not finish are not records.
func TestFromRunRefuses(t *testing.T) {
	t.Parallel()
	r := fakeRun{started: t0, ops: []string{"read"}, seconds: 2, rate: 5, latencyUS: 10, seed: 1}.run(t)
	r.Header.Options["shard"] = "0/2"
	if _, err := FromRun(r, ""); err != ErrShard {
		t.Errorf("a shard: %v", err)
	}
	delete(r.Header.Options, "shard")
	r.Summary = nil
	if _, err := FromRun(r, ""); err != ErrNoSummary {
		t.Errorf("no summary: %v", err)
	}
}
