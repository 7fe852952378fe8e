package wiki

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
)

// SizeModel is the distribution of synthetic article sizes in bytes: a
// lognormal body with a Pareto tail, clipped to [Min, Max]. With
// probability 1-TailProb a size is exp(ln(Median) + Sigma*Z), Z standard
// normal; with probability TailProb it is TailMin * U^(-1/TailAlpha), U
// uniform in (0, 1], so P(size > x) = TailProb * (TailMin/x)^TailAlpha in
// the tail. docs/wiki.md says why these numbers.
type SizeModel struct {
	Median    float64 // bytes: median of the lognormal body
	Sigma     float64 // standard deviation of ln(size) in the body
	TailProb  float64 // share of articles drawn from the Pareto tail
	TailMin   float64 // bytes: where the Pareto tail starts
	TailAlpha float64 // Pareto index of the tail
	Min, Max  int     // bytes: every size is clipped to [Min, Max]
}

// DefaultSizes approximates English Wikipedia's article wikitext sizes
// around the study's 2011 dump: median ~2.7 KB, mean ~5 KB (Wikimedia
// reported ~4.1 KB in 2008 and ~5.9 KB in 2013), 99th percentile ~50 KB,
// the largest a few hundred KB (MediaWiki refuses pages over 2 MiB; 512 KiB
// keeps one synthetic article from dominating a small dataset).
var DefaultSizes = SizeModel{
	Median:    2600,
	Sigma:     1.0,
	TailProb:  0.02,
	TailMin:   24 << 10,
	TailAlpha: 1.6,
	Min:       64,
	Max:       512 << 10,
}

// MaxArticles bounds a synthetic dataset (the study used 10 M articles).
const MaxArticles = 1_000_000_000

// Generator produces synthetic articles 1..Articles. Article id depends on
// (Seed, id) alone, so any range can be produced without the others: loads
// can stream, be split across processes, or be resumed.
type Generator struct {
	Seed     int64
	Articles int64
	Sizes    SizeModel
}

// NewGenerator returns a generator of n articles with DefaultSizes.
func NewGenerator(seed, n int64) (*Generator, error) {
	if n < 1 || n > MaxArticles {
		return nil, fmt.Errorf("wiki: articles must be between 1 and %d (got %d)", MaxArticles, n)
	}
	return &Generator{Seed: seed, Articles: n, Sizes: DefaultSizes}, nil
}

// PCG stream constants: sizes and texts come from separate streams so that
// Size(id) is cheap and equals len(Article(id).Body).
const (
	streamSize = 0x7769_6b69_7369_7a65 // "wikisize"
	streamText = 0x7769_6b69_7465_7874 // "wikitext"
)

// splitmix64 scrambles x; it turns (seed, id, stream) into well-spread PCG
// seeds, since nearby PCG states would give correlated streams.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func articleRand(seed, id int64, stream uint64) *rand.Rand {
	a := splitmix64(uint64(seed) ^ stream)
	b := splitmix64(a ^ uint64(id))
	return rand.New(rand.NewPCG(a, b))
}

// Sample draws one size from m.
func (m SizeModel) Sample(r *rand.Rand) int {
	var x float64
	if r.Float64() < m.TailProb {
		u := 1 - r.Float64() // (0, 1]
		x = m.TailMin * math.Pow(u, -1/m.TailAlpha)
	} else {
		x = math.Exp(math.Log(m.Median) + float64(m.Sigma*r.NormFloat64()))
	}
	if math.IsNaN(x) || x > float64(m.Max) {
		return m.Max
	}
	return max(m.Min, int(math.Round(x)))
}

// Size is the body size in bytes of article id.
func (g *Generator) Size(id int64) int {
	return g.Sizes.Sample(articleRand(g.Seed, id, streamSize))
}

// Article returns article id (1..Articles; other ids are produced the same
// way, which is how the study's "insert again with new ids" would scale).
func (g *Generator) Article(id int64) Article {
	size := g.Size(id)
	r := articleRand(g.Seed, id, streamText)
	title := appendTitle(nil, r)
	return Article{ID: id, Title: string(title), Body: string(appendBody(make([]byte, 0, size+32), r, title, size))}
}

// Source streams articles from..to (inclusive), in id order.
func (g *Generator) Source(from, to int64) Source {
	return &genSource{g: g, next: from, to: to}
}

type genSource struct {
	g        *Generator
	next, to int64
}

func (s *genSource) Next() (Article, error) {
	if s.next > s.to {
		return Article{}, io.EOF
	}
	a := s.g.Article(s.next)
	s.next++
	return a, nil
}

// words is the vocabulary of synthetic text. Picking index floor(n*u^2)
// makes early words more frequent, roughly as in prose, so the text
// compresses about as well as real wikitext (bzip2 ~3.5x; docs/wiki.md).
var words = []string{
	"the", "of", "and", "in", "to", "a", "was", "is", "for", "as", "on", "by", "with", "he", "that",
	"from", "at", "his", "it", "an", "were", "which", "are", "also", "be", "this", "first", "had",
	"or", "has", "after", "their", "its", "new", "but", "who", "they", "one", "not", "been", "her",
	"two", "she", "have", "into", "other", "time", "during", "all", "school", "when", "there",
	"between", "years", "more", "united", "only", "would", "city", "state", "world", "over", "most",
	"national", "team", "film", "year", "where", "later", "season", "three", "some", "up", "such",
	"known", "university", "war", "many", "since", "out", "then", "used", "game", "born", "album",
	"series", "under", "while", "part", "released", "both", "American", "county", "second", "about",
	"these", "through", "league", "music", "well", "company", "district", "became", "club", "several",
	"including", "family", "include", "early", "played", "river", "north", "south", "population",
	"named", "government", "served", "history", "church", "area", "public", "against", "de", "until",
	"record", "members", "number", "began", "million", "band", "village", "before", "station", "each",
	"former", "line", "states", "party", "life", "being", "york", "same", "British", "group", "work",
	"career", "following", "football", "west", "east", "built", "based", "house", "championship",
	"award", "island", "England", "London", "French", "German", "railway", "located", "species",
	"genus", "province", "council", "municipality", "census", "election", "member", "cup", "radio",
	"television", "book", "published", "written", "directed", "produced", "professional",
	"international", "development", "military", "army", "battle", "force", "aircraft", "ship", "navy",
	"king", "emperor", "dynasty", "century", "period", "region", "language", "culture", "art",
	"museum", "building", "bridge", "road", "highway", "route",
}

// appendTitle appends one to three capitalised words.
func appendTitle(b []byte, r *rand.Rand) []byte {
	n := 1 + r.IntN(3)
	for i := range n {
		if i > 0 {
			b = append(b, ' ')
		}
		b = appendCap(b, pickWord(r))
	}
	return b
}

func pickWord(r *rand.Rand) string {
	u := r.Float64()
	return words[int(float64(u*u)*float64(len(words)))]
}

func appendCap(b []byte, w string) []byte {
	if c := w[0]; c >= 'a' && c <= 'z' {
		b = append(b, c-'a'+'A')
		return append(b, w[1:]...)
	}
	return append(b, w...)
}

// appendBody appends wikitext-like ASCII text of exactly size bytes: the
// bolded title, sentences with some [[links]], paragraphs and == sections ==.
func appendBody(b []byte, r *rand.Rand, title []byte, size int) []byte {
	start := len(b)
	b = append(b, "'''"...)
	b = append(b, title...)
	b = append(b, "''' "...)
	section, inSentence := start, 0 // where the current section began
	for len(b)-start < size {
		switch {
		case inSentence == 0 && len(b)-section > 1500 && r.IntN(4) == 0:
			b = append(b, "\n\n== "...)
			b = appendCap(b, pickWord(r))
			b = append(b, ' ')
			b = append(b, pickWord(r)...)
			b = append(b, " ==\n"...)
			section = len(b)
		case r.IntN(10) == 0:
			b = append(b, "[["...)
			b = appendCap(b, pickWord(r))
			b = append(b, ' ')
			b = append(b, pickWord(r)...)
			b = append(b, "]]"...)
			inSentence++
		default:
			w := pickWord(r)
			if inSentence == 0 {
				b = appendCap(b, w)
			} else {
				b = append(b, w...)
			}
			inSentence++
		}
		if inSentence >= 8+r.IntN(12) {
			if r.IntN(5) == 0 {
				b = append(b, ".\n\n"...)
			} else {
				b = append(b, ". "...)
			}
			inSentence = 0
		} else {
			b = append(b, ' ')
		}
	}
	return b[:start+size]
}
