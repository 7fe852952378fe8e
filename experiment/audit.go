package experiment

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/fieldbench/fieldbench/workload"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// Ledger remembers every post a run attempted: acknowledged by the database
// or failed (an error or timeout, whose outcome the client cannot know). It
// is what the durability audit checks the database against, like Jepsen's
// set checker: acknowledged writes must all be there after the run.
type Ledger struct {
	mu     sync.Mutex
	acked  map[int64]microblog.Tweet
	failed map[int64]microblog.Tweet
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{acked: map[int64]microblog.Tweet{}, failed: map[int64]microblog.Tweet{}}
}

// Acked records a post the database acknowledged.
func (l *Ledger) Acked(t microblog.Tweet) {
	l.mu.Lock()
	l.acked[t.ID] = t
	l.mu.Unlock()
}

// Failed records a post that returned an error.
func (l *Ledger) Failed(t microblog.Tweet, _ error) {
	l.mu.Lock()
	l.failed[t.ID] = t
	l.mu.Unlock()
}

// Audit is what reading every attempted post back found.
type Audit struct {
	Acknowledged int64 `json:"acknowledged"`
	// OK: acknowledged, in the author's userline with its body, and in the
	// timeline of every follower.
	OK int64 `json:"ok"`
	// Lost: acknowledged but not in the author's userline.
	Lost int64 `json:"lost"`
	// Stale: acknowledged and in the userline, but missing from at least one
	// follower's timeline or stored with another body.
	Stale int64 `json:"stale"`
	// NeverAckPresent: the client saw an error, yet the post is stored
	// (the write happened; the acknowledgement was lost).
	NeverAckPresent int64 `json:"never_acknowledged_present"`
	// NeverAckAbsent: the client saw an error and the post is not stored.
	NeverAckAbsent int64 `json:"never_acknowledged_absent"`
	// LostIDs and StaleIDs are the first few, for the report.
	LostIDs  []int64 `json:"lost_ids,omitempty"`
	StaleIDs []int64 `json:"stale_ids,omitempty"`

	// lost and stale are every such id, for a second read (Reread).
	lost, stale []int64
}

// Extra is the audit as the summary's flat figures (keys audit_*).
func (a Audit) Extra() map[string]float64 {
	return map[string]float64{
		"audit_acknowledged":               float64(a.Acknowledged),
		"audit_ok":                         float64(a.OK),
		"audit_lost":                       float64(a.Lost),
		"audit_stale":                      float64(a.Stale),
		"audit_never_acknowledged_present": float64(a.NeverAckPresent),
		"audit_never_acknowledged_absent":  float64(a.NeverAckAbsent),
	}
}

// maxIDs is how many lost or stale ids an audit keeps.
const maxIDs = 20

// AuditMicroblog reads back, through store, every post in l: each author's
// whole userline, and the whole timeline of each follower of an author who
// posted. Reads use limits large enough to return everything, so nothing is
// missed because it fell out of the newest 50. Run it after the load has
// stopped (and, for the async model, after the materializer caught up).
func AuditMicroblog(ctx context.Context, store microblog.Store, ds *microblog.Dataset, l *Ledger) (Audit, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var a Audit
	a.Acknowledged = int64(len(l.acked))
	posts := make([]microblog.Tweet, 0, len(l.acked)+len(l.failed))
	for _, t := range l.acked {
		posts = append(posts, t)
	}
	for _, t := range l.failed {
		posts = append(posts, t)
	}
	rb, err := readBack(ctx, store, ds, posts, len(posts))
	if err != nil {
		return a, err
	}
	for _, id := range sortedKeys(l.acked) {
		switch rb.verdict(ds, l.acked[id]) {
		case postLost:
			a.Lost++
			a.lost = append(a.lost, id)
			if len(a.LostIDs) < maxIDs {
				a.LostIDs = append(a.LostIDs, id)
			}
		case postStale:
			a.Stale++
			a.stale = append(a.stale, id)
			if len(a.StaleIDs) < maxIDs {
				a.StaleIDs = append(a.StaleIDs, id)
			}
		default:
			a.OK++
		}
	}
	for id := range l.failed {
		if _, ok := rb.stored[id]; ok {
			a.NeverAckPresent++
		} else {
			a.NeverAckAbsent++
		}
	}
	return a, nil
}

// Reread is what a second read of the posts an audit missed found, through
// a store whose reads ask every replica (microblog.StrongReader: Cassandra
// at ALL). A post the audit called lost but found here sits on some
// replica the run's reads did not ask, which consistency ONE allows; one
// missing here too is on no running replica.
type Reread struct {
	// Level is the read level of the second pass ("ALL").
	Level string `json:"level"`
	// LostFound: lost at the run's level, present here (on some replica).
	LostFound int64 `json:"lost_found"`
	// LostNowhere: lost at the run's level and missing here too.
	LostNowhere int64 `json:"lost_nowhere"`
	// StaleComplete: stale at the run's level, whole here (userline with
	// its body and every follower's timeline).
	StaleComplete int64 `json:"stale_complete"`
	// StaleStill: stale at the run's level and here too.
	StaleStill int64 `json:"stale_still"`
}

// Extra is the second read as the summary's flat figures.
func (r Reread) Extra() map[string]float64 {
	return map[string]float64{
		"audit_reread_lost_found":     float64(r.LostFound),
		"audit_reread_lost_nowhere":   float64(r.LostNowhere),
		"audit_reread_stale_complete": float64(r.StaleComplete),
		"audit_reread_stale_still":    float64(r.StaleStill),
	}
}

// RereadMicroblog reads the posts a, the audit of l, found lost or stale
// again through strong, a view of the store reading at the level named
// level, and sorts them by what it finds there.
func RereadMicroblog(ctx context.Context, strong microblog.Store, level string, ds *microblog.Dataset, l *Ledger, a Audit) (Reread, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := Reread{Level: level}
	posts := make([]microblog.Tweet, 0, len(a.lost)+len(a.stale))
	for _, id := range a.lost {
		posts = append(posts, l.acked[id])
	}
	for _, id := range a.stale {
		posts = append(posts, l.acked[id])
	}
	if len(posts) == 0 {
		return r, nil
	}
	rb, err := readBack(ctx, strong, ds, posts, len(l.acked)+len(l.failed))
	if err != nil {
		return r, err
	}
	for _, id := range a.lost {
		if rb.verdict(ds, l.acked[id]) == postLost {
			r.LostNowhere++
		} else {
			r.LostFound++
		}
	}
	for _, id := range a.stale {
		if rb.verdict(ds, l.acked[id]) == postOK {
			r.StaleComplete++
		} else {
			r.StaleStill++
		}
	}
	return r, nil
}

// readings holds what one pass read: the posts found in their authors'
// userlines, and the post ids in each follower's timeline.
type readings struct {
	stored     map[int64]microblog.Tweet
	inTimeline map[int64]map[int64]bool // user -> tweet ids
}

type postVerdict int

const (
	postOK postVerdict = iota
	postLost
	postStale
)

// readBack reads, through store, the whole userline of every author of
// posts and the whole timeline of every follower of those authors. run is
// how many posts the run attempted, for a read limit above everything that
// can be stored for one user.
func readBack(ctx context.Context, store microblog.Store, ds *microblog.Dataset, posts []microblog.Tweet, run int) (readings, error) {
	rb := readings{stored: map[int64]microblog.Tweet{}, inTimeline: map[int64]map[int64]bool{}}
	var counts microblog.Counts
	_, err := readRetry.Do(ctx, func(ctx context.Context) (err error) {
		counts, err = store.Counts(ctx)
		return err
	})
	if err != nil {
		return rb, fmt.Errorf("audit: count stored data: %w", err)
	}
	limit := int(counts.Tweets) + run + 1
	authors := map[int64]int{}
	readers := map[int64]int{}
	for _, t := range posts {
		authors[t.Author]++
		for _, f := range ds.Followers(t.Author) {
			readers[f]++
		}
	}
	for _, u := range sortedKeys(authors) {
		line, err := again(ctx, func() ([]microblog.Tweet, error) { return store.Userline(ctx, u, limit) })
		if err != nil {
			return rb, fmt.Errorf("audit: userline of user %d: %w", u, err)
		}
		for _, t := range line {
			rb.stored[t.ID] = t
		}
	}
	for _, u := range sortedKeys(readers) {
		tl, err := again(ctx, func() ([]microblog.Tweet, error) { return store.Timeline(ctx, u, limit) })
		if err != nil {
			return rb, fmt.Errorf("audit: timeline of user %d: %w", u, err)
		}
		ids := make(map[int64]bool, len(tl))
		for _, t := range tl {
			ids[t.ID] = true
		}
		rb.inTimeline[u] = ids
	}
	return rb, nil
}

// readTries is how many times the audit tries one read: a read at ALL on
// a cluster whose restarted nodes are still warming up times out now and
// then ("received only 2 responses"), and a read changes nothing, so it is
// safe to repeat; waits of 1, 2 and 4 s between tries.
const readTries = 4

// readRetry is the audit's policy for one read.
var readRetry = workload.Retry{Max: readTries - 1, Backoff: time.Second}

// again runs read up to readTries times while it fails.
func again(ctx context.Context, read func() ([]microblog.Tweet, error)) ([]microblog.Tweet, error) {
	var out []microblog.Tweet
	_, err := readRetry.Do(ctx, func(ctx context.Context) (err error) {
		out, err = read()
		return err
	})
	return out, err
}

// verdict judges one acknowledged post against what was read: lost when
// not in its author's userline, stale when stored with another body or
// missing from a follower's timeline.
func (rb readings) verdict(ds *microblog.Dataset, t microblog.Tweet) postVerdict {
	got, ok := rb.stored[t.ID]
	if !ok {
		return postLost
	}
	if got.Body != t.Body {
		return postStale
	}
	for _, f := range ds.Followers(t.Author) {
		if !rb.inTimeline[f][t.ID] {
			return postStale
		}
	}
	return postOK
}

func sortedKeys[V any](m map[int64]V) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
