package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/result"
)

// TestClientCostAndMarks: the client's own cost is shown in the terminal
// and the HTML report; a null:// run is marked harness only and a busy
// client is marked busy. A run without these shows none of the marks.
func TestClientCostAndMarks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		adapter string
		client  *result.ClientCost
		wants   []string
		not     []string
	}{
		{"null and busy", "null", &result.ClientCost{CPUUserSeconds: 15, CPUSysSeconds: 2, WallSeconds: 10, CPUs: 2, MaxRSSBytes: 300 << 20, PeakGoroutines: 100_012, Clients: 100_000, Busy: true},
			[]string{"Harness only — no database", "Busy client: fieldbench itself used 85 % of its 2 CPU(s)", "peak RSS 300.0 MiB", "peak goroutines 100,012", "100,000 clients"}, nil},
		{"sqlite, idle client", "sqlite", &result.ClientCost{CPUUserSeconds: 1, WallSeconds: 10, CPUs: 2, MaxRSSBytes: 40 << 20, PeakGoroutines: 30},
			[]string{"CPU 1.00 s user + 0.00 s system (5 % of 2 CPU(s)", "peak RSS 40.0 MiB"}, []string{"Harness only", "Busy client", "busy"}},
		{"pooled connections", "postgres", &result.ClientCost{CPUUserSeconds: 1, WallSeconds: 10, CPUs: 2, Clients: 1000,
			Connections: &result.Connections{PeakOpen: 24, Max: 40, Waits: 1234, WaitSeconds: 0.5}},
			[]string{"1,000 clients served by 24 connections (pool of 40), 1,234 waits for a free connection (500ms in all)"}, nil},
		{"old file without cost", "sqlite", nil, nil, []string{"Harness only", "Busy", "client cost", "client:"}},
	} {
		run := fixtureRuns(t, runA())[0]
		run.Header.Adapter = tc.adapter
		run.Summary.Client = tc.client
		var term bytes.Buffer
		if err := Terminal(&term, run); err != nil {
			t.Fatal(err)
		}
		html := renderHTML(t, run)
		for _, w := range tc.wants {
			if !strings.Contains(term.String(), w) {
				t.Errorf("%s: terminal lacks %q:\n%s", tc.name, w, term.String())
			}
			if !strings.Contains(html, esc(w)) {
				t.Errorf("%s: HTML lacks %q", tc.name, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(term.String(), w) || strings.Contains(html, esc(w)) {
				t.Errorf("%s: output has %q", tc.name, w)
			}
		}
	}
}
