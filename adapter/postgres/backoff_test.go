package postgres

import (
	"context"
	"os"
	"testing"

	"github.com/fieldbench/fieldbench/adapter/adaptertest"
	"github.com/fieldbench/fieldbench/cluster"
)

// Finding 6 of issue 13 against a real PostgreSQL killed and restarted
// under load (its own server: the package's shared one must stay up).
func TestKilledServerIsRedialledWithBackoff(t *testing.T) {
	requireServers(t)
	ctx := context.Background()
	c, dir, err := upCluster(ctx, 1, map[string]string{"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"})
	e, _ := cluster.Get("postgres")
	t.Cleanup(func() {
		if c != nil {
			_ = e.Down(context.Background(), c)
		}
		if dir != "" && !t.Failed() {
			os.RemoveAll(dir)
		}
	})
	if err != nil {
		t.Fatalf("start PostgreSQL: %v", err)
	}
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
