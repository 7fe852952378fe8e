package couchbase

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/couchbase/gocb/v2"
	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/adapter/adaptertest"
	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/workload/ingest"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// The package's tests share one CouchbaseMock (three simulated nodes),
// started by the couchbase engine on first use — in its network namespace,
// behind its forwarder — and stopped by TestMain; every test works in a
// bucket of its own (CouchbaseMock's views read every document of their
// bucket at each query, so a shared bucket would slow each view by the
// documents of the tests before), which the mock drops when it stops.
var server = &clustertest.SharedCluster{Engine: "couchbase", Timeout: 5 * time.Minute, // a first jar fetch included
	Options: cluster.Options{Nodes: 3, Extra: map[string]string{"buckets": strconv.Itoa(testBuckets)}}}

func TestMain(m *testing.M) { os.Exit(server.Stop(m.Run())) }

// testBuckets is how many buckets the tests can use (fb1...): the opens
// of the whole package.
const testBuckets = 24

var buckets atomic.Int64

// openFresh opens a bucket no test used yet.
func openFresh(t testing.TB, opts string) *DB {
	t.Helper()
	b := buckets.Add(1)
	if b > testBuckets {
		t.Fatalf("more than %d opens: raise testBuckets", testBuckets)
	}
	return adaptertest.Open(t, Open, bucketDSN(t, fmt.Sprintf("fb%d", b))+"?prefix=t"+opts)
}

// bucketDSN is the DSN of one of the extra buckets: CouchbaseMock serves
// each bucket on key-value ports of its own, and a client bootstraps on
// one of its bucket's (the engine lists them).
func bucketDSN(t testing.TB, bucket string) string {
	t.Helper()
	c := server.Get(t)
	for _, bp := range strings.Split(c.Options["bucket_kv_ports"], ",") {
		if name, port, _ := strings.Cut(bp, "="); name == bucket {
			return "couchbase://127.0.0.1:" + port + "/" + bucket
		}
	}
	t.Fatalf("bucket %s not in the cluster's bucket_kv_ports %q", bucket, c.Options["bucket_kv_ports"])
	return ""
}

// TestDrop: Drop removes every document of the prefix, and only those.
func TestDrop(t *testing.T) {
	db := openFresh(t, "")
	ctx := t.Context()
	other := adaptertest.Open(t, Open, bucketDSN(t, db.cfg.Bucket)+"?prefix=other")
	for _, d := range []*DB{db, other} {
		s, err := d.Ingest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		recs := make([]ingest.Record, 5)
		ingest.Fill(recs, 1, 0, 0)
		if err := s.InsertBatch(ctx, recs); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Drop(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := db.count(ctx, viewAll); err != nil || n != 0 {
		t.Errorf("after Drop: %d documents, %v; want 0", n, err)
	}
	if n, err := other.count(ctx, viewAll); err != nil || n != 5 {
		t.Errorf("the other prefix after Drop: %d documents, %v; want 5", n, err)
	}
}

// TestConformance runs the shared suite against CouchbaseMock, each family
// under a fresh prefix, with timeline=doc: CouchbaseMock runs a view's
// JavaScript over the whole bucket at every query, seconds for the
// suite's timelines (see microblog.go). TestMicroblogViewTimelines checks
// the view way.
func TestConformance(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T) adapter.DB { return openFresh(t, "&timeline=doc") })
}

// TestMicroblogViewTimelines checks the study's timelines (one document
// per entry, read through the view) in both models against the oracle:
// the hand-built dataset, then posts with tied times, every user at
// limits 0 to 3 and Limit.
func TestMicroblogViewTimelines(t *testing.T) {
	for _, m := range []microblog.Model{microblog.Denormalized, microblog.Normalized} {
		t.Run(string(m), func(t *testing.T) {
			db := openFresh(t, "&timeline=view")
			ctx := t.Context()
			s, err := db.Microblog(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			ds := adaptertest.TinyMicroblog()
			if err := s.Populate(ctx, ds); err != nil {
				t.Fatal(err)
			}
			o := microblog.NewOracle(ds)
			adaptertest.CompareMicroblog(t, s, o, ds.Users, "after Populate", microblog.Limit, 0, 1, 2, 3)
			at := ds.Tweets[len(ds.Tweets)-1].Time.Add(time.Second)
			for i, author := range []int64{2, 3, 2, 1} {
				tw := microblog.Tweet{ID: int64(len(ds.Tweets) + 1 + i), Author: author, Time: at, Body: fmt.Sprintf("posted %d|pipe", i)}
				if err := s.Post(ctx, tw); err != nil {
					t.Fatalf("Post: %v", err)
				}
				o.Post(tw)
			}
			adaptertest.CompareMicroblog(t, s, o, ds.Users, "after posts", microblog.Limit, 0, 1, 2, 3)
			if err := s.Post(ctx, ds.Tweets[0]); err == nil {
				t.Error("Post of an existing tweet id succeeded")
			}
			if c, err := s.Counts(ctx); err != nil || c.Tweets != int64(len(ds.Tweets)+4) {
				t.Errorf("Counts = %+v, %v; want %d tweets", c, err, len(ds.Tweets)+4)
			}
		})
	}
}

// TestInfoSaysCouchbaseMock: a result measured here must name the mock,
// its version and its gaps, never Couchbase Server.
func TestInfoSaysCouchbaseMock(t *testing.T) {
	db := openFresh(t, "&durability=majority")
	info, err := db.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "CouchbaseMock" || info.Version != CouchbaseMockVersion {
		t.Errorf("Info = %s %s, want CouchbaseMock %s", info.Name, info.Version, CouchbaseMockVersion)
	}
	if info.Config["stand_in"] == "" || !strings.Contains(info.Config["not_verified_here"], "durability levels") ||
		!strings.Contains(info.Config["durability"], NotVerified) {
		t.Errorf("Info.Config = %v: want the stand-in note and what is not verified here", info.Config)
	}
}

// TestIngestStoresExactly reads the records back, with plain bulk upserts
// and with observe-based durability (one replica): every record once, each
// field as generated. The study's load (8 sources in batches of 1,000)
// stores exactly too, and a reset removes it: 8,000 upserts (or removes)
// at once overflowed the SDK's queue of 2,048 before bulk requests were
// bounded (bulkInFlight).
func TestIngestStoresExactly(t *testing.T) {
	for _, tc := range []struct {
		name, opts string
		cfg        ingest.RunConfig
	}{
		{"bulk", "", ingest.RunConfig{Sources: 3, Records: 300, Batch: 64, Seed: 4}},
		{"replicate_to=1", "&replicate_to=1", ingest.RunConfig{Sources: 3, Records: 300, Batch: 64, Seed: 4}},
		{"the study's batches", "", ingest.RunConfig{Sources: 8, Records: 1000, Batch: 1000, Seed: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openFresh(t, tc.opts)
			s, err := db.Ingest(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			adaptertest.IngestStoresExactly(t, s, tc.cfg, db.StoredRecords)
			// A reset removes them all, as many at once as the view lists.
			if err := s.Reset(t.Context()); err != nil {
				t.Fatalf("reset: %v", err)
			}
			if n, err := s.Count(t.Context()); err != nil || n != 0 {
				t.Errorf("after the reset: %d records, %v", n, err)
			}
		})
	}
}

// TestDurabilityLevelRefusedByMock: CouchbaseMock has no synchronous
// durability, so a write asking for a level fails (which is why that path
// is marked not verified here) instead of passing silently.
func TestDurabilityLevelRefusedByMock(t *testing.T) {
	db := openFresh(t, "&durability=majority")
	s, err := db.Ingest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]ingest.Record, 2)
	ingest.Fill(recs, 1, 0, 0)
	if err := s.InsertBatch(t.Context(), recs); err == nil {
		t.Error("a write with durability=majority succeeded on CouchbaseMock, which has no durability levels: update the docs")
	}
}

// TestMicroblogModelMismatch: a prefix loaded with one model refuses
// another, and async is not offered.
func TestMicroblogModelMismatch(t *testing.T) {
	db := openFresh(t, "")
	ctx := t.Context()
	s, err := db.Microblog(ctx, microblog.Normalized)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Populate(ctx, adaptertest.TinyMicroblog()); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Microblog(ctx, microblog.Denormalized); err == nil || !strings.Contains(err.Error(), microblog.ErrModelMismatch.Error()) {
		t.Errorf("a normalized prefix accepted the denormalized model: %v", err)
	}
	if info, err := db.Info(ctx); err != nil || info.Config["microblog_model"] != "normalized" {
		t.Errorf("Info = %+v, %v", info, err)
	}
}

// TestPopulatePartRefusals: a part loaded twice, a part of another number
// of parts or of another model, and a part of a dataset loaded whole are
// refused (the suite checks the loading itself, with timeline=doc; this
// loads the parts with the view's timelines).
func TestPopulatePartRefusals(t *testing.T) {
	db := openFresh(t, "&timeline=view")
	whole := adaptertest.Open(t, Open, bucketDSN(t, db.cfg.Bucket)+"?prefix=w&timeline=view")
	adaptertest.MicroblogPartRefusals(t, db, whole, microblog.ErrModelMismatch)
}

// TestPopulatePartAgain: a part whose load failed half way is not recorded
// and is loaded again; with timeline=doc its appends to the followers'
// timeline documents must not be made twice. Loading part 0's documents
// twice before PopulatePart loads it a third time stands for that.
func TestPopulatePartAgain(t *testing.T) {
	db := openFresh(t, "&timeline=doc")
	ctx := t.Context()
	ds := adaptertest.TinyMicroblog()
	m := microblog.Denormalized
	parts := []microblog.Part{{I: 0, N: 2, First: 1, Last: 2}, {I: 1, N: 2, First: 3, Last: 5}}
	s := &mbStore{db: db, model: m}
	for range 2 {
		if err := s.load(ctx, ds, parts[0], true); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range parts {
		if err := db.PopulatePart(ctx, m, ds, p); err != nil {
			t.Fatalf("PopulatePart(%s): %v", p, err)
		}
	}
	st := adaptertest.OpenMicroblog(t, db, m)
	adaptertest.CompareMicroblog(t, st, microblog.NewOracle(ds), ds.Users, "after part 0 three times", microblog.Limit)
}

func TestParseDSN(t *testing.T) {
	t.Parallel()
	def := Config{ConnStr: "couchbase://127.0.0.1:11210", User: "default", Bucket: "default", Prefix: "fb", Stale: "false", Timeout: 30 * time.Second, Timeline: "view"}
	with := func(f func(*Config)) Config { c := def; f(&c); return c }
	tests := []struct {
		dsn     string
		want    Config
		wantErr string
	}{
		{"couchbase://127.0.0.1:11210", def, ""},
		{"couchbase://127.0.0.1:11210/default", def, ""},
		{"couchbase://u:secret@h1:1,h2:2/b?prefix=x_1&stale=ok&persist_to=1&replicate_to=2&timeout=5s&timeline=doc", Config{ConnStr: "couchbase://h1:1,h2:2",
			User: "u", Password: "secret", Bucket: "b", Prefix: "x_1", Stale: "ok", PersistTo: 1, ReplicateTo: 2, Timeout: 5 * time.Second, Timeline: "doc"}, ""},
		{"couchbase://h?timeline=table", Config{}, "want view or doc"},
		{"couchbase://127.0.0.1:11210?durability=majority", with(func(c *Config) { c.Durability = "majority" }), ""},
		{"couchbase://127.0.0.1:11210?durability=none", def, ""},
		{"couchbase://h?durability=all", Config{}, "want none, majority"},
		{"couchbase://h?durability=majority&replicate_to=1", Config{}, "exclude each other"},
		{"couchbase://h?prefix=a:b", Config{}, "letters, digits and _"},
		{"couchbase://h?stale=maybe", Config{}, "want false, ok"},
		{"couchbase://h?persist_to=9", Config{}, "want 0..4"},
		{"couchbase://h?timeout=0s", Config{}, "positive"},
		{"couchbase://h?nosuch=1", Config{}, "unknown option"},
		{"couchbase://u:secret@h:99999/b", Config{}, "port"},
		{"couchbase://u:secret@/b", Config{}, "want couchbase://"},
		{"couchbase://h/a/b", Config{}, "bucket name"},
		{"redis://h:1", Config{}, "want couchbase://"},
	}
	for _, tt := range tests {
		got, err := ParseDSN(tt.dsn)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseDSN(%q) error %v, want one containing %q", redact.DSN(tt.dsn), err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("ParseDSN error shows the password: %v", err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseDSN(%q) = %+v, %v; want %+v", redact.DSN(tt.dsn), got, err, tt.want)
		}
	}
}

// TestDescribeMarksNotVerified: `fieldbench list` must not present the
// durability levels as tested, and must name the mock.
func TestDescribeMarksNotVerified(t *testing.T) {
	t.Parallel()
	d := Adapter{}.Describe()
	if !strings.Contains(d, NotVerified) || !strings.Contains(d, "CouchbaseMock") {
		t.Errorf("Describe() = %q", d)
	}
}

// TestOpenErrorsHideThePassword: a server that does not answer gives an
// error without the password.
func TestOpenErrorsHideThePassword(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	db, err := Open(ctx, "couchbase://u:secret@127.0.0.1:1/b?timeout=1s")
	if err == nil {
		db.Close()
		t.Fatal("Open of a closed port succeeded")
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("Open error shows the password: %v", err)
	}
}

// TestConnectionLost: only a connection closed with the request in flight
// makes an upsert be sent again, however the SDK wraps it.
func TestConnectionLost(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&gocb.KeyValueError{InnerError: io.EOF}, true},
		{fmt.Errorf("upsert k: %w", gocb.KeyValueError{InnerError: io.ErrUnexpectedEOF}), true},
		{fmt.Errorf("write: %w", syscall.ECONNRESET), true},
		{&gocb.KeyValueError{InnerError: gocb.ErrAmbiguousTimeout}, false},
		{&gocb.KeyValueError{InnerError: gocb.ErrDurabilityImpossible}, false},
		{context.Canceled, false},
	} {
		if got := connectionLost(c.err); got != c.want {
			t.Errorf("connectionLost(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
