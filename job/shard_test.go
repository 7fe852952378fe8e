package job

import (
	"testing"
)

func TestShardOf(t *testing.T) {
	t.Setenv("JOB_COMPLETION_INDEX", "2")
	for _, tc := range []struct {
		spec   string
		shards int
		i, n   int
		ok     bool
	}{
		{"", 0, 0, 1, true},
		{"1/3", 0, 1, 3, true},
		{"", 4, 2, 4, true},  // from JOB_COMPLETION_INDEX
		{"", 2, 0, 0, false}, // index 2 of 2
		{"1/3", 4, 0, 0, false},
		{"3/3", 0, 0, 0, false},
	} {
		sh, err := shardOf(tc.spec, tc.shards)
		if (err == nil) != tc.ok || tc.ok && (sh.i != tc.i || sh.n != tc.n) {
			t.Errorf("shardOf(%q, %d) = %+v, %v", tc.spec, tc.shards, sh, err)
		}
	}
	// Shares of any split add up to the whole, each client exactly once.
	for _, total := range []int{1, 7, 200} {
		for n := 1; n <= 9; n++ {
			next := 0
			for i := range n {
				lo, hi := shard{i, n}.share(total)
				if lo != next || hi < lo {
					t.Fatalf("%d of %d over %d: [%d, %d) after %d", i, n, total, lo, hi, next)
				}
				next = hi
			}
			if next != total {
				t.Fatalf("%d shards of %d cover %d", n, total, next)
			}
		}
	}
}
