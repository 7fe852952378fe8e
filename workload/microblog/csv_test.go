package microblog

import (
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// fingerprint400 is the SHA-256 of users.csv, follows.csv and tweets.csv
// (in that order, each preceded by its name and a newline) for Users=400,
// Seed=1. It changes whenever the generator's output changes: on purpose
// only, and then docs/microblog-generator.md's figures need measuring again.
const fingerprint400 = "c8db7e617288d17add09612541820cba5bc9bb95d0f660a1032ee08159045ad0"

func csvFingerprint(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	for _, name := range []string{UsersCSV, FollowsCSV, TweetsCSV} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		h.Write([]byte(name + "\n"))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	d := gen(t, GenOptions{Users: studyUsers, Seed: 1})
	dir := t.TempDir()
	if err := d.WriteCSV(dir); err != nil {
		t.Fatal(err)
	}
	if got := csvFingerprint(t, dir); got != fingerprint400 {
		t.Errorf("Users=400 Seed=1 CSV fingerprint %s, pinned %s: the generator's output changed", got, fingerprint400)
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return recs
}

func TestWriteCSV(t *testing.T) {
	t.Parallel()
	d := gen(t, GenOptions{Users: 50, Seed: 9})
	dir := filepath.Join(t.TempDir(), "nested", "out") // created by WriteCSV
	if err := d.WriteCSV(dir); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file   string
		header []string
		rows   int
	}{
		{UsersCSV, []string{"id", "name"}, d.Users},
		{FollowsCSV, []string{"follower", "followee"}, len(d.Follows)},
		{TweetsCSV, []string{"id", "author", "time", "body"}, len(d.Tweets)},
	}
	for _, tc := range tests {
		recs := readCSV(t, filepath.Join(dir, tc.file))
		if len(recs) != tc.rows+1 {
			t.Errorf("%s: %d rows, want header + %d", tc.file, len(recs), tc.rows)
			continue
		}
		if !equal(recs[0], tc.header) {
			t.Errorf("%s: header %q, want %q", tc.file, recs[0], tc.header)
		}
	}
	// Round trip of the tweets: every field comes back.
	recs := readCSV(t, filepath.Join(dir, TweetsCSV))
	for i, rec := range recs[1:] {
		want := d.Tweets[i]
		id, _ := strconv.ParseInt(rec[0], 10, 64)
		author, _ := strconv.ParseInt(rec[1], 10, 64)
		tm, err := time.Parse(time.RFC3339Nano, rec[2])
		if err != nil || id != want.ID || author != want.Author || !tm.Equal(want.Time) || rec[3] != want.Body {
			t.Fatalf("tweet row %d = %q (time err %v), want %+v", i+1, rec, err, want)
		}
		if tm.Location() != time.UTC {
			t.Fatalf("tweet row %d time %q is not UTC", i+1, rec[2])
		}
	}
	users := readCSV(t, filepath.Join(dir, UsersCSV))
	if users[1][0] != "1" || users[1][1] != "user0001" || users[50][1] != "user0050" {
		t.Errorf("users.csv rows %q ... %q", users[1], users[50])
	}
	follows := readCSV(t, filepath.Join(dir, FollowsCSV))
	if f := d.Follows[0]; follows[1][0] != strconv.FormatInt(f.Follower, 10) || follows[1][1] != strconv.FormatInt(f.Followee, 10) {
		t.Errorf("follows.csv first row %q, want %+v", follows[1], f)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestWriteCSVErrors(t *testing.T) {
	t.Parallel()
	d := gen(t, GenOptions{Users: 5, Seed: 1})
	base := t.TempDir()
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	blocked := filepath.Join(base, "blocked")
	if err := os.Mkdir(blocked, 0o755); err != nil {
		t.Fatal(err)
	}
	// users.csv as a directory: creating the file fails.
	if err := os.Mkdir(filepath.Join(blocked, UsersCSV), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		dir  string
	}{
		{"dir is a file", file},
		{"dir under a file", filepath.Join(file, "sub")},
		{"output name taken by a directory", blocked},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := d.WriteCSV(tc.dir)
			if err == nil {
				t.Fatalf("WriteCSV(%s) succeeded", tc.dir)
			}
			var pe *fs.PathError
			if !errors.As(err, &pe) {
				t.Errorf("error %v does not wrap the *fs.PathError", err)
			}
		})
	}
}

func TestUserName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id   int64
		want string
	}{
		{1, "user0001"},
		{42, "user0042"},
		{400, "user0400"},
		{9999, "user9999"},
		{12345, "user12345"},
		{0, "user0000"},
	}
	for _, tc := range tests {
		if got := UserName(tc.id); got != tc.want {
			t.Errorf("UserName(%d) = %q, want %q", tc.id, got, tc.want)
		}
	}
}
