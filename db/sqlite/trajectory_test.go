package sqlite

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/recorder"
	"github.com/fieldbench/fieldbench/runner"
	"github.com/fieldbench/fieldbench/workload/trajectory"
)

func trajOpen(t *testing.T) (*DB, trajectory.Store) {
	t.Helper()
	db, err := Open(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "traj.db"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := db.Trajectory(t.Context())
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close(); db.Close() })
	return db, st
}

func trajGen(t *testing.T, scale float64, seed int64) *trajectory.Generator {
	t.Helper()
	g, err := trajectory.New(trajectory.Options{Scale: scale, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// trajLoad writes g's records through the driver's clients in mode, as a
// run's write phase does (random: 4 concurrent clients, shuffled).
func trajLoad(t *testing.T, st trajectory.Store, g *trajectory.Generator, mode trajectory.Mode, batch int) {
	t.Helper()
	cs, err := trajectory.WriteClients(st, g, mode, 4, batch, 5)
	if err != nil {
		t.Fatal(err)
	}
	rec := recorder.New(trajectory.Ops, time.Now())
	var wg sync.WaitGroup
	for _, c := range cs {
		h := rec.Handle()
		wg.Add(1)
		go func() {
			defer wg.Done()
			runner.Batch(t.Context(), []runner.Worker{c}, []*recorder.Handle{h}, c.Requests())
		}()
	}
	wg.Wait()
	for _, c := range cs {
		if c.Stats.Errors > 0 {
			t.Fatalf("write errors: %v", c.Stats.FirstErr)
		}
	}
}

// TestTrajectorySecondStore checks that a second store on the same file
// sees the written data (answers and Reset are checked by adaptertest).
func TestTrajectorySecondStore(t *testing.T) {
	t.Parallel()
	g := trajGen(t, 0.0005, 1)
	_, st := trajOpen(t)
	ctx := t.Context()
	trajLoad(t, st, g, trajectory.Random, 64)
	db2, err := Open(ctx, "sqlite://"+st.(*trajStore).db.path)
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	st2, err := db2.Trajectory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if c2, _ := st2.Counts(ctx); c2.Records != g.Len() || c2.Cells == 0 {
		t.Fatalf("second store counts %+v", c2)
	}
}

// TestTrajectoryQueryPlans checks that the queries use the R*Tree and the
// region index rather than scanning.
func TestTrajectoryQueryPlans(t *testing.T) {
	t.Parallel()
	db, _ := trajOpen(t)
	for _, tc := range []struct {
		name, q string
		args    []any
		want    []string
	}{
		{"distance", trajNearSQL, []any{1, 2, 0, 3, 0, 3, 9}, []string{"VIRTUAL TABLE INDEX", "INTEGER PRIMARY KEY"}},
		{"range", trajRangeSQL, []any{0, 0, 10, 0, 0, 10, 0, 10, 0, 10}, []string{"VIRTUAL TABLE INDEX", "INTEGER PRIMARY KEY"}},
		{"region", trajRegionSQL, []any{1, 144}, []string{"COVERING INDEX traj_records_region"}},
	} {
		rows, err := db.r.QueryContext(t.Context(), "explain query plan "+tc.q, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		all := strings.Join(plan, " | ")
		for _, w := range tc.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s plan %q lacks %q", tc.name, all, w)
			}
		}
		if strings.Contains(all, "SCAN traj_records") || strings.Contains(all, "SCAN c") {
			t.Errorf("%s plan scans a table: %q", tc.name, all)
		}
	}
}
