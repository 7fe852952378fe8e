package microblog

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// split is part i of n of users as `--shard i/n` gives it.
func split(users, i, n int) Part {
	return Part{I: i, N: n, First: int64(i*users/n) + 1, Last: int64((i + 1) * users / n)}
}

// TestPartsUnion: the N parts of a dataset hold together exactly the one
// part's dataset, user for user, edge for edge, tweet for tweet.
func TestPartsUnion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		users int
		seed  int64
		parts []int
	}{
		{2000, 1, []int{1, 3, 7}},
		{2000, 9, []int{2, 5}},
		{400, 2, []int{3, 16}},
		{9, 3, []int{2, 9}},
		{2, 4, []int{2}},
	} {
		o := GenOptions{Users: tc.users, Seed: tc.seed}
		whole := gen(t, o)
		if c, err := Size(o); err != nil || c != whole.Whole() {
			t.Errorf("Size(%+v) = %+v, %v; want %+v", o, c, err, whole.Whole())
		}
		for _, n := range tc.parts {
			var follows []Follow
			var tweets []Tweet
			var users int64
			for i := range n {
				p := split(tc.users, i, n)
				d, err := GeneratePart(o, p)
				if err != nil {
					t.Fatalf("%+v part %s: %v", o, p, err)
				}
				if got, want := d.Whole(), whole.Whole(); got != want {
					t.Errorf("%+v part %s: Whole() = %+v, want %+v", o, p, got, want)
				}
				if sz := whole.PartSize(p); sz != d.PartSize(p) {
					t.Errorf("%+v part %s: PartSize %+v, want %+v", o, p, d.PartSize(p), sz)
				}
				for u := p.First; u <= p.Last; u++ {
					if !slices.Equal(d.Followers(u), whole.Followers(u)) {
						t.Fatalf("%+v part %s: followers of %d differ", o, p, u)
					}
				}
				for _, f := range d.Follows {
					if !p.Holds(f.Followee) {
						t.Fatalf("%+v part %s holds follow %+v", o, p, f)
					}
				}
				for _, tw := range d.Tweets {
					if !p.Holds(tw.Author) {
						t.Fatalf("%+v part %s holds tweet %+v", o, p, tw)
					}
				}
				users += p.Last - p.First + 1
				follows = append(follows, d.Follows...)
				tweets = append(tweets, d.Tweets...)
			}
			slices.SortFunc(follows, compareFollow)
			slices.SortFunc(tweets, func(a, b Tweet) int { return int(a.ID - b.ID) })
			if users != int64(whole.Users) {
				t.Errorf("%+v in %d parts: %d users, want %d", o, n, users, whole.Users)
			}
			if !slices.Equal(follows, whole.Follows) {
				t.Errorf("%+v in %d parts: %d follows differ from the one part's %d", o, n, len(follows), len(whole.Follows))
			}
			if !reflect.DeepEqual(tweets, whole.Tweets) {
				t.Errorf("%+v in %d parts: %d tweets differ from the one part's %d", o, n, len(tweets), len(whole.Tweets))
			}
		}
	}
}

// TestWritePartCSV: the rows of the N parts' files are the rows of the
// whole dataset's WriteCSV, and the one part writes the same files.
func TestWritePartCSV(t *testing.T) {
	t.Parallel()
	o := GenOptions{Users: 2000, Seed: 1}
	d := gen(t, o)
	wantDir := t.TempDir()
	if err := d.WriteCSV(wantDir); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for _, name := range []string{UsersCSV, FollowsCSV, TweetsCSV} {
		b, err := os.ReadFile(filepath.Join(wantDir, name))
		if err != nil {
			t.Fatal(err)
		}
		want[name] = strings.SplitAfter(string(b), "\n")
	}
	for _, n := range []int{1, 3, 7} {
		dir := t.TempDir()
		got := map[string][]string{}
		for i := range n {
			p := split(o.Users, i, n)
			info, err := WritePartCSV(o, p, dir)
			if err != nil {
				t.Fatal(err)
			}
			if (info.Stats != nil) != (n == 1) {
				t.Errorf("part %s: stats %v", p, info.Stats)
			}
			if n == 1 && !reflect.DeepEqual(*info.Stats, d.Stats()) {
				t.Errorf("one part: stats %+v, want %+v", *info.Stats, d.Stats())
			}
			if info.Whole != d.Whole() || info.Size != d.PartSize(p) {
				t.Errorf("part %s: whole %+v size %+v, want %+v %+v", p, info.Whole, info.Size, d.Whole(), d.PartSize(p))
			}
			for k, name := range []string{UsersCSV, FollowsCSV, TweetsCSV} {
				b, err := os.ReadFile(info.Files[k])
				if err != nil {
					t.Fatal(err)
				}
				lines := strings.SplitAfter(string(b), "\n")
				if len(got[name]) > 0 {
					lines = lines[1:]                        // header
					got[name] = got[name][:len(got[name])-1] // trailing ""
				}
				got[name] = append(got[name], lines...)
			}
		}
		for name, w := range want {
			g := slices.Clone(got[name])
			if name != UsersCSV {
				slices.Sort(g[1:])
				w = slices.Clone(w)
				slices.Sort(w[1:])
			}
			if !slices.Equal(g, w) {
				t.Errorf("%d parts: %s rows differ from the whole dataset's (%d vs %d lines)", n, name, len(g), len(w))
			}
		}
	}
}

func TestGeneratePartRejects(t *testing.T) {
	t.Parallel()
	o := GenOptions{Users: 10, Seed: 1}
	for _, p := range []Part{
		{I: 0, N: 0, First: 1, Last: 10},
		{I: 3, N: 3, First: 1, Last: 3},
		{I: 0, N: 2, First: 0, Last: 5},
		{I: 1, N: 2, First: 6, Last: 11},
		{I: 1, N: 2, First: 6, Last: 5},
	} {
		if _, err := GeneratePart(o, p); err == nil {
			t.Errorf("GeneratePart(%+v) succeeded, want an error", p)
		}
	}
}

func TestFeistel(t *testing.T) {
	t.Parallel()
	for _, n := range []uint64{1, 2, 3, 7, 64, 1000, 4097} {
		f := newFeistel(n, 42)
		seen := make([]bool, n)
		for i := range n {
			x := f.at(i)
			if x >= n || seen[x] {
				t.Fatalf("n=%d: at(%d) = %d repeats or is out of range", n, i, x)
			}
			seen[x] = true
			if f.inv(x) != i {
				t.Fatalf("n=%d: inv(at(%d)) = %d", n, i, f.inv(x))
			}
		}
	}
}
