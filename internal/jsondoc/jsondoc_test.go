package jsondoc

import (
	"encoding/json"
	"testing"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

// TestIngestRoundTrip: a generated record, written as its document's
// JSON and read back, is the record again, times (microseconds, UTC)
// included.
func TestIngestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		seed        int64
		source, seq int
	}{{1, 0, 0}, {7, 3, 41}, {12, 63, 1_000_000}} {
		r := ingest.Generate(tc.seed, tc.source, int64(tc.seq))
		b, err := json.Marshal(IngestOf(&r))
		if err != nil {
			t.Fatal(err)
		}
		var d Ingest
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		// The record's own JSON says each field, its times to the
		// nanosecond with their zone.
		got, _ := json.Marshal(d.Record())
		want, _ := json.Marshal(r)
		if string(got) != string(want) {
			t.Errorf("seed %d source %d seq %d: read back %s, want %s", tc.seed, tc.source, tc.seq, got, want)
		}
	}
}
