package experiment

import (
	"errors"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
)

// Issue 40: the scenario checks are the run's (experiment --dry-run
// accepted what the real run then refused, after making its directory).
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
