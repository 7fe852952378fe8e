package null_test

import (
	"context"
	"errors"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/adapter/null"
	"github.com/fieldbench/fieldbench/result"
	"github.com/fieldbench/fieldbench/workload"
	"github.com/fieldbench/fieldbench/workload/ingest"
	"github.com/fieldbench/fieldbench/workload/microblog"
	"github.com/fieldbench/fieldbench/workload/trajectory"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

func open(t *testing.T) *null.DB {
	t.Helper()
	a, db, err := adapter.Open(context.Background(), "null://")
	if err != nil {
		t.Fatal(err)
	}
	if a.Name() != result.HarnessOnlyAdapter {
		t.Fatalf("null:// opened adapter %q", a.Name())
	}
	return db.(*null.DB)
}

// TestEveryFamily: the null adapter implements every registered workload.
func TestEveryFamily(t *testing.T) {
	t.Parallel()
	var want []string
	for _, w := range workload.Registered() {
		want = append(want, w.Meta().Name)
	}
	got := null.Adapter{}.Families()
	sort.Strings(want)
	sort.Strings(got)
	if !reflect.DeepEqual(got, want) || len(got) < 4 {
		t.Fatalf("families %v, want every workload %v", got, want)
	}
}

func TestOpenAndInfo(t *testing.T) {
	t.Parallel()
	db := open(t)
	info, err := db.Info(context.Background())
	if err != nil || !strings.Contains(info.Version, result.HarnessOnlyMark) {
		t.Fatalf("info %+v %v: must say %q", info, err, result.HarnessOnlyMark)
	}
	if _, err := (null.Adapter{}).Open(context.Background(), "null://x"); err == nil {
		t.Fatal("null://x must be refused")
	}
}

func TestMicroblog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := open(t)
	ds, err := microblog.Generate(microblog.GenOptions{Users: 50, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range microblog.Models {
		st, err := db.Microblog(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := st.(microblog.Materializer); ok != (m == microblog.Async) {
			t.Fatalf("%s: materializer %v", m, ok)
		}
	}
	st, _ := db.Microblog(ctx, microblog.Normalized)
	if err := st.Populate(ctx, ds); err != nil {
		t.Fatal(err)
	}
	c, _ := st.Counts(ctx)
	model, _ := db.MicroblogModel(ctx)
	maxID, _ := st.MaxTweetID(ctx)
	if c.Users != 50 || c.Follows != int64(len(ds.Follows)) || model != microblog.Normalized || maxID != int64(len(ds.Tweets)) {
		t.Fatalf("after populate: counts %+v model %q max id %d", c, model, maxID)
	}
	if err := st.Post(ctx, microblog.Tweet{ID: 1}); err != nil {
		t.Fatal(err)
	}
	if tl, err := st.Timeline(ctx, 1, 50); err != nil || len(tl) != 0 {
		t.Fatalf("timeline %v %v: want nothing", tl, err)
	}
}

func TestWikiIngestTrajectory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := open(t)
	g, err := wiki.NewGenerator(1, 20)
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := db.Wiki(ctx)
	c, err := ws.Populate(ctx, g.Source(1, 20))
	if err != nil || c.Articles != 20 || c.MaxID != 20 {
		t.Fatalf("populate %+v %v", c, err)
	}
	if c2, _ := ws.Counts(ctx); c2 != c {
		t.Fatalf("counts %+v, want %+v", c2, c)
	}
	if a, err := ws.Read(ctx, 7); err != nil || a.ID != 7 {
		t.Fatalf("read %+v %v", a, err)
	}
	if err := ws.Update(ctx, 7, "x"); err != nil {
		t.Fatal(err)
	}

	is, _ := db.Ingest(ctx)
	if err := is.InsertBatch(ctx, make([]ingest.Record, 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := is.Count(ctx); !errors.Is(err, null.ErrNotApplicable) || !strings.Contains(err.Error(), "--verify") {
		t.Fatalf("count: %v: verification must be refused as not applicable", err)
	}

	ts, _ := db.Trajectory(ctx)
	if err := ts.Write(ctx, make([]trajectory.Record, 4)); err != nil {
		t.Fatal(err)
	}
	if tc, _ := ts.Counts(ctx); tc.Records != 4 {
		t.Fatalf("trajectory counts %+v", tc)
	}
	if _, ok, err := ts.Region(ctx, 0, 0); ok || err != nil {
		t.Fatal("region must find nothing")
	}
	if err := ts.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if tc, _ := ts.Counts(ctx); tc.Records != 0 {
		t.Fatalf("after reset %+v", tc)
	}
}
