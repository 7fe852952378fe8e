package ingest

import (
	"github.com/fieldbench/fieldbench/workload"
)

// Name is the workload's registry name.
const Name = "ingest"

// Study defaults (seed 003): 8 sources; 10,000 to 330,000 records per source
// in steps of 10,000; 13 runs per load of which the first 3 are warm-up.
// The study gives no batch size for its relational baseline; 1,000 is what
// its Couchbase sources used per request.
const (
	DefaultSources    = 8
	DefaultBatch      = 1000
	DefaultFrom       = 10_000
	DefaultTo         = 330_000
	DefaultStep       = 10_000
	DefaultRuns       = 13
	DefaultWarmupRuns = 3
	DefaultSeed       = 1
	DefaultTimeout    = "10m"
	DefaultOnError    = OnErrorContinue
	// Level is the confidence level of the interval reported per load.
	Level = 0.95
)

// OpBatch is the index of the only recorded operation, "batch": the latency
// of one InsertBatch call.
const OpBatch = 0

// Ops are the recorded operations.
var Ops = []string{"batch"}

type meta struct{}

func (meta) Meta() workload.Meta {
	return workload.Meta{
		Name:        Name,
		Description: "write-heavy enterprise ingest (Lourenço et al. 2015): S sources batch-insert 126-byte records; load sweep with warm-up runs and 95 % confidence intervals",
		Operations:  Ops,
	}
}

func (meta) Supports(db any) bool {
	_, ok := db.(Backend)
	return ok
}

func init() { workload.Register(meta{}) }
