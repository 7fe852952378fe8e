package couchbase

import (
	"testing"

	"github.com/fieldbench/fieldbench/internal/jsondoc/jsondoctest"
	"github.com/fieldbench/fieldbench/workload/ingest"
)

// TestIngestDocBytes pins a record's document as an upsert sends it
// (gocb's default transcoder is encoding/json): the prefix and kind the
// view "ingest" tests (fb, k) before the record's fields.
// TestIngestStoresExactly reads the records back from CouchbaseMock.
func TestIngestDocBytes(t *testing.T) {
	jsondoctest.CheckIngestBytes(t, func(r *ingest.Record) ingestDoc { return ingestDocOf("pfx", r) }, `"fb":"pfx","k":"i"`)
}
