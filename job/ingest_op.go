package job

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/workload/ingest"
)

// openOp opens --db and its ingest store for an op operation.
// openOp opens --db for an operation; open is OpenDB for the writes (they
// may start a database) and OpenExistingDB for count.
func (j *ingestJob) openOp(ctx context.Context, open func(context.Context, string) (adapter.Adapter, adapter.DB, error)) (adapter.DB, ingest.Store, error) {
	if j.db == "" {
		return nil, nil, Usagef("op needs --db (the database to use), e.g. --db sqlite:///tmp/in.db")
	}
	_, d, err := open(ctx, j.db)
	if err != nil {
		return nil, nil, err
	}
	st, err := ingestStore(ctx, d, j.db)
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	return d, st, nil
}

func (j *ingestJob) opInsert(ctx context.Context, env *Env) error {
	if j.source < 0 || j.source > math.MaxInt32 {
		return Usagef("--source must be from 0 to %d (got %d)", math.MaxInt32, j.source)
	}
	if j.index < 0 || j.index >= ingest.MaxRecords {
		return Usagef("--index must be from 0 to %d (got %d)", ingest.MaxRecords-1, j.index)
	}
	d, st, err := j.openOp(ctx, OpenDB)
	if err != nil {
		return err
	}
	defer d.Close()
	defer st.Close()
	r := ingest.Generate(j.seed, j.source, j.index)
	if err := st.InsertBatch(ctx, []ingest.Record{r}); err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	return json.NewEncoder(env.Stdout).Encode(r)
}

// opBatchPart is how many records of op batch are made between two looks
// at ctx (about 10 ms of work).
const opBatchPart = 1 << 14

func (j *ingestJob) opBatch(ctx context.Context, env *Env) error {
	source, index, count := j.source, j.index, j.count
	if j.db == "" {
		return Usagef("op needs --db (the database to use), e.g. --db sqlite:///tmp/in.db")
	}
	if !j.opts.Changed("source") || !j.opts.Changed("index") || !j.opts.Changed("count") {
		return Usagef("op ingest batch needs --source, --index and --count (records --index..--index+--count-1 of source --source)")
	}
	switch {
	case source < 0 || source > math.MaxInt32:
		return Usagef("--source must be from 0 to %d (got %d)", math.MaxInt32, source)
	case index < 0 || index >= ingest.MaxRecords:
		return Usagef("--index must be from 0 to %d (got %d)", ingest.MaxRecords-1, index)
	case count < 1:
		return Usagef("--count must be at least 1 (got %d)", count)
	case count > ingest.MaxRecords-index:
		return Usagef("--index %d --count %d goes past the last record index %d of a source: --count must be at most %d",
			index, count, ingest.MaxRecords-1, ingest.MaxRecords-index)
	}
	d, st, err := j.openOp(ctx, OpenDB)
	if err != nil {
		return err
	}
	defer d.Close()
	defer st.Close()
	// A batch of millions of records takes seconds to make and more to
	// insert: it says so every 10 s, and is made in parts so that Ctrl-C
	// stops it within a second (the insert is the driver's, with ctx).
	var made atomic.Int64
	stop := heartbeat(env.Stderr, func() string {
		if n := made.Load(); n < count {
			return fmt.Sprintf("op ingest batch: made %d of %d records", n, count)
		}
		return fmt.Sprintf("op ingest batch: inserting %d records as one batch", count)
	})
	defer stop()
	recs := make([]ingest.Record, count)
	for from := int64(0); from < count; from += opBatchPart {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: nothing was inserted", ErrInterrupted)
		}
		part := recs[from:min(from+opBatchPart, count)]
		ingest.Fill(part, j.seed, source, index+from)
		made.Add(int64(len(part)))
	}
	if err := st.InsertBatch(ctx, recs); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: the batch of records %d..%d of source %d was cut short (%v)", ErrInterrupted, index, index+count-1, source, err)
		}
		return fmt.Errorf("insert batch of records %d..%d of source %d: %w", index, index+count-1, source, err)
	}
	stop()
	n, err := st.Count(ctx)
	if err != nil {
		return fmt.Errorf("count: %w", err)
	}
	return json.NewEncoder(env.Stdout).Encode(struct {
		Source        int   `json:"source"`
		From          int64 `json:"from"`
		Count         int64 `json:"count"`
		RecordsStored int64 `json:"records_stored"`
	}{source, index, count, n})
}

func (j *ingestJob) opCount(ctx context.Context, env *Env) error {
	d, st, err := j.openOp(ctx, openExisting(ingest.Name, "ingest records"))
	if err != nil {
		return err
	}
	defer d.Close()
	defer st.Close()
	n, err := st.Count(ctx)
	if err != nil {
		return fmt.Errorf("count: %w", err)
	}
	return json.NewEncoder(env.Stdout).Encode(map[string]int64{"records": n})
}
