package couchdb

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

// TestIngestDocBytes pins the JSON of a record's document, key for key
// and in order, as _bulk_docs sends it: the documents of a database
// loaded by an older fieldbench must read the same, and a change of the
// shape must be one on purpose. TestIngestStoresExactly reads the records
// back from a server.
func TestIngestDocBytes(t *testing.T) {
	r := ingest.Record{ID: "0b7d6c1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e", Source: 3, Seq: 41, Channel: 17,
		MeasuredAt: time.Date(2015, 3, 2, 0, 0, 0, 820_001_000, time.UTC), Tag: "tag-x", Quality: 2, Value: 230.125,
		RecordedAt: time.Date(2015, 3, 2, 0, 0, 1, 5_000, time.UTC)}
	const want = `{"_id":"0000000003:0000000041:0b7d6c1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e","id":"0b7d6c1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e",` +
		`"source":3,"seq":41,"channel":17,"measured_us":1425254400820001,"tag":"tag-x","quality":2,"value":230.125,"recorded_us":1425254401000005}`
	d := ingestDocOf(&r)
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Fatalf("document\n%s\nwant\n%s", b, want)
	}
	var back ingestDoc
	if err := json.Unmarshal(b, &back); err != nil || back != d {
		t.Fatalf("read back %+v (%v), want %+v", back, err, d)
	}
}
