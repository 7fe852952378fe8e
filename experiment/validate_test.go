package experiment

import (
	"errors"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
)

// Issue 40: the scenario checks are the run's (experiment --dry-run
// accepted what the real run then refused, after making its directory),
// and they say every problem of the file at once, each as written.
func TestParseChecksWhatTheRunChecks(t *testing.T) {
	t.Parallel()
	base := "name: x\nworkload: {name: microblog, options: {duration: 5s}}\n"
	for _, tc := range []struct {
		name, yaml string
		want       []string // every one in the error
		not        []string // none of them
	}{
		// Finding 6: the options through the job's own check, the DSN
		// through its adapter's parser.
		{"negative clients", "name: x\nworkload: {name: microblog, options: {clients: -5}}\n",
			[]string{"line 2: workload.options.clients: clients must be at least 1 (got -5)"}, nil},
		{"bad port", base + "dsn: postgres://u:S3cretPW9@127.0.0.1:bad:port/db\n",
			[]string{"line 3: dsn: postgres: malformed DSN postgres://u:xxxxx@127.0.0.1:bad:port/db"}, []string{"S3cretPW9"}},
		{"port out of range", base + "dsn: redis://127.0.0.1:99999\n", []string{"dsn: redis: malformed DSN redis://127.0.0.1:99999: the port is not"}, nil},
		{"external cluster's dsn", "name: x\nworkload: {name: microblog, options: {duration: 5s}}\ncluster:\n  engine: external\n  database: redis\n  dsn: redis://127.0.0.1:0\n  members: [{name: r1, host: 127.0.0.1, port: 6379}]\n",
			[]string{"line 6: cluster.dsn: redis: malformed DSN redis://127.0.0.1:0"}, nil},
		// Finding 1: a null DSN with a password.
		{"null with a password", base + "dsn: null://u:S3cretPW9@h\n", []string{"line 3: dsn: a null DSN takes nothing after null://"}, []string{"S3cretPW9"}},
		// The options as the run gets them: a join experiment bounds the
		// request sets by max_sets; a sweep's check is the sweep's.
		{"sweep", "name: x\nworkload: {name: ingest, command: sweep, options: {from: 400, to: 300}}\n",
			[]string{"line 2: workload.options.from: --from (400) must not be greater than --to (300)"}, nil},
		{"step's options", "name: x\nworkload: {name: microblog, options: {duration: 5s}}\ncluster: {engine: redis, nodes: 1}\nsteps:\n  - {nodes: 1, options: {clients: 0}}\n",
			[]string{"line 5: steps[0].options.clients: clients must be at least 1 (got 0)"}, []string{"workload.options"}},
		// Finding 10: a negative time was taken.
		{"negative at", base + "timeline: [{at: -5s, do: mark}, {when: start, at: -1s, do: mark}]\n",
			[]string{"timeline[0].at: -5s: the time after the load starts at which the action fires cannot be negative",
				"timeline[1].at: -1s: the time after the load starts"}, nil},
		// Finding 10: the stability error printed a Go struct of the values
		// after defaults; it names each key with the value written.
		{"stability", "name: x\nworkload: {name: wiki}\nstability: {baseline_sets: 1, window: 0, warmup_sets: -2}\n",
			[]string{"line 3: stability.baseline_sets: 1: want at least 2", "stability.warmup_sets: -2: want 0 or more"}, []string{"{", "WarmupSets", "window"}},
		{"stability max_sets", "name: x\nworkload: {name: wiki}\nstability: {max_sets: 3}\n",
			[]string{"stability.max_sets: 3: want at least warmup_sets + baseline_sets (warmup_sets 0 (the default) + baseline_sets 20 (the default))"}, []string{"{"}},
		// Finding 10: a duration that did not parse hid the file's other
		// problems; it joins them, and brings no second message of its own.
		{"durations join the list", "name: x\nworkload: {name: microblog, options: {clients: -5, duration: 5s}}\nprobe_every: 5x\ncluster: {engine: redis, nodes: 1}\n" +
			"timeline:\n  - {at: soon, do: kill, count: 1}\n  - {at: 2s, do: explode}\n  - {when: start, after: later, do: mark}\n  - {at: 1s, do: delay, nodes: [redis1], delay: 50 ms}\n",
			[]string{`line 3: "5x" is not a duration`, `line 6: "soon" is not a duration`, `line 8: "later" is not a duration`, `line 9: "50 ms" is not a duration`,
				`timeline[1].do: "explode" is not one of`, "workload.options.clients: clients must be at least 1", "timeline[3]: delay needs the nodes on hosts"},
			[]string{"timeline[0]", "timeline[2]", "timeline[3]: delay needs delay", "not a valid scenario"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tc.yaml))
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("the error does not say %q:\n%s", w, msg)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(msg, n) {
					t.Errorf("the error says %q:\n%s", n, msg)
				}
			}
		})
	}
}

// The DSN check is the adapter's: what adapter.CheckDSN accepts a scenario
// accepts (null:// exactly, a file in a directory that exists).
func TestParseAcceptsGoodDSNs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, dsn := range []string{"null://", "sqlite://" + dir + "/x.db", "redis://127.0.0.1:6379", "postgres://u:pw@127.0.0.1:5432/db?sslmode=disable"} {
		if err := adapter.CheckDSN(dsn); err != nil {
			t.Fatalf("%s: %v", dsn, err)
		}
		if _, err := Parse([]byte("name: x\nworkload: {name: microblog, options: {duration: 5s}}\ndsn: \"" + dsn + "\"\n")); err != nil {
			t.Errorf("%s: %v", dsn, err)
		}
	}
	if _, err := Parse([]byte("name: x\nworkload: {name: microblog}\ndsn: \"null://x\"\n")); !errors.Is(err, adapter.ErrBadDSN) {
		t.Errorf("a bad DSN's error %v does not wrap adapter.ErrBadDSN", err)
	}
}
