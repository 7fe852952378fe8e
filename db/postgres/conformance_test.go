package postgres

import (
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/adapter/adaptertest"
	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
	"github.com/fieldbench/fieldbench/workload/microblog"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// TestConformance runs the shared suite, each family in a fresh database.
func TestConformance(t *testing.T) {
	adaptertest.Run(t, func(t *testing.T) adapter.DB {
		return openFresh(t)
	})
}

// TestReadFromReplicas starts a primary and two streaming replicas and
// opens the DSN with read_from=replicas: writes go to the primary, reads
// round robin to the replicas. Replicas lag, so every comparison with the
// oracle first waits until the replicas replayed the primary's WAL
// position.
func TestReadFromReplicas(t *testing.T) {
	t.Parallel()
	_, c := clustertest.OwnCluster(t, "postgres", cluster.Options{Nodes: 3, Extra: map[string]string{"read_from": "replicas", "fsync": "off"}}, 3*time.Minute)
	ctx := t.Context()
	db, err := Open(ctx, c.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if !db.ReadsFromReplicas() || len(db.reads) != 2 {
		t.Fatalf("reads go to %d pools (replicas: %v)", len(db.reads), db.ReadsFromReplicas())
	}
	for _, p := range db.reads {
		var rec bool
		if err := p.QueryRow(ctx, "select pg_is_in_recovery()").Scan(&rec); err != nil || !rec {
			t.Fatalf("a read pool is not on a replica: %v %v", rec, err)
		}
	}
	caughtUp := func() {
		t.Helper()
		var lsn string
		if err := db.w.QueryRow(ctx, "select pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for _, p := range db.reads {
			for {
				var ok bool
				if err := p.QueryRow(ctx, "select pg_last_wal_replay_lsn() >= $1::pg_lsn", lsn).Scan(&ok); err != nil {
					t.Fatal(err)
				}
				if ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("replica did not replay the primary's WAL within 30s")
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	s, err := db.Microblog(ctx, microblog.Denormalized)
	if err != nil {
		t.Fatal(err)
	}
	ds := adaptertest.TinyMicroblog()
	if err := s.Populate(ctx, ds); err != nil {
		t.Fatal(err)
	}
	o := microblog.NewOracle(ds)
	tw := microblog.Tweet{ID: 100, Author: 3, Time: time.Now().UTC().Truncate(time.Microsecond), Body: "via primary"}
	if err := s.Post(ctx, tw); err != nil {
		t.Fatal(err)
	}
	o.Post(tw)
	caughtUp()
	for range 2 { // both replicas (round robin)
		adaptertest.CompareMicroblog(t, s, o, ds.Users, "on the replicas", microblog.Limit)
	}
	ws, err := db.Wiki(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Populate(ctx, adaptertest.TinyArticles(5)); err != nil {
		t.Fatal(err)
	}
	if err := ws.Update(ctx, 2, "21"); err != nil {
		t.Fatal(err)
	}
	caughtUp()
	for range 2 {
		if a, err := ws.Read(ctx, 2); err != nil || a.Body != "21" {
			t.Errorf("Read from a replica = %+v, %v", a, err)
		}
	}
	if _, err := ws.Read(ctx, 9); err == nil {
		t.Error("missing article found")
	}
	var _ wiki.Store = ws
}
