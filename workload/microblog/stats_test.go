package microblog

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestStatsHand(t *testing.T) {
	t.Parallel()
	s := handDataset().Stats()
	// followers: 1:1 2:2 3:1 4:0; following: 1:2 2:1 3:1 4:0.
	want := Stats{Users: 4, Follows: 4, Tweets: 7, MeanFollowers: 1, MaxFollowers: 2,
		MeanFollowing: 1, MaxFollowing: 2, MeanTweetsPerUser: 1.75}
	want.FollowerFit.N, want.FollowerFit.Bins = 3, 2 // too few bins to fit
	want.FollowingFit.N, want.FollowingFit.Bins = 3, 2
	if s != want {
		t.Fatalf("Stats() = %+v\nwant %+v", s, want)
	}
}

func TestStatsGenerated(t *testing.T) {
	t.Parallel()
	d := gen(t, GenOptions{Users: studyUsers, Seed: 1})
	s := d.Stats()
	maxIn, maxOut := 0, 0
	for u := int64(1); u <= int64(d.Users); u++ {
		maxIn = max(maxIn, d.FollowerCount(u))
		maxOut = max(maxOut, d.FollowingCount(u))
	}
	if s.Users != 400 || s.Follows != len(d.Follows) || s.Tweets != len(d.Tweets) ||
		s.MaxFollowers != maxIn || s.MaxFollowing != maxOut ||
		s.MeanFollowers != float64(len(d.Follows))/400 || s.MeanTweetsPerUser != float64(len(d.Tweets))/400 {
		t.Fatalf("Stats() = %+v disagrees with the dataset", s)
	}
	if s.FollowerFit.N != 400 || s.FollowingFit.N != 400 {
		t.Errorf("fits over %d and %d users, want 400 (nobody has 0)", s.FollowerFit.N, s.FollowingFit.N)
	}
}

func TestStatsJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(handDataset().Stats())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"users", "follows", "tweets", "mean_followers", "max_followers",
		"mean_following", "max_following", "mean_tweets_per_user", "follower_fit", "following_fit"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON %s has no key %q", b, k)
		}
	}
	if len(m) != 10 {
		t.Errorf("JSON has %d keys, want 10: %s", len(m), b)
	}
}

func TestStatsWrite(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := gen(t, GenOptions{Users: studyUsers, Seed: 1}).Stats().Write(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"users            400\n", "follows ", "tweets ", "followers        mean ",
		"following        mean ", "tweets per user  mean ", "follower fit     power law alpha ",
		"following fit    power law alpha ", "R^2 "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 8 {
		t.Errorf("%d lines, want 8:\n%s", n, out)
	}
	if err := (Stats{}).Write(failWriter{}); err == nil {
		t.Error("Write to a failing writer returned nil")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, bytes.ErrTooLarge }
