package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter/adaptertest"
	"github.com/fieldbench/fieldbench/cluster"
)

// Finding 6 of issue 13 against a real PostgreSQL killed and restarted
// under load (its own server: the package's shared one must stay up).
func TestKilledServerIsRedialledWithBackoff(t *testing.T) {
	ctx := context.Background()
	e, c := adaptertest.OwnCluster(t, "postgres", cluster.Options{Nodes: 1, Extra: testServer}, 3*time.Minute)
	db, err := Open(ctx, c.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	adaptertest.KilledServerRedial(t, e, c, db, func(ctx context.Context) error {
		_, err := db.w.Exec(ctx, "select 1")
		return err
	})
}
