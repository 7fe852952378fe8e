package experiment

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/analysis/score"
)

func TestParseValid(t *testing.T) {
	sc, err := Parse([]byte(`
name: join
cluster: {engine: redis, nodes: 2}
workload: {name: wiki, options: {requests: 1000, threads: 2}}
stability: {warmup_sets: 1, baseline_sets: 4}
timeline:
  - when: baseline
    after: 2s
    do: add
  - when: stable
    sets: 3
    do: mark
    note: done
`))
	if err != nil {
		t.Fatal(err)
	}
	if sc.Timeline[0].Count != 1 || sc.Timeline[0].After.D() != 2*time.Second {
		t.Errorf("add defaults: %+v", sc.Timeline[0])
	}
	if sc.Stability.Window != 5 || sc.Stability.MaxSets != 200 || sc.Stability.Detector != score.DefaultDetector || sc.ProbeEvery.D() != 5*time.Second || sc.Workload.Command != "run" {
		t.Errorf("defaults: %+v probe %v", sc.Stability, sc.ProbeEvery.D())
	}
	if got := strings.Join(CommandLine(sc.Workload.Options), " "); got != "--requests=1000 --threads=2" {
		t.Errorf("Args = %q", got)
	}
}

// TestParseErrors: every mistake gets a message naming the key at fault.
func TestParseErrors(t *testing.T) {
	base := "name: x\nworkload: {name: microblog}\n"
	cases := []struct{ name, yaml, want string }{
		{"unknown key", base + "timelime: []\n", "field timelime not found"},
		{"no name", "workload: {name: wiki}\n", "name: required"},
		{"bad workload", "name: x\nworkload: {name: tpcc}\n", `workload.name: "tpcc"`},
		{"bad duration", base + "cluster: {engine: redis, nodes: 1}\ntimeline: [{at: soon, do: kill, count: 1}]\n", "not a duration"},
		{"no trigger", base + "cluster: {engine: redis, nodes: 1}\ntimeline: [{do: kill, count: 1}]\n", "needs at"},
		{"bad action", base + "timeline: [{at: 1s, do: explode}]\n", `do: "explode"`},
		{"kill without cluster", base + "timeline: [{at: 1s, do: kill, count: 1}]\n", "needs a cluster"},
		{"kill without nodes", base + "cluster: {engine: redis, nodes: 3}\ntimeline: [{at: 1s, do: kill}]\n", "needs nodes"},
		{"stable is wiki only", base + "cluster: {engine: redis, nodes: 3}\ntimeline: [{when: stable, do: mark}]\n", "detected from request sets, which workload microblog does not run"},
		{"settled needs add", "name: x\nworkload: {name: wiki}\ncluster: {engine: redis, nodes: 3}\ntimeline: [{when: settled, do: mark}]\n", "needs an earlier add"},
		{"stop needs sets or a duration", "name: x\nworkload: {name: ingest}\ntimeline: [{at: 5s, do: stop}]\n", "stop ends request sets or a run for a duration"},
		{"restarted needs a restart", base + "cluster: {engine: redis, nodes: 3}\ntimeline: [{when: restarted, do: stop}]\n", "restarted needs an earlier restart"},
		{"audit is microblog only", "name: x\nworkload: {name: wiki}\naudit: true\n", "audit:"},
		{"shrinking steps", "name: x\nworkload: {name: wiki}\ncluster: {engine: redis, nodes: 3}\nsteps: [{nodes: 2}]\n", "must not shrink"},
		{"cluster and dsn", base + "cluster: {engine: redis, nodes: 1}\ndsn: redis://x\n", "exclude each other"},
		{"sweep is ingest only", "name: x\nworkload: {name: wiki, command: sweep}\n", "workload wiki has no sweep command"},
		{"convergence needs cluster", "name: x\nworkload: {name: none}\nconvergence: {rounds: 3}\n", "convergence: needs a cluster"},
		{"none needs convergence", "name: x\nworkload: {name: none}\n", "workload none"},
		{"unknown detector", "name: x\nworkload: {name: wiki}\nstability: {detector: cusum}\n", `stability.detector: "cusum"`},
		// Finding 10 of issue 13: a second document was ignored silently,
		// and any size was accepted.
		{"second document", base + "---\nname: y\nworkload: {name: wiki}\n", "second YAML document"},
		{"second document empty", base + "---\n", "second YAML document"},
		{"too large", base + "description: " + strings.Repeat("x", MaxScenarioBytes) + "\n", "more than 1048576 bytes"},
		{"too many actions", base + "timeline:\n" + strings.Repeat("  - {at: 1s, do: mark}\n", MaxEntries+1), "10001 timeline actions"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestScenarioFiles loads every scenario shipped in scenarios/: a scenario
// that does not validate would only fail when a user runs it.
func TestScenarioFiles(t *testing.T) {
	files, err := filepath.Glob("../scenarios/*/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no scenarios found under scenarios/")
	}
	for _, f := range files {
		sc, err := Load(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if sc.Study == "" || sc.Description == "" {
			t.Errorf("%s: say which study it reproduces and what it does (study, description)", f)
		}
	}
	if _, err := os.Stat("../scenarios/README.md"); err != nil {
		t.Errorf("scenarios/README.md: %v", err)
	}
}

// TestStabilityStableAfter: the online detection is score.ComputeElasticity
// with the scenario's detector and window, so it finds the moment
// `fieldbench scores` recomputes; both detectors on one series where they
// disagree.
func TestStabilityStableAfter(t *testing.T) {
	t.Parallel()
	// 2 warm-up sets, 20 baseline sets alternating 1.00/1.02 (every delta
	// 0.02: median 0.02, SD 0 → mean-delta bound 0.02, cap 0.06), the join
	// after the set ending at 22; then one set at 1.5 and the new level
	// alternating 1.20/1.22. Every delta from index 24 on is 0.02: at most
	// the mean-delta bound, so stable once the window holds only those
	// (index 28), but never strictly below the study's baseline.
	var ys, ends []float64
	for i := range 22 {
		ys = append(ys, 1+0.02*float64(i%2))
		ends = append(ends, float64(i+1))
	}
	ys, ends = append(ys, 1.5), append(ends, 23)
	for i := range 12 {
		ys = append(ys, 1.2+0.02*float64(i%2))
		ends = append(ends, float64(24+i))
	}
	tests := []struct {
		detector string
		want     int
	}{
		{score.DetectorMeanDelta, 22 + 1 + 5},
		{score.DetectorStudy, -1},
	}
	for _, tc := range tests {
		st := Stability{WarmupSets: 2, BaselineSets: 20, Window: 5, Detector: tc.detector}
		got, detail := st.StableAfter(ys, ends, 22.5, math.NaN())
		if got != tc.want {
			t.Errorf("%s: StableAfter = %d (%s), want %d", tc.detector, got, detail, tc.want)
		}
		if got >= 0 && !strings.Contains(detail, "study: not yet") {
			t.Errorf("%s: detail %q does not give the other verdict", tc.detector, detail)
		}
		// The same with settled unknown written as −1, as the CLI keeps it.
		if again, _ := st.StableAfter(ys, ends, 22.5, -1); again != got {
			t.Errorf("%s: settled −1 gives %d, NaN %d", tc.detector, again, got)
		}
		h := st.HeaderOptions()
		if h[score.OptionDetector] != tc.detector || h[score.OptionWindow] != 5 {
			t.Errorf("HeaderOptions = %v", h)
		}
	}
}

// FuzzParse feeds the scenario parser: seeded with every shipped scenario,
// it must answer (a scenario or an error) without panicking, and whatever
// it accepts stays within the limits.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob("../scenarios/*/*.yaml")
	if err != nil || len(files) == 0 {
		f.Fatalf("no scenarios to seed from: %v", err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("name: x\nworkload: {name: microblog}\n---\n"))
	f.Add([]byte("a: &a [*a, *a]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		sc, err := Parse(b)
		if err != nil {
			return
		}
		if len(sc.Timeline) > MaxEntries || len(sc.Steps) > MaxEntries || len(b) > MaxScenarioBytes {
			t.Errorf("accepted a scenario beyond the limits: %d actions, %d steps, %d bytes", len(sc.Timeline), len(sc.Steps), len(b))
		}
	})
}
