package mongodb

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/adapter/adaptertest"
	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/workload/ingest"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// The package's tests share one FerretDB server, started by the mongodb
// engine on first use (a first build included) and stopped by TestMain;
// every test works in a database of its own.
var server = &clustertest.SharedCluster{Engine: "mongodb", Options: cluster.Options{Nodes: 1}, Timeout: 15 * time.Minute}

func TestMain(m *testing.M) { os.Exit(server.Stop(m.Run())) }

// addr returns the shared server's host:port.
func addr(t testing.TB) string { return server.Get(t).Nodes[0].Addr() }

var databases atomic.Int64

// openFresh opens a new database on the shared server, dropped when the
// test ends.
func openFresh(t testing.TB, opts string) *DB {
	t.Helper()
	name := fmt.Sprintf("fbt_%d_%d", os.Getpid()%100000, databases.Add(1))
	db := adaptertest.Open(t, Open, "mongodb://"+addr(t)+"/"+name+"?"+opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = db.Drop(ctx)
	})
	return db
}

// TestConformance runs the shared suite against FerretDB, each family in a
// fresh database (geo=grid: the trajectory path FerretDB answers), the
// families side by side: one after the other they took 204 s in CI
// (2026-12-02, docs/testing.md), each waiting on FerretDB's latency.
func TestConformance(t *testing.T) {
	adaptertest.RunParallel(t, func(t *testing.T) adapter.DB { return openFresh(t, "") })
}

// TestInfoSaysFerretDB: a result measured here must say FerretDB, with
// FerretDB's version, and never call itself MongoDB.
func TestInfoSaysFerretDB(t *testing.T) {
	db := openFresh(t, "geo=2dsphere")
	info, err := db.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "FerretDB" || info.Version != FerretDBVersion {
		t.Errorf("Info = %s %s, want FerretDB %s", info.Name, info.Version, FerretDBVersion)
	}
	if info.Config["stand_in"] == "" || !strings.HasPrefix(info.Config["mongodb_compat"], "7.") {
		t.Errorf("Info.Config = %v: want the stand-in note and the MongoDB version FerretDB claims", info.Config)
	}
	if !strings.Contains(info.Config["geo"], NotVerified) {
		t.Errorf("Info.Config[geo] = %q: the 2dsphere path must say %q", info.Config["geo"], NotVerified)
	}
}

// TestIngestStoresExactly reads the records back, with both ways of
// sending a batch: every record once, each field as generated.
func TestIngestStoresExactly(t *testing.T) {
	for _, mode := range []IngestMode{InsertMany, BulkWrite} {
		t.Run(string(mode), func(t *testing.T) {
			db := openFresh(t, "ingest="+string(mode))
			s, err := db.Ingest(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			adaptertest.IngestStoresExactly(t, s, ingest.RunConfig{Sources: 3, Records: 400, Batch: 64, Seed: 4}, db.StoredRecords)
		})
	}
}

// TestMicroblogModelMismatch: a database loaded with one model refuses
// another.
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
		t.Errorf("a normalized database accepted the denormalized model: %v", err)
	}
	if info, err := db.Info(ctx); err != nil || info.Config["microblog_model"] != "normalized" {
		t.Errorf("Info = %+v, %v", info, err)
	}
}

// TestMicroblogPartRefusals: parts that cannot join the load are refused
// before they write (adaptertest.MicroblogPartRefusals), and so is a
// part sent with another parts= than the others: its documents would go
// to collections the readers never look in.
func TestMicroblogPartRefusals(t *testing.T) {
	adaptertest.MicroblogPartRefusals(t, openFresh(t, ""), openFresh(t, ""), microblog.ErrModelMismatch)
	db := openFresh(t, "")
	first := microblog.Part{I: 0, N: 3, First: 1, Last: 1}
	if err := db.PopulatePart(t.Context(), microblog.Normalized, adaptertest.TinyMicroblog(), first); err != nil {
		t.Fatalf("PopulatePart(%s): %v", first, err)
	}
	other := adaptertest.Open(t, Open, "mongodb://"+addr(t)+"/"+db.Config().Database+"?parts=8")
	ds := adaptertest.TinyMicroblog()
	part := microblog.Part{I: 1, N: 3, First: 2, Last: 3}
	err := other.PopulatePart(t.Context(), microblog.Normalized, ds, part)
	if err == nil || !strings.Contains(err.Error(), "parts=64") || !strings.Contains(err.Error(), "parts=8") {
		t.Errorf("PopulatePart(%s) with parts=8 beside parts=64 = %v; want a refusal naming both", part, err)
	}
	want := ds.PartSize(microblog.Part{I: 0, N: 3, First: 1, Last: 1}).Tweets
	if n, err := db.countAll(t.Context(), mbTweets); err != nil || n != want {
		t.Errorf("tweets after the refused part = %d, %v; want part 0/3's %d", n, err, want)
	}
}

func TestParseDSN(t *testing.T) {
	tests := []struct {
		dsn     string
		want    Config
		wantErr string
	}{
		{"mongodb://127.0.0.1:27017/db", Config{URI: "mongodb://127.0.0.1:27017/db", Database: "db", Geo: GeoGrid, Ingest: InsertMany, Batch: 1000, Parts: 64}, ""},
		{"mongodb://127.0.0.1:1", Config{URI: "mongodb://127.0.0.1:1", Database: "fieldbench", Geo: GeoGrid, Ingest: InsertMany, Batch: 1000, Parts: 64}, ""},
		{"mongodb://u:secret@h1:1,h2:2/db?geo=2dsphere&w=majority&ingest=bulkwrite&batch=50",
			Config{URI: "mongodb://u:secret@h1:1,h2:2/db?w=majority", Database: "db", Geo: Geo2DSphere, Ingest: BulkWrite, Batch: 50, Parts: 64}, ""},
		{"mongodb+srv://cluster.example/db?retryWrites=true", Config{URI: "mongodb+srv://cluster.example/db?retryWrites=true", Database: "db", Geo: GeoGrid, Ingest: InsertMany, Batch: 1000, Parts: 64}, ""},
		{"mongodb://h:1/db?geo=2d", Config{}, "want grid or 2dsphere"},
		{"mongodb://h:1/db?ingest=copy", Config{}, "want insertmany or bulkwrite"},
		{"mongodb://h:1/db?batch=0", Config{}, "want 1..100000"},
		{"mongodb://h:1/db?parts=1", Config{URI: "mongodb://h:1/db", Database: "db", Geo: GeoGrid, Ingest: InsertMany, Batch: 1000, Parts: 1}, ""},
		{"mongodb://h:1/db?parts=0", Config{}, "want 1..1024"},
		{"mongodb://h:1/a.b", Config{}, "database"},
		{"mongodb://u:secret@/db", Config{}, "must look like"},
		{"redis://h:1", Config{}, "must look like"},
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

func TestGridOf(t *testing.T) {
	for _, tt := range []struct{ v, want int64 }{{0, 0}, {999, 0}, {1000, 1}, {-1, -1}, {-1000, -1}, {-1001, -2}} {
		if got := gridOf(tt.v); got != tt.want {
			t.Errorf("gridOf(%d) = %d, want %d", tt.v, got, tt.want)
		}
	}
}

// TestDescribeMarksGeoNotVerified: `fieldbench list` shows the adapter's
// description, which must not present the 2dsphere path as tested.
func TestDescribeMarksGeoNotVerified(t *testing.T) {
	d := Adapter{}.Describe()
	if !strings.Contains(d, "2dsphere: "+NotVerified) || !strings.Contains(d, "FerretDB") {
		t.Errorf("Describe() = %q", d)
	}
}

// TestOpenErrorsHideThePassword: a DSN the driver refuses, or a server
// that does not answer, gives an error without the password.
func TestOpenErrorsHideThePassword(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{
		"mongodb://u:secret@127.0.0.1:1/db?connectTimeoutMS=bad",
		"mongodb://u:secret@127.0.0.1:1/db?serverSelectionTimeoutMS=200",
	} {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		db, err := Open(ctx, dsn)
		cancel()
		if err == nil {
			db.Close()
			t.Errorf("Open(%s) succeeded", redact.DSN(dsn))
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("Open error shows the password: %v", err)
		}
	}
}

// TestMicroblogBodyReads: a normalized line's bodies read with one $in per
// partition and with one find per tweet give the oracle's answers.
func TestMicroblogBodyReads(t *testing.T) {
	adaptertest.BodyReads(t, openFresh(t, ""))
}
