package mariadb

import (
	"context"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

// Finding 6 of issue 13 against a real MariaDB killed and restarted under
// load (its own server: the package's shared one must stay up).
func TestKilledServerIsRedialledWithBackoff(t *testing.T) {
	e, c := clustertest.OwnCluster(t, "mariadb", cluster.Options{Nodes: 1}, 2*time.Minute)
	db, err := Open(context.Background(), c.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	clustertest.KilledServerRedial(t, e, c, db, func(ctx context.Context) error {
		_, err := db.first().ExecContext(ctx, "select 1")
		return err
	})
}
