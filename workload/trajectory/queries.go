package trajectory

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Operation indexes, in the order Ops lists them.
const (
	OpWrite = iota
	OpDistance
	OpKNN
	OpRange
	OpRegion
)

// Ops are the recorded operations: one write request and the four queries.
var Ops = []string{"write", "distance", "knn", "range", "region"}

// QueryOps are the read operations (Ops without write).
var QueryOps = Ops[OpDistance:]

// ParseQueryOp returns the operation index of a query name.
func ParseQueryOp(s string) (int, error) {
	for i, name := range Ops {
		if i != OpWrite && name == s {
			return i, nil
		}
	}
	return 0, fmt.Errorf("unknown trajectory query %q (known: %s)", s, strings.Join(QueryOps, ", "))
}

// MaxCoord bounds coordinates and distances (m) a query may use, so that
// squared distances and cross products cannot overflow int64.
const MaxCoord = 1_000_000_000

// MaxK bounds the k of a k-NN query.
const MaxK = 100_000

// Query is one read request: Op says which fields matter.
type Query struct {
	Op      int      `json:"-"`
	At      Point    `json:"at,omitzero"`        // distance, knn
	Radius  int64    `json:"radius,omitempty"`   // distance
	K       int      `json:"k,omitempty"`        // knn
	MaxDist int64    `json:"max_dist,omitempty"` // knn
	Tri     Triangle `json:"triangle,omitzero"`  // range
	Day     Weekday  `json:"weekday,omitempty"`  // region
	Slot    int      `json:"slot,omitempty"`     // region
}

// String describes q for messages.
func (q Query) String() string {
	switch q.Op {
	case OpDistance:
		return fmt.Sprintf("distance(%d,%d r=%d)", q.At.X, q.At.Y, q.Radius)
	case OpKNN:
		return fmt.Sprintf("knn(%d,%d k=%d max=%d)", q.At.X, q.At.Y, q.K, q.MaxDist)
	case OpRange:
		t := q.Tri
		return fmt.Sprintf("range(%d,%d %d,%d %d,%d)", t[0].X, t[0].Y, t[1].X, t[1].Y, t[2].X, t[2].Y)
	case OpRegion:
		return fmt.Sprintf("region(%s %s)", q.Day, SlotClock(q.Slot))
	}
	return "query(" + strconv.Itoa(q.Op) + ")"
}

func checkCoord(name string, v int64) error {
	if v < -MaxCoord || v > MaxCoord {
		return fmt.Errorf("%s %d is out of range (|%s| <= %d m)", name, v, name, MaxCoord)
	}
	return nil
}

// Validate reports the first bad parameter in words a user understands.
func (q Query) Validate() error {
	switch q.Op {
	case OpDistance:
		if err := checkCoord("x", q.At.X); err != nil {
			return err
		}
		if err := checkCoord("y", q.At.Y); err != nil {
			return err
		}
		if q.Radius < 0 || q.Radius > MaxCoord {
			return fmt.Errorf("radius must be 0..%d m (got %d)", MaxCoord, q.Radius)
		}
	case OpKNN:
		if err := checkCoord("x", q.At.X); err != nil {
			return err
		}
		if err := checkCoord("y", q.At.Y); err != nil {
			return err
		}
		if q.K < 1 || q.K > MaxK {
			return fmt.Errorf("k must be 1..%d (got %d)", MaxK, q.K)
		}
		if q.MaxDist < 0 || q.MaxDist > MaxCoord {
			return fmt.Errorf("max distance must be 0..%d m (got %d)", MaxCoord, q.MaxDist)
		}
	case OpRange:
		for i, p := range q.Tri {
			if err := checkCoord(fmt.Sprintf("x%d", i+1), p.X); err != nil {
				return err
			}
			if err := checkCoord(fmt.Sprintf("y%d", i+1), p.Y); err != nil {
				return err
			}
		}
		if q.Tri.Area2() == 0 {
			return fmt.Errorf("triangle %v has zero area (its vertices are on one line)", q.Tri)
		}
	case OpRegion:
		if q.Day < Monday || q.Day > Sunday {
			return fmt.Errorf("weekday must be 1 (Monday) to 7 (Sunday) (got %d)", q.Day)
		}
		if q.Slot < 0 || q.Slot >= SlotsPerDay {
			return fmt.Errorf("slot must be 0..%d (got %d)", SlotsPerDay-1, q.Slot)
		}
	default:
		return fmt.Errorf("unknown query operation %d", q.Op)
	}
	return nil
}

// ParseTriangle parses "x1,y1,x2,y2,x3,y3" (whole metres) into a valid,
// non-degenerate triangle.
func ParseTriangle(s string) (Triangle, error) {
	var t Triangle
	parts := strings.Split(s, ",")
	if len(parts) != 6 {
		return t, fmt.Errorf("triangle %q: want six whole numbers x1,y1,x2,y2,x3,y3 (metres), got %d values", s, len(parts))
	}
	var v [6]int64
	for i, p := range parts {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil {
			return t, fmt.Errorf("triangle %q: value %d (%q) is not a whole number of metres", s, i+1, strings.TrimSpace(p))
		}
		v[i] = n
	}
	t = Triangle{{v[0], v[1]}, {v[2], v[3]}, {v[4], v[5]}}
	if err := (Query{Op: OpRange, Tri: t}).Validate(); err != nil {
		return t, fmt.Errorf("triangle %q: %w", s, err)
	}
	return t, nil
}

// Answer is a query's result: Hits for distance, k-NN and range; Busiest
// and Found for region.
type Answer struct {
	Hits    []Hit
	Busiest Busiest
	Found   bool
}

// Equal reports whether a and b are the same answer (same cells in the same
// order; for region the same cell and count).
func (a Answer) Equal(b Answer) bool {
	return slices.Equal(a.Hits, b.Hits) && a.Found == b.Found && a.Busiest == b.Busiest
}

// String summarizes a for messages.
func (a Answer) String() string {
	if a.Found {
		return fmt.Sprintf("cell %d with %d visits", a.Busiest.Cell, a.Busiest.Visits)
	}
	ids := make([]string, 0, min(len(a.Hits), 12))
	for i, h := range a.Hits {
		if i == 12 {
			ids = append(ids, "...")
			break
		}
		ids = append(ids, strconv.FormatInt(h.Cell, 10))
	}
	return fmt.Sprintf("%d cells [%s]", len(a.Hits), strings.Join(ids, " "))
}

// Run asks s for q's answer.
func (q Query) Run(ctx context.Context, s Querier) (Answer, error) {
	var a Answer
	var err error
	switch q.Op {
	case OpDistance:
		a.Hits, err = s.Distance(ctx, q.At, q.Radius)
	case OpKNN:
		a.Hits, err = s.KNN(ctx, q.At, q.K, q.MaxDist)
	case OpRange:
		a.Hits, err = s.Range(ctx, q.Tri)
	case OpRegion:
		a.Busiest, a.Found, err = s.Region(ctx, q.Day, q.Slot)
	default:
		err = fmt.Errorf("trajectory: unknown query operation %d", q.Op)
	}
	return a, err
}

// QueryOptions configures MakeQueries.
type QueryOptions struct {
	N       int   // queries per type (the study's read phase repeats each 10 times)
	Radius  int64 // distance query radius (m)
	K       int   // k of k-NN
	MaxDist int64 // k-NN bound (m)
	Seed    int64
}

// Study-like query defaults: a 1 km radius (the study's example), the 5
// nearest cells within 2 km, 25 queries per type.
const (
	DefaultQueries = 25
	DefaultRadius  = 1000
	DefaultK       = 5
	DefaultMaxDist = 2000
	DefaultRepeat  = 10
)

// MakeQueries returns o.N queries of type op, a function of the city and
// o.Seed alone. Points are mostly near a cell (a user's position; up to 400
// m off), one in five anywhere in the city's box widened by 2 km (some
// answers are then empty); triangles have vertices up to 2 km from such a
// point; region queries pick a weekday and slot uniformly over the week.
func MakeQueries(c *City, op int, o QueryOptions) []Query {
	r := newRNG(hash3(uint64(o.Seed), streamQuery, uint64(op)))
	minX, minY, maxX, maxY := c.Bounds()
	point := func() Point {
		if r.chance(200) {
			return Point{X: minX - 2000 + r.int63n(maxX-minX+4001), Y: minY - 2000 + r.int63n(maxY-minY+4001)}
		}
		cell := &c.Cells[r.intn(len(c.Cells))]
		return Point{X: cell.Easting + r.int63n(801) - 400, Y: cell.Northing + r.int63n(801) - 400}
	}
	out := make([]Query, o.N)
	for i := range out {
		q := Query{Op: op}
		switch op {
		case OpDistance:
			q.At, q.Radius = point(), o.Radius
		case OpKNN:
			q.At, q.K, q.MaxDist = point(), o.K, o.MaxDist
		case OpRange:
			centre := point()
			size := 500 + r.int63n(1501)
			for {
				for j := range q.Tri {
					q.Tri[j] = Point{X: centre.X + r.int63n(2*size+1) - size, Y: centre.Y + r.int63n(2*size+1) - size}
				}
				if a := q.Tri.Area2(); a >= size*size/5 || a <= -size*size/5 {
					break // not a sliver
				}
			}
		case OpRegion:
			q.Day, q.Slot = Weekday(1+r.intn(Days)), r.intn(SlotsPerDay)
		}
		out[i] = q
	}
	return out
}
