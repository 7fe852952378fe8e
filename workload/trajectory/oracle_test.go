package trajectory

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// tieCells is a hand-made set of cells with exact ties: 20 and 10 share a
// mast, 30 and 40 are both 5 m from (0,0), 50 sits on an edge of the test
// triangle.
func tieCells() []*Cell {
	return []*Cell{
		{ID: 20, Easting: 3, Northing: 4},   // d=5
		{ID: 10, Easting: 3, Northing: 4},   // d=5, same mast
		{ID: 30, Easting: -5, Northing: 0},  // d=5
		{ID: 40, Easting: 0, Northing: -5},  // d=5
		{ID: 50, Easting: 10, Northing: 0},  // d=10
		{ID: 60, Easting: 0, Northing: 0},   // d=0
		{ID: 70, Easting: 100, Northing: 0}, // far
	}
}

func ids(h []Hit) []int64 {
	out := make([]int64, len(h))
	for i, x := range h {
		out[i] = x.Cell
	}
	return out
}

func TestOracleQueries(t *testing.T) {
	t.Parallel()
	o := NewOracle()
	cells := tieCells()
	// visits at Monday slot 100: 20 x3, 10 x3 (tie, 10 wins), 60 x1;
	// Tuesday slot 0: 70 x2.
	for i, c := range []int{0, 0, 0, 1, 1, 1, 5, 2, 3, 4} {
		day, slot := Monday, 100
		if i >= 7 {
			slot = 101 // cells 30, 40, 50 seen at another slot
		}
		o.Add(Record{User: int64(i), Cell: cells[c], Weekday: day, Time: int32(slot*SlotSeconds + i)})
	}
	o.Add(Record{User: 1, Cell: cells[6], Weekday: Tuesday, Time: 0}, Record{User: 2, Cell: cells[6], Weekday: Tuesday, Time: 299})
	p0 := Point{}
	for _, tc := range []struct {
		name string
		got  []Hit
		want []int64
	}{
		{"distance includes the boundary, ties by id", o.Distance(p0, 5), []int64{60, 10, 20, 30, 40}},
		{"distance just short of the ring", o.Distance(p0, 4), []int64{60}},
		{"distance 0 finds a cell exactly there", o.Distance(p0, 0), []int64{60}},
		{"distance with nothing near", o.Distance(Point{X: 1000, Y: 1000}, 50), []int64{}},
		{"knn cuts ties by id", o.KNN(p0, 3, 1000), []int64{60, 10, 20}},
		{"knn bounded by distance", o.KNN(p0, 10, 5), []int64{60, 10, 20, 30, 40}},
		{"knn with bound 0", o.KNN(Point{X: 3, Y: 4}, 5, 0), []int64{10, 20}},
		{"knn nothing within bound", o.KNN(Point{X: 50, Y: 50}, 2, 10), []int64{}},
		{"range closed: vertices and edges count", o.Range(Triangle{{0, 0}, {10, 0}, {0, 10}}), []int64{10, 20, 50, 60}},
		{"range either winding", o.Range(Triangle{{0, 10}, {10, 0}, {0, 0}}), []int64{10, 20, 50, 60}},
		{"range empty", o.Range(Triangle{{200, 200}, {300, 200}, {200, 300}}), []int64{}},
	} {
		if got := ids(tc.got); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	for _, tc := range []struct {
		day   Weekday
		slot  int
		want  Busiest
		found bool
	}{
		{Monday, 100, Busiest{Cell: 10, Visits: 3}, true},
		{Monday, 101, Busiest{Cell: 30, Visits: 1}, true},
		{Tuesday, 0, Busiest{Cell: 70, Visits: 2}, true},
		{Tuesday, 1, Busiest{}, false},
		{Sunday, 287, Busiest{}, false},
	} {
		got, found := o.Region(tc.day, tc.slot)
		if got != tc.want || found != tc.found {
			t.Errorf("region %s %d = %+v %v, want %+v %v", tc.day, tc.slot, got, found, tc.want, tc.found)
		}
	}
	if c := o.Counts(); c.Records != 12 || c.Cells != 7 {
		t.Fatalf("counts %+v", c)
	}
}

func TestTriangleContains(t *testing.T) {
	t.Parallel()
	tri := Triangle{{0, 0}, {10, 0}, {0, 10}}
	for _, tc := range []struct {
		p    Point
		want bool
	}{
		{Point{1, 1}, true}, {Point{0, 0}, true}, {Point{5, 5}, true}, {Point{5, 0}, true},
		{Point{6, 5}, false}, {Point{-1, 0}, false}, {Point{11, 0}, false}, {Point{0, 11}, false},
	} {
		if got := tri.Contains(tc.p); got != tc.want {
			t.Errorf("Contains(%v) = %v, want %v", tc.p, got, tc.want)
		}
	}
	if (Triangle{{0, 0}, {5, 5}, {10, 10}}).Contains(Point{20, 20}) {
		t.Error("a degenerate triangle contains a point")
	}
}

func TestParsing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Weekday
		err  bool
	}{
		{"1", Monday, false}, {"7", Sunday, false}, {"monday", Monday, false}, {"Sat", Saturday, false},
		{"0", 0, true}, {"8", 0, true}, {"mo", 0, true}, {"someday", 0, true},
	} {
		got, err := ParseWeekday(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("ParseWeekday(%q) = %v, %v", tc.in, got, err)
		}
	}
	for _, tc := range []struct {
		in   string
		want int
		err  bool
	}{
		{"0", 0, false}, {"287", 287, false}, {"12:00", 144, false}, {"12:07", 145, false}, {"23:59", 287, false},
		{"288", 0, true}, {"-1", 0, true}, {"24:00", 0, true}, {"noon", 0, true},
	} {
		got, err := ParseSlot(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("ParseSlot(%q) = %v, %v", tc.in, got, err)
		}
	}
	for _, tc := range []struct {
		in, err string
	}{
		{"0,0,10,0,0,10", ""},
		{"0, 0, 10, 0, 0, 10", ""},
		{"0,0,10,0,0", "six whole numbers"},
		{"0,0,10,0,0,10,5", "six whole numbers"},
		{"0,0,10,0,0,x", "not a whole number"},
		{"0,0,10.5,0,0,10", "not a whole number"},
		{"0,0,5,5,10,10", "zero area"},
		{"0,0,0,0,0,0", "zero area"},
		{"0,0,10,0,0,2000000000", "out of range"},
	} {
		_, err := ParseTriangle(tc.in)
		if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParseTriangle(%q): %v, want error containing %q", tc.in, err, tc.err)
		}
	}
	for _, tc := range []struct {
		q   Query
		err string
	}{
		{Query{Op: OpDistance, Radius: -1}, "radius"},
		{Query{Op: OpKNN, K: 0, MaxDist: 10}, "k must be"},
		{Query{Op: OpKNN, K: 1, MaxDist: -1}, "max distance"},
		{Query{Op: OpRegion, Day: 8}, "weekday"},
		{Query{Op: OpRegion, Day: 1, Slot: 288}, "slot"},
		{Query{Op: OpDistance, At: Point{X: MaxCoord + 1}}, "out of range"},
		{Query{Op: 99}, "unknown"},
	} {
		if err := tc.q.Validate(); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.q, err, tc.err)
		}
	}
	if _, err := ParseModes("foo"); err == nil {
		t.Error("mode foo accepted")
	}
	if m, err := ParseModes("both"); err != nil || len(m) != 2 {
		t.Errorf("both = %v %v", m, err)
	}
	if _, err := ParseQueryOp("write"); err == nil {
		t.Error("write accepted as a query")
	}
}

// TestMakeQueries: a deterministic list per type, valid, and with answers
// that are neither all empty nor all the same.
func TestMakeQueries(t *testing.T) {
	t.Parallel()
	g := newGen(t, 0.01, 2)
	o, err := OracleFor(context.Background(), g)
	if err != nil {
		t.Fatal(err)
	}
	opts := QueryOptions{N: 40, Radius: DefaultRadius, K: DefaultK, MaxDist: DefaultMaxDist, Seed: 5}
	for op := OpDistance; op <= OpRegion; op++ {
		a, b := MakeQueries(g.City(), op, opts), MakeQueries(g.City(), op, opts)
		if !slices.Equal(a, b) || len(a) != 40 {
			t.Fatalf("%s: queries not deterministic", Ops[op])
		}
		empty, distinct := 0, map[string]bool{}
		for _, q := range a {
			if err := q.Validate(); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			ans := o.Answer(q)
			if len(ans.Hits) == 0 && !ans.Found {
				empty++
			}
			distinct[ans.String()] = true
		}
		if empty == len(a) || len(distinct) < 5 {
			t.Errorf("%s: %d of %d answers empty, %d distinct", Ops[op], empty, len(a), len(distinct))
		}
	}
}
