package microblog

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// UserName is the deterministic name of user id: "user0001", "user0400",
// "user12345" (at least four digits, zero-padded).
func UserName(id int64) string {
	if id < 0 {
		return fmt.Sprintf("user%04d", id)
	}
	s := strconv.FormatInt(id, 10)
	if len(s) < 4 {
		s = "0000"[len(s):] + s
	}
	return "user" + s
}

// CSV file names written by WriteCSV.
const (
	UsersCSV   = "users.csv"
	FollowsCSV = "follows.csv"
	TweetsCSV  = "tweets.csv"
)

// WriteCSV writes the dataset as three CSV files in dir (created if
// needed): users.csv (id,name), follows.csv (follower,followee) and
// tweets.csv (id,author,time,body), each with a header row, time in RFC 3339
// with nanoseconds, UTC.
func (d *Dataset) WriteCSV(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("microblog: create CSV directory: %w", err)
	}
	files := []struct {
		name  string
		write func(io.Writer) error
	}{
		{UsersCSV, d.writeUsersCSV},
		{FollowsCSV, d.writeFollowsCSV},
		{TweetsCSV, d.writeTweetsCSV},
	}
	for _, f := range files {
		if err := writeFile(filepath.Join(dir, f.name), f.write); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, write func(io.Writer) error) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("microblog: create CSV file: %w", err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("microblog: close %s: %w", path, cerr)
		}
	}()
	if err := write(f); err != nil {
		return fmt.Errorf("microblog: write %s: %w", path, err)
	}
	return nil
}

func (d *Dataset) writeUsersCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"id", "name"}); err != nil {
		return err
	}
	for u := int64(1); u <= int64(d.Users); u++ {
		if err := cw.Write([]string{strconv.FormatInt(u, 10), UserName(u)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func (d *Dataset) writeFollowsCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"follower", "followee"}); err != nil {
		return err
	}
	for _, f := range d.Follows {
		if err := cw.Write([]string{strconv.FormatInt(f.Follower, 10), strconv.FormatInt(f.Followee, 10)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func (d *Dataset) writeTweetsCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"id", "author", "time", "body"}); err != nil {
		return err
	}
	for _, t := range d.Tweets {
		rec := []string{
			strconv.FormatInt(t.ID, 10),
			strconv.FormatInt(t.Author, 10),
			t.Time.UTC().Format(time.RFC3339Nano),
			t.Body,
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
