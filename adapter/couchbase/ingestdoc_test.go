package couchbase

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

// TestIngestDocBytes pins the JSON of a record's document, key for key
// and in order, as an upsert sends it (gocb's default transcoder is
// encoding/json): the documents of a bucket loaded by an older fieldbench
// must read the same, and the view "ingest" tests fb and k. A change of
// the shape must be one on purpose. TestIngestStoresExactly reads the
// records back from CouchbaseMock.
func TestIngestDocBytes(t *testing.T) {
	r := ingest.Record{ID: "0b7d6c1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e", Source: 3, Seq: 41, Channel: 17,
		MeasuredAt: time.Date(2015, 3, 2, 0, 0, 0, 820_001_000, time.UTC), Tag: "tag-x", Quality: 2, Value: 230.125,
		RecordedAt: time.Date(2015, 3, 2, 0, 0, 1, 5_000, time.UTC)}
	const want = `{"fb":"pfx","k":"i","id":"0b7d6c1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e",` +
		`"source":3,"seq":41,"channel":17,"measured_us":1425254400820001,"tag":"tag-x","quality":2,"value":230.125,"recorded_us":1425254401000005}`
	d := ingestDocOf("pfx", &r)
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
