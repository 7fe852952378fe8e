package ingest

import (
	"strconv"

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
	itoa := strconv.Itoa
	return workload.Meta{
		Name:        Name,
		Description: "write-heavy enterprise ingest (Lourenço et al. 2015): S sources batch-insert 126-byte records; load sweep with warm-up runs and 95 % confidence intervals",
		Operations:  Ops,
		Options: []workload.Option{
			{Name: "sources", Default: itoa(DefaultSources), Help: "concurrent sources, each inserting its own records"},
			{Name: "records", Default: itoa(DefaultFrom), Help: "run: records per source"},
			{Name: "batch", Default: itoa(DefaultBatch), Help: "records per batch (one InsertBatch: one transaction on SQL databases)"},
			{Name: "seed", Default: itoa(DefaultSeed), Help: "seed of the records (a record is a function of seed, source and index)"},
			{Name: "timeout", Default: DefaultTimeout, Help: "a run taking longer fails with cause timeout (0 = no limit)"},
			{Name: "verify", Default: "true", Help: "count the stored records after each run (untimed); a wrong count fails the run"},
			{Name: "from", Default: itoa(DefaultFrom), Help: "sweep: first load, records per source"},
			{Name: "to", Default: itoa(DefaultTo), Help: "sweep: last load, records per source"},
			{Name: "step", Default: itoa(DefaultStep), Help: "sweep: load increment, records per source"},
			{Name: "runs", Default: itoa(DefaultRuns), Help: "sweep: runs per load, warm-up runs included"},
			{Name: "warmup-runs", Default: itoa(DefaultWarmupRuns), Help: "sweep: first runs of each load left out of the statistics"},
			{Name: "on-error", Default: string(DefaultOnError), Help: "sweep: after a failed run, continue or stop"},
		},
	}
}

func (meta) Supports(db any) bool {
	_, ok := db.(Backend)
	return ok
}

func init() { workload.Register(meta{}) }
