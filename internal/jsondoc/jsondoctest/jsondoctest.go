// Package jsondoctest pins the JSON of the ingest documents of the
// adapters that embed jsondoc.Ingest (couchdb, couchbase): one record,
// one expected tail of bytes, so that each adapter's test says only its
// own keys.
package jsondoctest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

// Record is the record whose document CheckIngestBytes checks: its times
// have microseconds, its value a fraction.
var Record = ingest.Record{ID: "0b7d6c1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e", Source: 3, Seq: 41, Channel: 17,
	MeasuredAt: time.Date(2015, 3, 2, 0, 0, 0, 820_001_000, time.UTC), Tag: "tag-x", Quality: 2, Value: 230.125,
	RecordedAt: time.Date(2015, 3, 2, 0, 0, 1, 5_000, time.UTC)}

// fields is Record's fields as every such document holds them, in order.
const fields = `"id":"0b7d6c1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e","source":3,"seq":41,"channel":17,` +
	`"measured_us":1425254400820001,"tag":"tag-x","quality":2,"value":230.125,"recorded_us":1425254401000005`

// CheckIngestBytes checks that doc's document of Record marshals to the
// adapter's own keys (the JSON of its first members, without braces)
// followed by the record's fields, key for key and in order, and reads
// back into its type unchanged: the documents of a database loaded by
// an older fieldbench must read the same, and a change of the shape must
// be one on purpose.
func CheckIngestBytes[D comparable](t testing.TB, doc func(*ingest.Record) D, keys string) {
	t.Helper()
	r := Record
	d := doc(&r)
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if want := "{" + keys + "," + fields + "}"; string(b) != want {
		t.Fatalf("document\n%s\nwant\n%s", b, want)
	}
	var back D
	if err := json.Unmarshal(b, &back); err != nil || back != d {
		t.Fatalf("read back %+v (%v), want %+v", back, err, d)
	}
}
