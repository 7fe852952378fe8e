package ingestdoc

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"gopkg.in/rethinkdb/rethinkdb-go.v6/encoding"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

// The document of record is pinned as each driver encodes it: a database
// loaded by an older fieldbench must read the same, and a change of the
// shape must be one on purpose. (These were db/mongodb's TestIngestDocBSON
// and db/rethinkdb's TestIngestDocReQL, written against the two types this
// package replaced and unchanged in what they expect.)

// record's times have microseconds, its value a fraction.
var record = ingest.Record{ID: "0b7d6c1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e", Source: 3, Seq: 41, Channel: 17,
	MeasuredAt: time.Date(2015, 3, 2, 0, 0, 0, 820_001_000, time.UTC), Tag: "tag-x", Quality: 2, Value: 230.125,
	RecordedAt: time.Date(2015, 3, 2, 0, 0, 1, 5_000, time.UTC)}

// checkReadBack: back holds record again, times included.
func checkReadBack(t *testing.T, back Doc) {
	t.Helper()
	got, _ := json.Marshal(back.Record())
	want, _ := json.Marshal(record)
	if string(got) != string(want) {
		t.Errorf("read back %s, want %s", got, want)
	}
}

// TestBSON: MongoDB's document, its BSON bytes field for field and in
// order, _id first.
func TestBSON(t *testing.T) {
	t.Parallel()
	r := record
	got, err := bson.Marshal(Of(&r))
	if err != nil {
		t.Fatal(err)
	}
	want, err := bson.Marshal(bson.D{{Key: "_id", Value: r.ID}, {Key: "source", Value: int32(3)}, {Key: "seq", Value: int32(41)},
		{Key: "channel", Value: int32(17)}, {Key: "measured_at", Value: int64(1425254400820001)}, {Key: "tag", Value: "tag-x"},
		{Key: "quality", Value: int32(2)}, {Key: "value", Value: 230.125}, {Key: "recorded_at", Value: int64(1425254401000005)}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("document\n%v\nwant\n%v", bson.Raw(got), bson.Raw(want))
	}
	var back Doc
	if err := bson.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	checkReadBack(t, back)
}

// TestReQL: RethinkDB's document, what the driver sends (its encoding of
// the fields, as JSON), id as the key.
func TestReQL(t *testing.T) {
	t.Parallel()
	r := record
	got, err := encoding.Encode(Of(&r))
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
	var back Doc
	if err := encoding.Decode(&back, got); err != nil {
		t.Fatal(err)
	}
	checkReadBack(t, back)
}
