package wiki

import (
	"fmt"
	"io"
	"math"
	"slices"
)

// SizeStats summarises article sizes in bytes.
type SizeStats struct {
	Count      int64   `json:"count"`
	TotalBytes int64   `json:"total_bytes"`
	Mean       float64 `json:"mean"`
	Min        int     `json:"min"`
	Median     int     `json:"median"`
	P90        int     `json:"p90"`
	P99        int     `json:"p99"`
	Max        int     `json:"max"`
}

// NewSizeStats computes the statistics of sizes (which it sorts in place).
// Percentiles are nearest-rank.
func NewSizeStats(sizes []int) SizeStats {
	s := SizeStats{Count: int64(len(sizes))}
	if len(sizes) == 0 {
		return s
	}
	slices.Sort(sizes)
	for _, n := range sizes {
		s.TotalBytes += int64(n)
	}
	s.Mean = float64(s.TotalBytes) / float64(len(sizes))
	s.Min, s.Max = sizes[0], sizes[len(sizes)-1]
	s.Median = nearestRank(sizes, 0.50)
	s.P90 = nearestRank(sizes, 0.90)
	s.P99 = nearestRank(sizes, 0.99)
	return s
}

func nearestRank(sorted []int, q float64) int {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Write prints the statistics as a readable block of lines.
func (s SizeStats) Write(w io.Writer) error {
	_, err := fmt.Fprintf(w, "articles     %d\ntotal bytes  %d (%.1f MB)\nmean bytes   %.0f\nmin bytes    %d\nmedian bytes %d\np90 bytes    %d\np99 bytes    %d\nmax bytes    %d\n",
		s.Count, s.TotalBytes, float64(s.TotalBytes)/1e6, s.Mean, s.Min, s.Median, s.P90, s.P99, s.Max)
	return err
}

// MeanSD returns the mean of xs and their sample standard deviation
// (divided by n-1, as the repetitions of a request set are a sample of its
// possible executions; 0 when n < 2).
func MeanSD(xs []float64) (mean, sd float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		d := x - mean
		ss += d * d
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}

// MedianDelta is the study's variability of a stable cluster: the median of
// the delta times |t_i - t_(i-1)| between consecutive request-set times (0
// with fewer than two).
func MedianDelta(times []float64) float64 {
	if len(times) < 2 {
		return 0
	}
	d := make([]float64, len(times)-1)
	for i := 1; i < len(times); i++ {
		d[i-1] = math.Abs(times[i] - times[i-1])
	}
	slices.Sort(d)
	n := len(d)
	if n%2 == 1 {
		return d[n/2]
	}
	return (d[n/2-1] + d[n/2]) / 2
}
