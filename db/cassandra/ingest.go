package cassandra

import (
	"context"
	"fmt"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

// ingestTable partitions records by (source, seq / 65536): a source's
// consecutive records share a partition, so a source's batch is one or two
// single-partition batches, and no partition grows past 65536 rows. The
// record id is part of the key: two records of one source and seq (from
// two runs with different seeds) are two records. Times are Unix
// microseconds (bigint): CQL's timestamp keeps milliseconds only.
const ingestTable = `ingest_records (source int, bucket int, seq int, id text, channel int, measured_us bigint,
	tag text, quality int, value double, recorded_us bigint, PRIMARY KEY ((source, bucket), seq, id))`

const ingestBucketBits = 16

type ingestStore struct {
	db    *DB
	pipes *insertPipes // insert=single's connections (pipeline.go)
}

var _ ingest.Store = (*ingestStore)(nil)

// Ingest implements ingest.Backend.
func (db *DB) Ingest(ctx context.Context) (ingest.Store, error) {
	if err := db.createTables(ctx, ingestTable); err != nil {
		return nil, err
	}
	return &ingestStore{db: db, pipes: newInsertPipes(db, ingestInsert(db))}, nil
}

// ingestInsert is the single-row INSERT of a record.
func ingestInsert(db *DB) string {
	return "INSERT INTO " + db.t("ingest_records") +
		" (source, bucket, seq, id, channel, measured_us, tag, quality, value, recorded_us) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
}

// Close implements ingest.Store: closes insert=single's connections.
func (s *ingestStore) Close() error {
	s.pipes.close()
	return nil
}

type partKey struct{ source, bucket int32 }

// InsertBatch implements ingest.Store: the records grouped by partition,
// one UNLOGGED batch per partition (up to 100 rows each; an unlogged
// single-partition batch is applied as one mutation, atomically), the
// batches sent concurrently. It returns once every batch was
// acknowledged at the DSN's consistency level. Records of several
// partitions are not one atomic unit: Cassandra has no multi-partition
// transaction short of a logged batch, which only promises eventual
// completion and costs a batchlog write.
//
// With the DSN option insert=single every record is its own prepared
// INSERT instead (up to concurrency in flight on one connection, sent by
// insertPipes): plain single-row inserts, for comparing the client's cost
// per insert with other tools.
func (s *ingestStore) InsertBatch(ctx context.Context, recs []ingest.Record) error {
	if len(recs) == 0 {
		return nil
	}
	q := ingestInsert(s.db)
	if s.db.cfg.SingleInserts {
		if err := s.pipes.insert(ctx, recs, s.db.cfg.Concurrency); err != nil {
			return fmt.Errorf("cassandra ingest: insert %d records one by one: %w", len(recs), err)
		}
		return nil
	}
	var parts [][]int
	index := map[partKey]int{}
	for i := range recs {
		k := partKey{recs[i].Source, recs[i].Seq >> ingestBucketBits}
		j, ok := index[k]
		if !ok || len(parts[j]) >= loadRows {
			j = len(parts)
			index[k] = j
			parts = append(parts, nil)
		}
		parts[j] = append(parts[j], i)
	}
	err := s.db.parallel(ctx, len(parts), func(ctx context.Context, p int) error {
		b := s.db.s.Batch(gocql.UnloggedBatch)
		for _, i := range parts[p] {
			r := &recs[i]
			b.Query(q, r.Source, r.Seq>>ingestBucketBits, r.Seq, r.ID, r.Channel, r.MeasuredAt.UnixMicro(),
				r.Tag, r.Quality, r.Value, r.RecordedAt.UnixMicro())
		}
		return b.ExecContext(ctx)
	})
	if err != nil {
		return fmt.Errorf("cassandra ingest: insert %d records: %w", len(recs), err)
	}
	return nil
}

// Count implements ingest.Store: COUNT(*) per token range, in parallel.
func (s *ingestStore) Count(ctx context.Context) (int64, error) {
	n, err := s.db.count(ctx, "ingest_records", "source, bucket")
	if err != nil {
		return 0, fmt.Errorf("cassandra ingest: %w", err)
	}
	return n, nil
}

// Reset implements ingest.Store.
func (s *ingestStore) Reset(ctx context.Context) error { return s.db.truncate(ctx, "ingest_records") }
