package microblog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Part is part I of N of a dataset, for loading it from N processes (the
// shards of a run spread over machines), each with no word from the
// others: the users First..Last, every follow whose followee is one of
// them, and every tweet one of them wrote, with the userline and timeline
// entries it makes. Split by the followee and the author, each part holds
// all of its tweets' fan-out (a tweet's readers are its author's
// followers), and the N parts together hold each user, follow, tweet and
// timeline entry exactly once.
type Part struct {
	I, N        int
	First, Last int64 // user ids, inclusive; First > Last is an empty part
}

// Holds reports whether user u is one of the part's users.
func (p Part) Holds(u int64) bool { return u >= p.First && u <= p.Last }

// Validate checks the part against the dataset it is a part of.
func (p Part) Validate(ds *Dataset) error {
	if p.N < 1 || p.I < 0 || p.I >= p.N {
		return fmt.Errorf("microblog: part %d of %d", p.I, p.N)
	}
	if p.First < 1 || p.Last > int64(ds.Users) || p.First > p.Last {
		return fmt.Errorf("microblog: part %d/%d holds users %d..%d of 1..%d", p.I, p.N, p.First, p.Last, ds.Users)
	}
	return nil
}

// String is the part as messages and markers name it: "I/N".
func (p Part) String() string { return fmt.Sprintf("%d/%d", p.I, p.N) }

// PartSize is what a part holds: its users, follows and tweets.
func (d *Dataset) PartSize(p Part) Counts {
	var c Counts
	if p.First > p.Last {
		return c
	}
	c.Users = p.Last - p.First + 1
	for u := p.First; u <= p.Last; u++ {
		c.Follows += int64(len(d.Followers(u)))
	}
	for i := range d.Tweets {
		if p.Holds(d.Tweets[i].Author) {
			c.Tweets++
		}
	}
	return c
}

// PartLoader is a Backend that loads a dataset in parts, several
// processes at once. Adapters without it load the dataset whole
// (Store.Populate), once. It is the backend's, not a store's: opening a
// store of an empty database may clear what another part just wrote.
type PartLoader interface {
	// PopulatePart loads part p of ds in model into a database that may
	// hold other parts of the same dataset and model (loaded before or at
	// the same time, with the same N) and nothing else. It returns an
	// error wrapping ErrPartLoaded, having written nothing, when part p is
	// there already. When the last part is in, the database reads as after
	// Populate (Counts, MicroblogModel).
	PopulatePart(ctx context.Context, model Model, ds *Dataset, p Part) error
}

// ErrPartLoaded says a part of the dataset was loaded before.
var ErrPartLoaded = errors.New("this part of the dataset is already loaded")

// CheckRecorded checks part p against the parts a database records as
// loaded (their String, "I/N"), for adapters that record each part once
// its writes are acknowledged: an error wrapping ErrPartLoaded when p is
// among them, one saying so when they belong to a load in another number
// of parts (whose users overlap p's in another way), nil otherwise.
func (p Part) CheckRecorded(recorded []string) error {
	n := strconv.Itoa(p.N)
	for _, q := range recorded {
		if q == p.String() {
			return fmt.Errorf("part %s: %w", p, ErrPartLoaded)
		}
		if _, qn, _ := strings.Cut(q, "/"); qn != n {
			return fmt.Errorf("part %s: the database holds part %s of a load in another number of parts: use a fresh database", p, q)
		}
	}
	return nil
}

// Complete reports whether recorded holds every part of p's load: the
// part that finds it so marks the dataset whole (two that finish together
// both do, writing the same).
func (p Part) Complete(recorded []string) bool {
	suffix, seen := "/"+strconv.Itoa(p.N), map[string]bool{}
	for _, q := range recorded {
		if strings.HasSuffix(q, suffix) {
			seen[q] = true
		}
	}
	return len(seen) >= p.N
}
