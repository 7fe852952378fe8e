// Package ingest is the write-heavy enterprise ingest workload (Lourenço et
// al. 2015): S sources (the study's 8) concurrently batch-insert fixed
// 126-byte measurement records as fast as the database accepts them, and a
// load sweep repeats that at growing loads, several runs each, with
// warm-up runs discarded and a Student-t confidence interval per load.
//
// The package knows the records, the driving of sources and the sweep's
// statistics, but no database: Store is what an adapter implements.
package ingest

import "context"

// Store is what an adapter implements for the ingest family. It must be safe
// for concurrent use: every source calls InsertBatch at the same time.
type Store interface {
	// InsertBatch stores recs as one unit, the way the database is best
	// batch-loaded (one transaction, a batch statement, a bulk request). It
	// returns only once the database acknowledged every record.
	InsertBatch(ctx context.Context, recs []Record) error
	// Count returns how many records are stored; a run checks it against
	// what it inserted, so an acknowledged write that was lost is a failure.
	Count(ctx context.Context) (int64, error)
	// Reset returns the store to its initial, empty state (truncate or drop
	// and recreate) so every run of a sweep starts alike.
	Reset(ctx context.Context) error
	Close() error
}

// Backend is implemented by an adapter.DB that supports the ingest family.
type Backend interface {
	// Ingest returns the Store, creating the records table (or collection,
	// column family...) when absent.
	Ingest(ctx context.Context) (Store, error)
}
