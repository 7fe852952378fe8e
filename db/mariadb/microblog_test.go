package mariadb

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/fieldbench/fieldbench/adapter/adaptertest"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// TestMicroblogModelMismatch checks that an empty database switches model
// freely and a loaded one refuses another with microblog.ErrModelMismatch.
func TestMicroblogModelMismatch(t *testing.T) {
	t.Parallel()
	adaptertest.SwitchesModelWhenEmpty(t, openFresh(t), microblog.ErrModelMismatch)
}

// TestPartsFromTwoClients loads microblog parts through two handles (two
// sets of pools) on one database at once, as two processes of a sharded
// load do, and checks that parts that do not fit are refused.
func TestPartsFromTwoClients(t *testing.T) {
	t.Parallel()
	dsn := freshDSN(t)
	adaptertest.MicroblogPartsTwoClients(t, adaptertest.Open(t, Open, dsn), adaptertest.Open(t, Open, dsn), microblog.ErrModelMismatch)
}

// TestPartLoadsBesideAnOpenPart loads a part while another part's
// transaction has written all its rows but not committed: the part must
// not wait for it (the schema lock is shared between parts, and their
// inserts and INSERT ... SELECTs take no locks the other holds), and a
// schema change may not take the lock exclusive meanwhile (opening
// another model waits for the part, then refuses its data). Lock
// waits are cut to 2 s in this database's sessions, so a part that did
// wait fails with a lock wait timeout instead of passing late. Every
// model's tables are exercised.
func TestPartLoadsBesideAnOpenPart(t *testing.T) {
	t.Parallel()
	ds, err := microblog.Generate(microblog.GenOptions{Users: 80, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	open := microblog.Part{I: 1, N: 2, First: 41, Last: 80}
	loaded := microblog.Part{I: 0, N: 2, First: 1, Last: 40}
	for _, m := range microblog.Models {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db := adaptertest.Open(t, Open, freshDSN(t)+"?innodb_lock_wait_timeout=2")
			if err := db.ensureSchema(ctx, m); err != nil {
				t.Fatal(err)
			}
			tx, err := db.first().BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			if err := lockSchema(ctx, tx, false); err != nil {
				t.Fatal(err)
			}
			if err := insertPart(ctx, tx, m, ds, open); err != nil {
				t.Fatal(err)
			}
			// Meanwhile another model is opened: it must wait for the part
			// and then refuse its data, not switch the schema under it
			// (nothing is committed yet, so the database looks empty).
			other := microblog.Normalized
			if m == other {
				other = microblog.Denormalized
			}
			opened := make(chan error, 1)
			go func() {
				s, err := db.Microblog(ctx, other)
				if err == nil {
					s.Close()
				}
				opened <- err
			}()
			if err := db.PopulatePart(ctx, m, ds, loaded); err != nil {
				t.Fatalf("PopulatePart(%s) beside part %s's open transaction: %v", loaded, open, err)
			}
			// A schema change may not start while a part loads.
			err = db.withSchemaLock(ctx, true, func() error { return errors.New("the schema lock was exclusive") })
			if !errors.Is(err, errSchemaBusy) {
				t.Errorf("the exclusive schema lock while a part loads: %v; want errSchemaBusy", err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			if err := <-opened; !errors.Is(err, microblog.ErrModelMismatch) {
				t.Errorf("Microblog(%s) while a %s part loads: %v; want microblog.ErrModelMismatch once the part is in", other, m, err)
			}
			s := adaptertest.OpenMicroblog(t, db, m)
			whole := microblog.Counts{Users: int64(ds.Users), Follows: int64(len(ds.Follows)), Tweets: int64(len(ds.Tweets))}
			if c, err := s.Counts(ctx); err != nil || c != whole {
				t.Errorf("Counts after both parts = %+v, %v; want %+v", c, err, whole)
			}
			adaptertest.CompareMicroblog(t, s, microblog.NewOracle(ds), ds.Users, "after both parts", microblog.Limit)
		})
	}
}

// TestPartRefusals: parts that cannot join the load are refused before
// they write, and a database loaded whole refuses every part.
func TestPartRefusals(t *testing.T) {
	t.Parallel()
	adaptertest.MicroblogPartRefusals(t, openFresh(t), openFresh(t), microblog.ErrModelMismatch)
}
