package trajectory

import (
	"context"
	"errors"
	"testing"
)

// TestBoxSearchMatchesOracle answers the distance, k-NN and range queries
// through BoxSearch over a deliberately loose box (every cell within 3 km
// of the box: a superset, as a grid scan returns) and checks each answer
// against the brute-force oracle.
func TestBoxSearchMatchesOracle(t *testing.T) {
	ctx := context.Background()
	g, err := New(Options{Scale: 0.001, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	o, err := OracleFor(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	all := o.Cells()
	calls := 0
	b := BoxSearch{Name: "test", Cells: func(_ context.Context, minX, minY, maxX, maxY int64) ([]Hit, error) {
		calls++
		const slack = 3000
		var out []Hit
		for _, h := range all {
			p := h.Pos()
			if p.X >= minX-slack && p.X <= maxX+slack && p.Y >= minY-slack && p.Y <= maxY+slack {
				out = append(out, h)
			}
		}
		return out, nil
	}}
	for _, op := range []int{OpDistance, OpKNN, OpRange} {
		for _, q := range MakeQueries(g.City(), op, QueryOptions{N: 30, Radius: DefaultRadius, K: DefaultK, MaxDist: DefaultMaxDist, Seed: 9}) {
			got, err := q.Run(ctx, boxOnly{b})
			if err != nil {
				t.Fatalf("%v: %v", q, err)
			}
			if want := o.Answer(q); !got.Equal(want) {
				t.Fatalf("%v: BoxSearch %v, oracle %v", q, got, want)
			}
		}
	}
	if calls < 90 {
		t.Errorf("Cells called %d times for 90 queries", calls)
	}
	if _, err := b.KNN(ctx, Point{}, 0, 100); err == nil {
		t.Error("k = 0 must be refused")
	}
}

// boxOnly is a Querier whose Region is never asked.
type boxOnly struct{ BoxSearch }

func (boxOnly) Region(context.Context, Weekday, int) (Busiest, bool, error) {
	return Busiest{}, false, errors.New("region is not BoxSearch's")
}
