package trajectory

import (
	"fmt"
	"math"
)

// Study sizes (dataset0, dataset1, dataset2).
const (
	Dataset0 = 6_483_398
	Dataset1 = 12_966_795
	Dataset2 = 25_933_590
)

// recordsPerScale is what scale 1.0 stands for before rounding. The study's
// three datasets are 6,483,398, 12,966,795 and 25,933,590 records: not
// exactly 1x, 2x and 4x of each other, but exactly round(S x 6,483,397.5)
// for S = 1, 2, 4 (round half away from zero), so one linear rule gives all
// three.
const recordsPerScale = 6_483_397.5

// MaxScale bounds --scale: 648 million records, 321,600 users.
const MaxScale = 100

// DefaultScale is small enough for a quick run (64,834 records, 33 users).
const DefaultScale = 0.01

// RecordsForScale is the number of records at scale s: round(s x
// 6,483,397.5), which is exactly the study's dataset0, dataset1 and dataset2
// at 1, 2 and 4.
func RecordsForScale(s float64) (int64, error) {
	if math.IsNaN(s) || s <= 0 {
		return 0, fmt.Errorf("scale must be positive (got %g); 1.0 is the study's dataset0 of %d records", s, Dataset0)
	}
	if s > MaxScale {
		return 0, fmt.Errorf("scale %g is above the maximum %d", s, MaxScale)
	}
	n := int64(math.Round(s * recordsPerScale))
	if n < 1 {
		return 0, fmt.Errorf("scale %g gives no record (the smallest is %g)", s, 0.5/recordsPerScale)
	}
	return n, nil
}

// UsersForRecords is how many users n records need at one record per user
// and slot: ceil(n / 2016). The dataset is the first n records of the week of
// these users in time order, so only the last slots of Sunday miss some (or
// all) users: 6,483,398 = 3216 x 2016 - 58, so at scale 1.0 the last slot
// (Sunday 23:55) has 3158 of the 3216 users.
func UsersForRecords(n int64) int {
	return int((n + SlotsPerWeek - 1) / SlotsPerWeek)
}
