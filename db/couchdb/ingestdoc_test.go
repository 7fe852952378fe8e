package couchdb

import (
	"testing"

	"github.com/fieldbench/fieldbench/internal/jsondoc/jsondoctest"
)

// TestIngestDocBytes pins a record's document as _bulk_docs sends it: its
// _id (source and seq in 10 digits, then the record's id) before the
// record's fields. TestIngestStoresExactly reads the records back from a
// server.
func TestIngestDocBytes(t *testing.T) {
	jsondoctest.CheckIngestBytes(t, ingestDocOf, `"_id":"0000000003:0000000041:0b7d6c1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e"`)
}
