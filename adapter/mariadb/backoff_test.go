package mariadb

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter/adaptertest"
	"github.com/fieldbench/fieldbench/cluster"
)

// Finding 6 of issue 13 against a real MariaDB killed and restarted under
// load (its own server: the package's shared one must stay up).
func TestKilledServerIsRedialledWithBackoff(t *testing.T) {
	e, err := cluster.Get("mariadb")
	if err == nil {
		err = e.Check()
	}
	if err != nil {
		if testing.Short() {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "fb-mariadb-redial-")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	c, err := e.Up(ctx, dir, cluster.Options{Nodes: 1})
	cancel()
	t.Cleanup(func() {
		if c != nil {
			_ = e.Down(context.Background(), c)
		}
		if !t.Failed() {
			os.RemoveAll(dir)
		}
	})
	if err != nil {
		t.Fatalf("start MariaDB: %v", err)
	}
	db, err := Open(context.Background(), c.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	adaptertest.KilledServerRedial(t, e, c, db, func(ctx context.Context) error {
		_, err := db.first().ExecContext(ctx, "select 1")
		return err
	})
}
