// Command mbstats prints statistics of microblog CSV datasets (the files
// `fieldbench generate microblog` writes, whole or in parts) as a
// Markdown table row: scripts/microblog-parts.sh uses it to compare
// generator versions.
//
//	go run ./scripts/mbstats LABEL DIR
//
// DIR holds users*.csv, follows*.csv and tweets*.csv (all parts are read
// together).
package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fieldbench/fieldbench/workload/distrib"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: mbstats LABEL DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "mbstats:", err)
		os.Exit(1)
	}
}

// rows calls fn with the first two fields of every data row of the files
// matching pattern.
func rows(pattern string, fn func(a, b int64)) error {
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no files %s", pattern)
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		sc.Scan() // header
		for sc.Scan() {
			fs := strings.SplitN(sc.Text(), ",", 3)
			a, _ := strconv.ParseInt(fs[0], 10, 64)
			var b int64
			if len(fs) > 1 {
				b, _ = strconv.ParseInt(fs[1], 10, 64)
			}
			fn(a, b)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return err
		}
	}
	return nil
}

func run(label, dir string) error {
	var users int64
	if err := rows(filepath.Join(dir, "users*.csv"), func(int64, int64) { users++ }); err != nil {
		return err
	}
	followers, following, tweets := make([]int, users), make([]int, users), make([]int, users)
	var follows, self, dups int64
	// Duplicates are found with a set of every follow (parts are split
	// by followee, so a repeat may be in another file): up to 100,000
	// users only.
	seen := map[[2]int64]bool{}
	err := rows(filepath.Join(dir, "follows*.csv"), func(a, b int64) {
		follows++
		if a == b {
			self++
		}
		if users <= 100_000 {
			k := [2]int64{a, b}
			if seen[k] {
				dups++
			}
			seen[k] = true
		}
		following[a-1]++
		followers[b-1]++
	})
	if err != nil {
		return err
	}
	var nt int64
	if err := rows(filepath.Join(dir, "tweets*.csv"), func(_, author int64) { nt++; tweets[author-1]++ }); err != nil {
		return err
	}
	maxIn, maxOut := 0, 0
	for i := range followers {
		maxIn, maxOut = max(maxIn, followers[i]), max(maxOut, following[i])
	}
	// Mean tweets by follower count (the formula's relation).
	bins := []int{0, 16, 64, 256, 1 << 62}
	var sum, cnt [4]float64
	for i, f := range followers {
		for b := range 4 {
			if f >= bins[b] && f < bins[b+1] {
				sum[b] += float64(tweets[i])
				cnt[b]++
			}
		}
	}
	mean := func(b int) string {
		if cnt[b] == 0 {
			return "–"
		}
		return fmt.Sprintf("%.1f", sum[b]/cnt[b])
	}
	fi, fo := distrib.FitPowerLaw(followers), distrib.FitPowerLaw(following)
	dupText := strconv.FormatInt(dups, 10)
	if users > 100_000 {
		dupText = "n/a"
	}
	fmt.Printf("| %s | %d | %d | %.2f | %d | %.2f | %d / %d | %.2f / %.3f | %.2f / %.3f | %s / %s / %s / %s | %d / %s |\n",
		label, users, follows, float64(follows)/float64(users), nt, float64(nt)/float64(users),
		maxIn, maxOut, fi.Alpha, fi.R2, fo.Alpha, fo.R2, mean(0), mean(1), mean(2), mean(3), self, dupText)
	return nil
}
