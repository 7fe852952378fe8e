// Package jsondoc is the JSON shape of a record in the document stores
// that keep JSON as it is sent (couchdb, couchbase): one place for the
// field names and the time encoding, so that the two adapters store an
// ingest record alike and a change of the shape is made once. Each
// adapter embeds the shape in its own document type, beside its own keys
// (couchdb's _id, couchbase's fb and k), which encoding/json writes first
// and reads back as before: the documents are the bytes they were when
// each adapter declared every field itself.
package jsondoc

import (
	"time"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

// Ingest is an ingest record as a JSON document's fields. Times are Unix
// microseconds, the records' precision: a JSON number holds them exactly
// (up to 2^53, far beyond them), where an RFC 3339 string would be longer
// and parsed on every read.
type Ingest struct {
	Rec        string  `json:"id"`
	Source     int32   `json:"source"`
	Seq        int32   `json:"seq"`
	Channel    int32   `json:"channel"`
	MeasuredUS int64   `json:"measured_us"`
	Tag        string  `json:"tag"`
	Quality    int32   `json:"quality"`
	Value      float64 `json:"value"`
	RecordedUS int64   `json:"recorded_us"`
}

// IngestOf is r's fields.
func IngestOf(r *ingest.Record) Ingest {
	return Ingest{Rec: r.ID, Source: r.Source, Seq: r.Seq, Channel: r.Channel,
		MeasuredUS: r.MeasuredAt.UnixMicro(), Tag: r.Tag, Quality: r.Quality, Value: r.Value,
		RecordedUS: r.RecordedAt.UnixMicro()}
}

// Record is the record d holds, its times in UTC.
func (d Ingest) Record() ingest.Record {
	return ingest.Record{ID: d.Rec, Source: d.Source, Seq: d.Seq, Channel: d.Channel,
		MeasuredAt: time.UnixMicro(d.MeasuredUS).UTC(), Tag: d.Tag, Quality: d.Quality, Value: d.Value,
		RecordedAt: time.UnixMicro(d.RecordedUS).UTC()}
}
