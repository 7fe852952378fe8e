package merge

import (
	"math/rand/v2"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/fieldbench/fieldbench/result"
)

// histSum gives exactly what the library's Merge gives, bit for bit in the
// encoding: histograms of the standard geometry (decoded by histSum
// itself), of another geometry (through the library), empty ones and "".
func TestHistSumIsMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var sum histSum
	for round := range 30 {
		var encs []string
		want := result.NewHist()
		for k := range 1 + rng.IntN(12) {
			h := result.NewHist()
			if round%5 == 0 && k == 1 {
				h = hdrhistogram.New(1, 3_600_000_000, 2) // another geometry
			}
			for range rng.IntN(3000) {
				v := int64(1 + rng.ExpFloat64()*float64(1+rng.IntN(50_000)))
				if rng.IntN(200) == 0 {
					v = 59_000_000 // near the top
				}
				if err := h.RecordValue(v); err != nil {
					t.Fatal(err)
				}
			}
			want.Merge(h)
			enc, err := result.EncodeHist(h)
			if err != nil {
				t.Fatal(err)
			}
			encs = append(encs, enc)
			if rng.IntN(4) == 0 {
				encs = append(encs, "")
			}
		}
		got, err := sumOf(&sum, encs)
		if err != nil {
			t.Fatal(err)
		}
		we, _ := result.EncodeHist(want)
		if got != we {
			t.Fatalf("round %d: the sum of %d histograms differs from their Merge", round, len(encs))
		}
	}
	// Empty histograms sum to the empty histogram.
	empty, _ := result.EncodeHist(result.NewHist())
	if got, err := sumOf(&sum, []string{empty, "", empty}); err != nil || got != empty {
		t.Errorf("empty histograms sum to %q (%v), want %q", got, err, empty)
	}
	// A corrupt histogram is an error, never a panic or a silent zero.
	for _, bad := range []string{"eHl6", "!!!", "HISTFAAAACR4nJNpmSzMwMDAzMAAAAB"} {
		if _, err := sumOf(&sum, []string{bad}); err == nil {
			t.Errorf("%q summed without an error", bad)
		}
	}
}
