package mongodb

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

// TestIngestDocBSON pins the document an ingest record is stored as: the
// BSON bytes, field for field and in order, and the record read back. A
// database loaded by an older fieldbench must read the same, and a change
// of the shape must be one on purpose.
func TestIngestDocBSON(t *testing.T) {
	t.Parallel()
	r := ingest.Record{ID: "0b7d6c1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e", Source: 3, Seq: 41, Channel: 17,
		MeasuredAt: time.Date(2015, 3, 2, 0, 0, 0, 820_001_000, time.UTC), Tag: "tag-x", Quality: 2, Value: 230.125,
		RecordedAt: time.Date(2015, 3, 2, 0, 0, 1, 5_000, time.UTC)}
	got, err := bson.Marshal(docOf(&r))
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
	var back recordDoc
	if err := bson.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	b1, _ := json.Marshal(back.Record())
	b2, _ := json.Marshal(r)
	if string(b1) != string(b2) {
		t.Errorf("read back %s, want %s", b1, b2)
	}
}
