package trajectory

import (
	"slices"
	"testing"
)

func TestNear(t *testing.T) {
	t.Parallel()
	h := func(id int64, x, y int64) Hit { return Hit{Cell: id, Easting: x, Northing: y} }
	cells := []Hit{h(5, 3, 4), h(2, 0, 5), h(9, 0, 0), h(1, 6, 8), h(7, 5, 0)}
	ids := func(hs []Hit) []int64 {
		var out []int64
		for _, x := range hs {
			out = append(out, x.Cell)
		}
		return out
	}
	for _, tc := range []struct {
		r    int64
		want []int64
	}{
		{0, []int64{9}},          // the point itself
		{5, []int64{9, 2, 5, 7}}, // closed circle; three at distance 5, ties by id
		{4, []int64{9}},          // none of the three at 5
		{10, []int64{9, 2, 5, 7, 1}},
	} {
		if got := ids(Near(cells, Point{0, 0}, tc.r)); !slices.Equal(got, tc.want) {
			t.Errorf("r=%d: %v, want %v", tc.r, got, tc.want)
		}
	}
	if Near(cells, Point{100, 100}, 1) != nil {
		t.Error("no cell in range must be nil")
	}
}
