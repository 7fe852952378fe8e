package couchdb

import (
	"context"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

// Finding 6 of issue 13 against a real server (pouchdb-server) killed and
// restarted under load, its own: the package's shared pair must stay up.
// The HTTP Transport dials through the backoff.
func TestKilledServerIsRedialledWithBackoff(t *testing.T) {
	e, c := clustertest.OwnCluster(t, "couchdb", cluster.Options{Nodes: 1}, 3*time.Minute)
	db, err := Open(context.Background(), c.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	clustertest.KilledServerRedial(t, e, c, db, func(ctx context.Context) error {
		_, err := db.welcome(ctx)
		return err
	})
}
