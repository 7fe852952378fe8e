package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

// Finding 6 of issue 13 against a real PostgreSQL killed and restarted
// under load (its own server: the package's shared one must stay up).
func TestKilledServerIsRedialledWithBackoff(t *testing.T) {
	ctx := context.Background()
	e, c := clustertest.OwnCluster(t, "postgres", cluster.Options{Nodes: 1, Extra: testServer}, 3*time.Minute)
	db, err := Open(ctx, c.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	clustertest.KilledServerRedial(t, e, c, db, func(ctx context.Context) error {
		_, err := db.w.Exec(ctx, "select 1")
		return err
	})
}
