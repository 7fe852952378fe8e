package microblog

import (
	"fmt"
	"io"

	"github.com/fieldbench/fieldbench/workload/distrib"
)

// Stats summarises a dataset: its size, degree statistics and how well the
// follower and following counts fit a power law (distrib.FitPowerLaw:
// least squares of log density on log degree over logarithmic bins; users
// with a count of 0 are left out of the fit).
type Stats struct {
	Users             int                 `json:"users"`
	Follows           int                 `json:"follows"`
	Tweets            int                 `json:"tweets"`
	MeanFollowers     float64             `json:"mean_followers"`
	MaxFollowers      int                 `json:"max_followers"`
	MeanFollowing     float64             `json:"mean_following"`
	MaxFollowing      int                 `json:"max_following"`
	MeanTweetsPerUser float64             `json:"mean_tweets_per_user"`
	FollowerFit       distrib.PowerLawFit `json:"follower_fit"`
	FollowingFit      distrib.PowerLawFit `json:"following_fit"`
}

// Stats computes the dataset's statistics. It counts from Follows and
// Tweets directly, so it does not need Index.
func (d *Dataset) Stats() Stats {
	followers := make([]int, d.Users)
	following := make([]int, d.Users)
	for _, f := range d.Follows {
		if f.Followee >= 1 && f.Followee <= int64(d.Users) {
			followers[f.Followee-1]++
		}
		if f.Follower >= 1 && f.Follower <= int64(d.Users) {
			following[f.Follower-1]++
		}
	}
	return statsOf(d.Users, followers, following, len(d.Tweets))
}

// statsOf computes the statistics from every user's follower and
// following counts (index id-1) and the number of tweets.
func statsOf(users int, followers, following []int, tweets int) Stats {
	s := Stats{Users: users, Tweets: tweets}
	for u := range followers {
		s.Follows += followers[u]
		s.MaxFollowers = max(s.MaxFollowers, followers[u])
		s.MaxFollowing = max(s.MaxFollowing, following[u])
	}
	if users > 0 {
		s.MeanFollowers = float64(s.Follows) / float64(users)
		s.MeanFollowing = s.MeanFollowers
		s.MeanTweetsPerUser = float64(s.Tweets) / float64(users)
	}
	s.FollowerFit = distrib.FitPowerLaw(followers)
	s.FollowingFit = distrib.FitPowerLaw(following)
	return s
}

// Write prints the statistics as a readable block of lines.
func (s Stats) Write(w io.Writer) error {
	fit := func(f distrib.PowerLawFit) string {
		return fmt.Sprintf("alpha %.2f, R^2 %.3f (%d users, %d log bins)", f.Alpha, f.R2, f.N, f.Bins)
	}
	_, err := fmt.Fprintf(w, `users            %d
follows          %d
tweets           %d
followers        mean %.2f, max %d
following        mean %.2f, max %d
tweets per user  mean %.2f
follower fit     power law %s
following fit    power law %s
`,
		s.Users, s.Follows, s.Tweets,
		s.MeanFollowers, s.MaxFollowers,
		s.MeanFollowing, s.MaxFollowing,
		s.MeanTweetsPerUser,
		fit(s.FollowerFit), fit(s.FollowingFit))
	return err
}
