package experiment

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/fieldbench/fieldbench/adapter"
	_ "github.com/fieldbench/fieldbench/db/sqlite"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// TestAuditMicroblog audits posts against a real (embedded SQLite) store in
// each of the audit's cases: acknowledged and intact, acknowledged but
// lost, acknowledged but missing from a follower's timeline, and failed
// posts that did or did not land.
func TestAuditMicroblog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "audit.db")
	_, db, err := adapter.Open(ctx, "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	store, err := db.(microblog.Backend).Microblog(ctx, microblog.Denormalized)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ds, err := microblog.Generate(microblog.GenOptions{Users: 40, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Populate(ctx, ds); err != nil {
		t.Fatal(err)
	}
	maxID, err := store.MaxTweetID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// An author with followers, so timelines matter.
	var author int64
	for u := int64(1); u <= 40; u++ {
		if ds.FollowerCount(u) > 0 {
			author = u
			break
		}
	}
	tweet := func(k int64) microblog.Tweet {
		return microblog.Tweet{ID: maxID + k, Author: author, Time: time.Now().UTC().Truncate(time.Microsecond).Add(time.Duration(k) * time.Millisecond), Body: "audit"}
	}
	l := NewLedger()
	post := func(tw microblog.Tweet) {
		if err := store.Post(ctx, tw); err != nil {
			t.Fatal(err)
		}
	}
	// 1-3: acknowledged and stored.
	for k := int64(1); k <= 3; k++ {
		post(tweet(k))
		l.Acked(tweet(k))
	}
	// 4: acknowledged, never stored (lost).
	l.Acked(tweet(4))
	// 5: acknowledged, stored, then removed from one follower's timeline
	// (stale).
	post(tweet(5))
	l.Acked(tweet(5))
	follower := ds.Followers(author)[0]
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.ExecContext(ctx, "delete from timeline where owner = ? and tweet_id = ?", follower, tweet(5).ID); err != nil {
		t.Fatal(err)
	}
	// 6: failed, yet stored; 7: failed, not stored.
	post(tweet(6))
	l.Failed(tweet(6), errors.New("timeout"))
	l.Failed(tweet(7), errors.New("unavailable"))

	a, err := AuditMicroblog(ctx, store, ds, l)
	if err != nil {
		t.Fatal(err)
	}
	want := Audit{Acknowledged: 5, OK: 3, Lost: 1, Stale: 1, NeverAckPresent: 1, NeverAckAbsent: 1,
		LostIDs: []int64{tweet(4).ID}, StaleIDs: []int64{tweet(5).ID}}
	if a.Acknowledged != want.Acknowledged || a.OK != want.OK || a.Lost != want.Lost || a.Stale != want.Stale ||
		a.NeverAckPresent != want.NeverAckPresent || a.NeverAckAbsent != want.NeverAckAbsent ||
		len(a.LostIDs) != 1 || a.LostIDs[0] != want.LostIDs[0] || len(a.StaleIDs) != 1 || a.StaleIDs[0] != want.StaleIDs[0] {
		t.Fatalf("audit = %+v\nwant    %+v", a, want)
	}
	if x := a.Extra(); x["audit_lost"] != 1 || x["audit_ok"] != 3 || len(x) != 6 {
		t.Errorf("Extra = %v", x)
	}

	// The re-read, first with nothing changed: both still missing.
	r, err := RereadMicroblog(ctx, store, "same", ds, l, a)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Reread{Level: "same", LostNowhere: 1, StaleStill: 1}); r != want {
		t.Errorf("re-read of an unchanged store = %+v, want %+v", r, want)
	}
	// Then as a read of every replica finds them: the lost post stored
	// and the stale one back in its follower's timeline.
	post(tweet(4))
	if _, err := raw.ExecContext(ctx, "insert into timeline (owner, time, tweet_id, author, body) select ?, time, id, author, body from tweets where id = ?", follower, tweet(5).ID); err != nil {
		t.Fatal(err)
	}
	r, err = RereadMicroblog(ctx, store, "all", ds, l, a)
	if err != nil {
		t.Fatal(err)
	}
	if want := (Reread{Level: "all", LostFound: 1, StaleComplete: 1}); r != want {
		t.Errorf("re-read after repair = %+v, want %+v", r, want)
	}
	if x := r.Extra(); x["audit_reread_lost_found"] != 1 || x["audit_reread_stale_complete"] != 1 || len(x) != 4 {
		t.Errorf("Reread.Extra = %v", x)
	}
}
