package microblog

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// handDataset is small enough to answer by hand:
//
//	follows: 1->2, 1->3, 2->1, 3->2 (user 4 follows nobody)
//	tweets (id author time): 1 2 t10, 2 3 t20, 3 2 t20, 4 1 t5, 5 3 t30,
//	6 4 t40, 7 2 t15
//
// Tweets 2 and 3 share a time: 3 is newer by id.
func handDataset() *Dataset {
	t0 := time.Date(2013, 3, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	d := &Dataset{
		Users: 4,
		Follows: []Follow{
			{1, 2}, {1, 3}, {2, 1}, {3, 2},
		},
		Tweets: []Tweet{
			{ID: 1, Author: 2, Time: at(10), Body: "one"},
			{ID: 2, Author: 3, Time: at(20), Body: "two"},
			{ID: 3, Author: 2, Time: at(20), Body: "three"},
			{ID: 4, Author: 1, Time: at(5), Body: "four"},
			{ID: 5, Author: 3, Time: at(30), Body: "five"},
			{ID: 6, Author: 4, Time: at(40), Body: "six"},
			{ID: 7, Author: 2, Time: at(15), Body: "seven"},
		},
	}
	d.Index()
	return d
}

func ids(ts []Tweet) []int64 {
	var out []int64
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}

func TestOracle(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2013, 3, 1, 0, 0, 0, 0, time.UTC)
	type query struct {
		timeline bool
		user     int64
		limit    int
		want     []int64
	}
	tests := []struct {
		name  string
		posts []Tweet
		q     []query
	}{
		{"loaded data", nil, []query{
			{false, 2, 10, []int64{3, 7, 1}},
			{false, 2, 2, []int64{3, 7}}, // truncated to the newest
			{false, 2, 3, []int64{3, 7, 1}},
			{false, 4, 50, []int64{6}},
			{false, 9, 50, nil}, // unknown user
			{false, 2, 0, nil},  // limit 0
			{true, 1, 10, []int64{5, 3, 2, 7, 1}},
			{true, 1, 3, []int64{5, 3, 2}}, // 3 before 2: same time, larger id
			{true, 2, 10, []int64{4}},
			{true, 3, 10, []int64{3, 7, 1}},
			{true, 4, 10, nil}, // follows nobody
			{true, 1, -1, nil},
		}},
		{"after posts", []Tweet{
			{ID: 8, Author: 3, Time: t0.Add(20 * time.Second), Body: "eight"}, // ties 2 and 3
			{ID: 9, Author: 2, Time: t0.Add(1 * time.Second), Body: "nine"},   // older than all of 2's
			{ID: 10, Author: 4, Time: t0.Add(50 * time.Second), Body: "ten"},  // nobody follows 4
		}, []query{
			{true, 1, 3, []int64{5, 8, 3}},
			{true, 1, 10, []int64{5, 8, 3, 2, 7, 1, 9}},
			{false, 3, 10, []int64{5, 8, 2}},
			{false, 2, 10, []int64{3, 7, 1, 9}},
			{false, 4, 1, []int64{10}},
			{true, 2, 10, []int64{4}},
			{true, 3, 2, []int64{3, 7}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := NewOracle(handDataset())
			for _, p := range tc.posts {
				o.Post(p)
			}
			for _, q := range tc.q {
				var got []Tweet
				kind := "Userline"
				if q.timeline {
					kind = "Timeline"
					got = o.Timeline(q.user, q.limit)
				} else {
					got = o.Userline(q.user, q.limit)
				}
				if fmt.Sprint(ids(got)) != fmt.Sprint(q.want) {
					t.Errorf("%s(%d, %d) = %v, want %v", kind, q.user, q.limit, ids(got), q.want)
				}
			}
		})
	}
}

func TestOracleReturnsWholeTweets(t *testing.T) {
	t.Parallel()
	d := handDataset()
	o := NewOracle(d)
	got := o.Userline(4, 1)
	if len(got) != 1 || got[0] != d.Tweets[5] {
		t.Fatalf("Userline(4, 1) = %+v, want %+v", got, d.Tweets[5])
	}
}

// TestOracleCopies: the oracle is not affected by later changes to the
// dataset or to slices it returned.
func TestOracleCopies(t *testing.T) {
	t.Parallel()
	d := handDataset()
	o := NewOracle(d)
	d.Tweets[4].Author = 4 // tweet 5 moves to user 4 in the dataset only
	d.Follows[0] = Follow{1, 4}
	got := o.Timeline(1, 1)
	got[0].ID = 99
	if again := ids(o.Timeline(1, 2)); fmt.Sprint(again) != "[5 3]" {
		t.Fatalf("Timeline(1, 2) = %v after changing the dataset, want [5 3]", again)
	}
}

func TestOracleConcurrent(t *testing.T) {
	t.Parallel()
	o := NewOracle(handDataset())
	t0 := time.Date(2014, 1, 1, 0, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	const writers, each = 8, 50
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				id := int64(100 + w*each + i)
				o.Post(Tweet{ID: id, Author: 2, Time: t0.Add(time.Duration(id) * time.Microsecond), Body: "x"})
				o.Timeline(1, 5)
				o.Userline(2, 5)
			}
		})
	}
	wg.Wait()
	got := o.Userline(2, 1000)
	if len(got) != 3+writers*each {
		t.Fatalf("user 2 has %d tweets after concurrent posts, want %d", len(got), 3+writers*each)
	}
	if newest := got[0].ID; newest != 100+writers*each-1 {
		t.Fatalf("newest tweet %d, want %d", newest, 100+writers*each-1)
	}
	for i := 1; i < len(got); i++ {
		if !Newer(got[i-1], got[i]) {
			t.Fatalf("not newest first at %d: %d then %d", i, got[i-1].ID, got[i].ID)
		}
	}
}

// TestIndexHand: the index of the hand dataset, including unsorted input.
func TestIndexHand(t *testing.T) {
	t.Parallel()
	d := handDataset()
	d.Follows = append(d.Follows, Follow{4, 3}, Follow{2, 3}) // out of order
	d.Index()
	tests := []struct {
		u                    int64
		followers, following string
	}{
		{1, "[2]", "[2 3]"},
		{2, "[1 3]", "[1 3]"},
		{3, "[1 2 4]", "[2]"},
		{4, "[]", "[3]"},
	}
	for _, tc := range tests {
		if got := fmt.Sprint(d.Followers(tc.u)); got != tc.followers {
			t.Errorf("Followers(%d) = %s, want %s", tc.u, got, tc.followers)
		}
		if got := fmt.Sprint(d.Following(tc.u)); got != tc.following {
			t.Errorf("Following(%d) = %s, want %s", tc.u, got, tc.following)
		}
		if d.FollowerCount(tc.u) != len(d.Followers(tc.u)) || d.FollowingCount(tc.u) != len(d.Following(tc.u)) {
			t.Errorf("counts of %d disagree with the lists", tc.u)
		}
	}
}
