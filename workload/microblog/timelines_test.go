package microblog

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestTimelineRounds: the rounds of a part hold every (follower, tweet)
// timeline pair of the part exactly once, none larger than the cap, each
// follower's rows consecutive, and the same rows in the same order for
// every cap; with Follows shuffled (a dataset not from the generator) the
// same pairs.
func TestTimelineRounds(t *testing.T) {
	t.Parallel()
	whole := gen(t, GenOptions{Users: 150, Seed: 5})
	partDS := func(p Part) *Dataset {
		ds, err := GeneratePart(GenOptions{Users: 150, Seed: 5}, p)
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	shuffled := &Dataset{Users: whole.Users, Seed: whole.Seed, Follows: slices.Clone(whole.Follows), Tweets: whole.Tweets}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled.Follows), func(i, j int) {
		shuffled.Follows[i], shuffled.Follows[j] = shuffled.Follows[j], shuffled.Follows[i]
	})
	shuffled.Index()
	for _, tc := range []struct {
		name string
		ds   *Dataset
		part Part
	}{
		{"whole", whole, split(150, 0, 1)},
		{"whole, part 1/3", whole, split(150, 1, 3)},
		{"part 0/3", partDS(split(150, 0, 3)), split(150, 0, 3)},
		{"part 2/3", partDS(split(150, 2, 3)), split(150, 2, 3)},
		{"shuffled follows, part 1/4", shuffled, split(150, 1, 4)},
		{"empty part", whole, Part{I: 0, N: 1, First: 5, Last: 4}},
	} {
		// want: every pair of the part, from the follower lists.
		want := map[TimelineRow]int{}
		for i, tw := range tc.ds.Tweets {
			if !tc.part.Holds(tw.Author) {
				continue
			}
			for _, f := range tc.ds.Followers(tw.Author) {
				want[TimelineRow{f, i}]++
			}
		}
		if tc.part.First <= tc.part.Last && len(want) == 0 {
			t.Fatalf("%s: no timeline rows to test", tc.name)
		}
		var first []TimelineRow
		for _, maxRows := range []int{1, 7, 1000, 1 << 30} {
			var all []TimelineRow
			rounds := 0
			err := tc.ds.TimelineRounds(tc.part, maxRows, func(rows []TimelineRow) error {
				rounds++
				if len(rows) == 0 || len(rows) > maxRows {
					t.Errorf("%s, cap %d: a round of %d rows", tc.name, maxRows, len(rows))
				}
				all = append(all, rows...)
				return nil
			})
			if err != nil {
				t.Fatalf("%s, cap %d: %v", tc.name, maxRows, err)
			}
			got := map[TimelineRow]int{}
			for _, r := range all {
				got[r]++
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s, cap %d: %d distinct rows of %d, want %d distinct of %d", tc.name, maxRows, len(got), len(all), len(want), len(want))
			}
			if !slices.IsSortedFunc(all, func(a, b TimelineRow) int { return int(a.Follower - b.Follower) }) {
				t.Errorf("%s, cap %d: rows not follower by follower", tc.name, maxRows)
			}
			if wantRounds := (len(all) + maxRows - 1) / maxRows; rounds != wantRounds {
				t.Errorf("%s, cap %d: %d rounds for %d rows, want %d", tc.name, maxRows, rounds, len(all), wantRounds)
			}
			if first == nil {
				first = all
			} else if !slices.Equal(all, first) {
				t.Errorf("%s, cap %d: rows differ from cap 1's", tc.name, maxRows)
			}
		}
	}
	if err := whole.TimelineRounds(split(150, 0, 1), 0, func([]TimelineRow) error { return nil }); err == nil {
		t.Error("a cap of 0 rows: no error")
	}
}
