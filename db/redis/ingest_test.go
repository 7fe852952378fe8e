package redis

import (
	"context"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/workload/ingest"
)

type nopRec struct{}

func (nopRec) Record(int, time.Duration) {}
func (nopRec) Error(int, error)          {}

// TestIngestRun drives the workload's sources against the standalone
// server and the cluster: exactly S×n records, each the generated one;
// Reset empties.
func TestIngestRun(t *testing.T) {
	for _, standalone := range []bool{true, false} {
		db := open(t, standalone)
		ctx := t.Context()
		st, err := db.Ingest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s := st.(*ingestStore)
		if !standalone {
			// The cluster is shared with the other families' tests: only
			// insert and read back, no FLUSHALL.
			recs := make([]ingest.Record, 700)
			ingest.Fill(recs, 5, 1, 0)
			if err := s.InsertBatch(ctx, recs); err != nil {
				t.Fatal(err)
			}
			for _, r := range []ingest.Record{recs[0], recs[699]} {
				v, err := db.rdb.Get(ctx, ingestPrefix+r.ID).Bytes()
				if err != nil || string(v) != string(r.AppendBinary(nil)) {
					t.Fatalf("record %s: %q, %v", r.ID, v, err)
				}
			}
			p := db.rdb.Pipeline()
			for _, r := range recs {
				p.Del(ctx, ingestPrefix+r.ID)
			}
			if _, err := p.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := s.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		const sources, records, batch, seed = 4, 1234, 500, 11
		recs := make([]ingest.BatchRecorder, sources)
		for i := range recs {
			recs[i] = nopRec{}
		}
		t0 := time.Now()
		res := ingest.Run(ctx, s, ingest.RunConfig{Sources: sources, Records: records, Batch: batch, Seed: seed, Verify: true}, recs)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		t.Logf("%d records in %v", sources*records, time.Since(t0))
		if n, err := s.Count(ctx); err != nil || n != sources*records {
			t.Fatalf("Count = %d, %v", n, err)
		}
		for _, k := range [][2]int{{0, 0}, {3, records - 1}} {
			r := ingest.Generate(seed, k[0], int64(k[1]))
			v, err := db.rdb.Get(ctx, ingestPrefix+r.ID).Bytes()
			if err != nil || string(v) != string(r.AppendBinary(nil)) {
				t.Fatalf("record %v: %v", k, err)
			}
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.InsertBatch(cctx, []ingest.Record{ingest.Generate(1, 9, 9)}); err == nil {
			t.Fatal("a batch with a cancelled context succeeded")
		}
		if err := s.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := s.Count(ctx); err != nil || n != 0 {
			t.Fatalf("Count after Reset = %d, %v", n, err)
		}
	}
}

// BenchmarkIngest measures InsertBatch throughput of 8 concurrent sources
// (batches of 1,000) against the standalone server and the 3-master
// cluster; records/s is what docs/redis.md quotes.
func BenchmarkIngest(b *testing.B) {
	for _, standalone := range []bool{true, false} {
		b.Run(map[bool]string{false: "cluster", true: "standalone"}[standalone], func(b *testing.B) {
			db := open(b, standalone)
			st, _ := db.Ingest(b.Context())
			const sources, batch = 8, 1000
			var total int64
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				if err := st.Reset(b.Context()); err != nil {
					b.Fatal(err)
				}
				recs := make([]ingest.BatchRecorder, sources)
				for i := range recs {
					recs[i] = nopRec{}
				}
				b.StartTimer()
				res := ingest.Run(b.Context(), st, ingest.RunConfig{Sources: sources, Records: 20_000, Batch: batch, Seed: 1}, recs)
				if res.Err != nil {
					b.Fatal(res.Err)
				}
				total += sources * 20_000
			}
			b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "records/s")
			st.Reset(context.Background())
		})
	}
}
