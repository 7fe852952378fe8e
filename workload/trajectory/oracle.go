package trajectory

import (
	"cmp"
	"context"
	"slices"
)

// Oracle is the brute-force reference every adapter is checked against: it
// answers each spatial query by scanning every cell that appears in the
// records it was given, with exact integer planar distances on easting and
// northing, and the region query from per-slot visit counts. Slow per query
// but obviously correct. Add is not safe for concurrent use; the queries
// are, once adding is done.
type Oracle struct {
	ids    map[int64]int32 // cell id -> position in cells
	cells  []Hit
	visits [SlotsPerWeek][]int32 // visits[slot of week][cell position]
	n      int64
}

// NewOracle returns an oracle holding no records.
func NewOracle() *Oracle { return &Oracle{ids: map[int64]int32{}} }

// OracleFor returns an oracle holding every record of g.
func OracleFor(ctx context.Context, g *Generator) (*Oracle, error) {
	o := NewOracle()
	cur := g.NewCursor()
	buf := make([]Record, 1<<14)
	for from := int64(0); from < g.Len(); {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := cur.Fill(from, buf)
		o.Add(buf[:n]...)
		from += int64(n)
	}
	return o, nil
}

// Add adds records.
func (o *Oracle) Add(recs ...Record) {
	for i := range recs {
		r := &recs[i]
		ci, ok := o.ids[r.Cell.ID]
		if !ok {
			ci = int32(len(o.cells))
			o.ids[r.Cell.ID] = ci
			o.cells = append(o.cells, Hit{Cell: r.Cell.ID, Easting: r.Cell.Easting, Northing: r.Cell.Northing})
		}
		w := (int(r.Weekday)-1)*SlotsPerDay + r.Slot()
		v := o.visits[w]
		if int(ci) >= len(v) {
			v = append(v, make([]int32, int(ci)+1-len(v))...)
		}
		v[ci]++
		o.visits[w] = v
		o.n++
	}
}

// Counts is what the oracle holds.
func (o *Oracle) Counts() Counts { return Counts{Records: o.n, Cells: int64(len(o.cells))} }

// Cells returns every cell that appears in the records, by id.
func (o *Oracle) Cells() []Hit {
	out := slices.Clone(o.cells)
	slices.SortFunc(out, func(a, b Hit) int { return cmp.Compare(a.Cell, b.Cell) })
	return out
}

// near returns the cells within radius of p, nearest first, ties by id.
func (o *Oracle) near(p Point, radius int64) []Hit {
	out := Near(o.cells, p, radius)
	if out == nil {
		out = []Hit{}
	}
	return out
}

// Distance is the reference for Querier.Distance.
func (o *Oracle) Distance(p Point, radius int64) []Hit { return o.near(p, radius) }

// KNN is the reference for Querier.KNN.
func (o *Oracle) KNN(p Point, k int, maxDist int64) []Hit {
	out := o.near(p, maxDist)
	if len(out) > k {
		out = out[:k:k]
	}
	return out
}

// Range is the reference for Querier.Range.
func (o *Oracle) Range(t Triangle) []Hit {
	out := []Hit{}
	for _, h := range o.cells {
		if t.Contains(h.Pos()) {
			out = append(out, h)
		}
	}
	slices.SortFunc(out, func(a, b Hit) int { return cmp.Compare(a.Cell, b.Cell) })
	return out
}

// Region is the reference for Querier.Region.
func (o *Oracle) Region(day Weekday, slot int) (Busiest, bool) {
	if day < Monday || day > Sunday || slot < 0 || slot >= SlotsPerDay {
		return Busiest{}, false
	}
	var best Busiest
	found := false
	for ci, n := range o.visits[(int(day)-1)*SlotsPerDay+slot] {
		if n == 0 {
			continue
		}
		id := o.cells[ci].Cell
		if !found || int64(n) > best.Visits || (int64(n) == best.Visits && id < best.Cell) {
			best, found = Busiest{Cell: id, Visits: int64(n)}, true
		}
	}
	return best, found
}

// Answer is the reference answer to q (normalized like Querier answers:
// empty hit lists are nil).
func (o *Oracle) Answer(q Query) Answer {
	var a Answer
	switch q.Op {
	case OpDistance:
		a.Hits = o.Distance(q.At, q.Radius)
	case OpKNN:
		a.Hits = o.KNN(q.At, q.K, q.MaxDist)
	case OpRange:
		a.Hits = o.Range(q.Tri)
	case OpRegion:
		a.Busiest, a.Found = o.Region(q.Day, q.Slot)
	}
	if len(a.Hits) == 0 {
		a.Hits = nil
	}
	return a
}
