// Package ingestdoc is the document an ingest record is stored as in the
// document stores whose drivers encode a struct by tags of their own,
// MongoDB's (BSON) and RethinkDB's (ReQL): the same fields under the same
// names in both, the record's id as the document's key under the name
// each database gives its key (_id, id), and the times as Unix
// microseconds in 64-bit integers (a BSON date and a ReQL time keep only
// milliseconds, and the records have microseconds). One type, so that the
// two store a record alike and a change of the shape is made once. The
// JSON stores (couchdb, couchbase) keep theirs in adapter/internal/jsondoc:
// their times are named measured_us and recorded_us, and their id is a
// field beside each store's own key, so the shapes differ.
//
// It lives under db/internal so that every database folder reaches it;
// db/all links no package of it (TestLinksEveryFolder leaves it out).
package ingestdoc

import (
	"time"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

// Doc is one record as stored.
type Doc struct {
	ID         string  `bson:"_id" rethinkdb:"id"`
	Source     int32   `bson:"source" rethinkdb:"source"`
	Seq        int32   `bson:"seq" rethinkdb:"seq"`
	Channel    int32   `bson:"channel" rethinkdb:"channel"`
	MeasuredAt int64   `bson:"measured_at" rethinkdb:"measured_at"`
	Tag        string  `bson:"tag" rethinkdb:"tag"`
	Quality    int32   `bson:"quality" rethinkdb:"quality"`
	Value      float64 `bson:"value" rethinkdb:"value"`
	RecordedAt int64   `bson:"recorded_at" rethinkdb:"recorded_at"`
}

// Of is r as stored.
func Of(r *ingest.Record) Doc {
	return Doc{ID: r.ID, Source: r.Source, Seq: r.Seq, Channel: r.Channel, MeasuredAt: r.MeasuredAt.UnixMicro(),
		Tag: r.Tag, Quality: r.Quality, Value: r.Value, RecordedAt: r.RecordedAt.UnixMicro()}
}

// Record is the stored document as the workload's record (UTC times).
func (d Doc) Record() ingest.Record {
	return ingest.Record{ID: d.ID, Source: d.Source, Seq: d.Seq, Channel: d.Channel, MeasuredAt: time.UnixMicro(d.MeasuredAt).UTC(),
		Tag: d.Tag, Quality: d.Quality, Value: d.Value, RecordedAt: time.UnixMicro(d.RecordedAt).UTC()}
}
