package wiki

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
)

// fingerprint hashes articles 1..n of (seed, n) with length prefixes, so
// any change to ids, titles, bodies or sizes changes it.
func fingerprint(t *testing.T, seed, n int64) string {
	t.Helper()
	g, err := NewGenerator(seed, n)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	var buf [8]byte
	put := func(v int64) {
		binary.LittleEndian.PutUint64(buf[:], uint64(v))
		h.Write(buf[:])
	}
	src := g.Source(1, n)
	for {
		a, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		put(a.ID)
		put(int64(len(a.Title)))
		h.Write([]byte(a.Title))
		put(int64(len(a.Body)))
		h.Write([]byte(a.Body))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestGeneratorFingerprint pins the synthetic dataset: a change to the
// generator changes every published result's data, so it must be a
// deliberate one (update the hash and say so in docs/wiki.md).
func TestGeneratorFingerprint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		seed, n int64
		want    string
	}{
		{1, 300, "27a239b8c112ef6af45e443216bddaec9b141a1cae06aa1a8c085403efb7e39b"},
		{2, 300, "d55d80494e7185af5cc788d254be4542779efca89afb5f73ed4394ee5259b5da"},
	} {
		if got := fingerprint(t, tc.seed, tc.n); got != tc.want {
			t.Errorf("seed %d, %d articles: fingerprint %s, pinned %s", tc.seed, tc.n, got, tc.want)
		}
	}
}

func TestGeneratorDeterministic(t *testing.T) {
	t.Parallel()
	g1, _ := NewGenerator(7, 500)
	g2, _ := NewGenerator(7, 500)
	other, _ := NewGenerator(8, 500)
	src := g1.Source(1, 500)
	same := 0
	for id := int64(1); id <= 500; id++ {
		streamed, err := src.Next()
		if err != nil {
			t.Fatal(err)
		}
		// Random access, in another order and from another generator, gives
		// the same article as the stream: article i depends on (seed, i) only.
		direct := g2.Article(501 - id)
		if back := g1.Article(501 - id); back != direct {
			t.Fatalf("article %d differs between two generators of the same seed", 501-id)
		}
		if streamed != g2.Article(id) {
			t.Fatalf("article %d: streamed and random access differ", id)
		}
		if streamed.ID != id {
			t.Fatalf("stream gave id %d at position %d", streamed.ID, id)
		}
		if g1.Size(id) != len(streamed.Body) {
			t.Fatalf("article %d: Size %d, body %d bytes", id, g1.Size(id), len(streamed.Body))
		}
		if streamed.Title == "" || !strings.HasPrefix(streamed.Body, "'''"+streamed.Title) {
			t.Fatalf("article %d: title %q, body starts %q", id, streamed.Title, streamed.Body[:min(20, len(streamed.Body))])
		}
		if other.Article(id).Body == streamed.Body {
			same++
		}
	}
	if same > 0 {
		t.Errorf("seeds 7 and 8 gave %d identical bodies", same)
	}
	if _, err := src.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("stream past the last article: %v, want io.EOF", err)
	}
}

func TestNewGeneratorRejects(t *testing.T) {
	t.Parallel()
	for _, n := range []int64{0, -1, MaxArticles + 1} {
		if _, err := NewGenerator(1, n); err == nil {
			t.Errorf("NewGenerator(1, %d) must fail", n)
		}
	}
}

// TestSizeDistribution checks the documented shape (docs/wiki.md): median
// ~2.7 KB, mean ~5.4 KB, 99th percentile ~45 KB, clipped to [64 B, 512 KiB],
// for several seeds.
func TestSizeDistribution(t *testing.T) {
	t.Parallel()
	const n = 200_000
	for _, seed := range []int64{1, 2, 3} {
		g, _ := NewGenerator(seed, n)
		sizes := make([]int, n)
		over100K := 0
		for i := range sizes {
			sizes[i] = g.Size(int64(i + 1))
			if sizes[i] > 100_000 {
				over100K++
			}
		}
		s := NewSizeStats(sizes)
		for _, c := range []struct {
			what   string
			got    float64
			lo, hi float64
		}{
			{"median", float64(s.Median), 2400, 3000},
			{"mean", s.Mean, 4800, 6000},
			{"p90", float64(s.P90), 8000, 13000},
			{"p99", float64(s.P99), 35_000, 60_000},
			{"min", float64(s.Min), 64, 200},
			{"max", float64(s.Max), 200_000, 512 << 10},
			{"share over 100 KB", float64(over100K) / n, 0.001, 0.006},
		} {
			if c.got < c.lo || c.got > c.hi {
				t.Errorf("seed %d: %s = %g, want in [%g, %g]", seed, c.what, c.got, c.lo, c.hi)
			}
		}
	}
}

func TestSizeModelClips(t *testing.T) {
	t.Parallel()
	m := SizeModel{Median: 1e9, Sigma: 0, TailProb: 0, TailMin: 1, TailAlpha: 1, Min: 10, Max: 1000}
	g := &Generator{Seed: 1, Articles: 5, Sizes: m}
	if got := len(g.Article(3).Body); got != 1000 {
		t.Errorf("huge median: body of %d bytes, want the cap 1000", got)
	}
	m.Median = 1
	g.Sizes = m
	if got := len(g.Article(3).Body); got != 10 {
		t.Errorf("tiny median: body of %d bytes, want the minimum 10", got)
	}
}

func TestSizeStats(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sizes []int
		want  SizeStats
	}{
		{nil, SizeStats{}},
		{[]int{5}, SizeStats{Count: 1, TotalBytes: 5, Mean: 5, Min: 5, Median: 5, P90: 5, P99: 5, Max: 5}},
		{[]int{4, 1, 3, 2}, SizeStats{Count: 4, TotalBytes: 10, Mean: 2.5, Min: 1, Median: 2, P90: 4, P99: 4, Max: 4}},
	} {
		if got := NewSizeStats(tc.sizes); got != tc.want {
			t.Errorf("NewSizeStats(%v) = %+v, want %+v", tc.sizes, got, tc.want)
		}
	}
	var b strings.Builder
	if err := NewSizeStats([]int{1, 2, 3}).Write(&b); err != nil || !strings.Contains(b.String(), "median bytes 2") {
		t.Errorf("Write: %v\n%s", err, b.String())
	}
}

func BenchmarkGenerateArticle(b *testing.B) {
	g, _ := NewGenerator(1, 1<<30)
	var bytes int64
	for i := 0; b.Loop(); i++ {
		bytes += int64(len(g.Article(int64(i + 1)).Body))
	}
	b.SetBytes(bytes / int64(b.N))
}
