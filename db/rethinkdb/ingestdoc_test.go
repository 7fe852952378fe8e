package rethinkdb

import (
	"encoding/json"
	"testing"
	"time"

	"gopkg.in/rethinkdb/rethinkdb-go.v6/encoding"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

// TestIngestDocReQL pins the document an ingest record is stored as: what
// the driver sends (its encoding of the fields, as JSON) and the record read
// back. A database loaded by an older fieldbench must read the same, and
// a change of the shape must be one on purpose.
func TestIngestDocReQL(t *testing.T) {
	t.Parallel()
	r := ingest.Record{ID: "0b7d6c1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e", Source: 3, Seq: 41, Channel: 17,
		MeasuredAt: time.Date(2015, 3, 2, 0, 0, 0, 820_001_000, time.UTC), Tag: "tag-x", Quality: 2, Value: 230.125,
		RecordedAt: time.Date(2015, 3, 2, 0, 0, 1, 5_000, time.UTC)}
	got, err := encoding.Encode(docOf(&r))
	if err != nil {
		t.Fatal(err)
	}
	// As JSON, which is how ReQL sends it (encoding/json sorts a map's keys).
	js, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"channel":17,"id":"0b7d6c1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e","measured_at":1425254400820001,"quality":2,` +
		`"recorded_at":1425254401000005,"seq":41,"source":3,"tag":"tag-x","value":230.125}`
	if string(js) != want {
		t.Fatalf("document\n%s\nwant\n%s", js, want)
	}
	var back recordDoc
	if err := encoding.Decode(&back, got); err != nil {
		t.Fatal(err)
	}
	b1, _ := json.Marshal(back.Record())
	b2, _ := json.Marshal(r)
	if string(b1) != string(b2) {
		t.Errorf("read back %s, want %s", b1, b2)
	}
}
