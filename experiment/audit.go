package experiment

import (
	"context"
	"fmt"
	"sort"
	"sync"

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

	// Per author: ids posted during the run (acked or failed).
	byAuthor := map[int64]int{}
	for _, t := range l.acked {
		byAuthor[t.Author]++
	}
	for _, t := range l.failed {
		byAuthor[t.Author]++
	}
	counts, err := store.Counts(ctx)
	if err != nil {
		return a, fmt.Errorf("audit: count stored data: %w", err)
	}
	// A limit above everything that can be stored for one user.
	limit := int(counts.Tweets) + len(l.acked) + len(l.failed) + 1

	stored := map[int64]microblog.Tweet{}
	authors := sortedKeys(byAuthor)
	for _, u := range authors {
		line, err := store.Userline(ctx, u, limit)
		if err != nil {
			return a, fmt.Errorf("audit: userline of user %d: %w", u, err)
		}
		for _, t := range line {
			stored[t.ID] = t
		}
	}
	// Timelines of every follower of an author with an acknowledged post.
	inTimeline := map[int64]map[int64]bool{} // user -> tweet ids
	readers := map[int64]int{}
	for _, t := range l.acked {
		for _, f := range ds.Followers(t.Author) {
			readers[f]++
		}
	}
	for _, u := range sortedKeys(readers) {
		tl, err := store.Timeline(ctx, u, limit)
		if err != nil {
			return a, fmt.Errorf("audit: timeline of user %d: %w", u, err)
		}
		ids := make(map[int64]bool, len(tl))
		for _, t := range tl {
			ids[t.ID] = true
		}
		inTimeline[u] = ids
	}

	for _, id := range sortedKeys(l.acked) {
		t := l.acked[id]
		got, ok := stored[id]
		if !ok {
			a.Lost++
			if len(a.LostIDs) < maxIDs {
				a.LostIDs = append(a.LostIDs, id)
			}
			continue
		}
		stale := got.Body != t.Body
		for _, f := range ds.Followers(t.Author) {
			if !inTimeline[f][id] {
				stale = true
				break
			}
		}
		if stale {
			a.Stale++
			if len(a.StaleIDs) < maxIDs {
				a.StaleIDs = append(a.StaleIDs, id)
			}
			continue
		}
		a.OK++
	}
	for id := range l.failed {
		if _, ok := stored[id]; ok {
			a.NeverAckPresent++
		} else {
			a.NeverAckAbsent++
		}
	}
	return a, nil
}

func sortedKeys[V any](m map[int64]V) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
