package mongodb

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

// Finding 6 of issue 13 against a real server (FerretDB) killed and
// restarted under load, its own: the package's shared one must stay up.
// The driver's pools and its server monitor dial through the backoff.
func TestKilledServerIsRedialledWithBackoff(t *testing.T) {
	e, c := clustertest.OwnCluster(t, "mongodb", cluster.Options{Nodes: 1}, 3*time.Minute)
	db, err := Open(context.Background(), c.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	clustertest.KilledServerRedial(t, e, c, db, func(ctx context.Context) error {
		return db.db.RunCommand(ctx, bson.D{{Key: "ping", Value: 1}}).Err()
	})
}
