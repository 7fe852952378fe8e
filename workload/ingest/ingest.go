// Package ingest is the write-heavy enterprise ingest workload (Lourenço et
// al. 2015): S sources batch-inserting fixed 126-byte records.
package ingest
