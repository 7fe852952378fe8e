// Command mbpart generates part I of N of a microblog dataset in memory,
// as `fieldbench load microblog --shard I/N` does before it writes the
// part (microblog.GeneratePart), and prints its size and the time taken;
// scripts/microblog-parts-cost.sh measures its peak RSS and takes the
// part's counts (follows, tweets, timeline rows) from its output.
//
//	go run ./scripts/mbpart USERS SEED I N
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/fieldbench/fieldbench/workload/microblog"
)

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: mbpart USERS SEED I N")
		os.Exit(2)
	}
	var v [4]int64
	for k := range v {
		x, err := strconv.ParseInt(os.Args[k+1], 10, 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mbpart:", err)
			os.Exit(2)
		}
		v[k] = x
	}
	users, seed, i, n := v[0], v[1], v[2], v[3]
	p := microblog.Part{I: int(i), N: int(n), First: i*users/n + 1, Last: (i + 1) * users / n}
	t0 := time.Now()
	d, err := microblog.GeneratePart(microblog.GenOptions{Users: int(users), Seed: seed}, p)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mbpart:", err)
		os.Exit(1)
	}
	size := d.PartSize(p)
	// The timeline rows a load of this part writes (every model
	// materializes timelines): one per tweet of the part and follower of
	// its author.
	var fanout int64
	for _, t := range d.Tweets {
		fanout += int64(d.FollowerCount(t.Author))
	}
	fmt.Printf("part %s: users %d..%d, %d follows, %d tweets, %d timeline rows, generated in %.1fs\n",
		p, p.First, p.Last, size.Follows, size.Tweets, fanout, time.Since(t0).Seconds())
}
