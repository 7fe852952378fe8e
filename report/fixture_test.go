package report

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/result"
)

// fixture describes a deterministic run to write as a result file.
type fixture struct {
	dir       string
	adapter   string
	db        adapter.Info
	speed     float64 // latency multiplier
	rate      float64 // throughput multiplier
	events    []result.Event
	errors    map[int]map[string]int64 // interval -> kind -> count, for post
	summary   bool                     // write a summary line
	truncated bool                     // append a cut-off line, as after a kill
	// Point series: noIntervals writes points (and events) only, as a sweep.
	workload    string // default microblog
	noIntervals bool
	series      map[string]result.SeriesMeta
	points      []result.Point
}

var (
	fixtureOps     = []string{"post", "userline", "timeline"}
	fixtureBuckets = []string{"0", "1", "2-3", "4-7", "8-15", "16-31", "128-255"}
	fixtureStart   = time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
)

const (
	fixtureIntervals = 10
	fixtureWarmup    = 2
	maliciousOption  = "<b>x</b>"
	maliciousDetail  = "<script>alert(1)</script>"
	maliciousTitle   = `Ingest <i onmouseover="x">sweep</i> & CI`
	maliciousCause   = `timeout after 30s: <script>alert("cause")</script>`
)

func runA() fixture {
	return fixture{
		dir: "run-a", adapter: "sqlite", speed: 1, rate: 1, summary: true,
		db:     adapter.Info{Name: "SQLite", Version: "3.46.1", Config: map[string]string{"journal_mode": "wal"}},
		events: []result.Event{{At: 5.5, Name: "checkpoint", Detail: maliciousDetail}},
		errors: map[int]map[string]int64{5: {"conflict": 2}, 7: {"timeout": 1, "conflict": 1}},
	}
}

func runB() fixture {
	return fixture{
		dir: "run-b", adapter: "postgres", speed: 0.6, rate: 1.5, summary: true,
		db:     adapter.Info{Name: "PostgreSQL", Version: "17.2"},
		events: []result.Event{{At: 7, Name: "vacuum"}},
	}
}

// Point series of the fixtures.
var (
	metaRequestSet = result.SeriesMeta{Title: "Request-set time", XLabel: "elapsed (s)", YLabel: "request-set time (s)", XIsTime: true, Band: "sd"}
	metaSweep      = result.SeriesMeta{Title: maliciousTitle, XLabel: "records per source", YLabel: "records/s", Band: "ci"}
	metaRuns       = result.SeriesMeta{Title: "Ingest throughput per run", XLabel: "records per source", YLabel: "records/s", LogY: true}
	sweepSizes     = []float64{1000, 2000, 5000, 10000}
)

// sweepRate is the fixture throughput at x records per source.
func sweepRate(x, rate float64) float64 { return rate * 30000 * x / (x + 3000) }

// requestSetPoints is a wiki-like time series: the mean request-set time of
// every second with its SD, the first two during warm-up.
func requestSetPoints(speed float64) []result.Point {
	var pts []result.Point
	for i := 0; i < fixtureIntervals; i++ {
		pts = append(pts, result.Point{Series: "request_set", X: float64(i) + 0.5,
			Y: speed * (0.18 + 0.01*float64((i*7)%5)), SD: speed * (0.015 + 0.002*float64(i%3)), N: 5,
			Warmup: i < fixtureWarmup})
	}
	return pts
}

// sweepPoints is an ingest-like sweep: a discarded warm-up run, then the
// mean with its 95% confidence interval per size; failAt adds a failed
// point at that size.
func sweepPoints(series string, rate, failAt float64) []result.Point {
	pts := []result.Point{{Series: series, X: sweepSizes[0], Y: sweepRate(sweepSizes[0], rate) * 0.7, N: 1, Warmup: true}}
	for i, x := range sweepSizes {
		y := sweepRate(x, rate)
		sd := y * (0.03 + 0.01*float64(i))
		pts = append(pts, result.Point{Series: series, X: x, Y: y, SD: sd, Lo: y - 1.24*sd, Hi: y + 1.24*sd, N: 5})
	}
	if failAt > 0 {
		pts = append(pts, result.Point{Series: series, X: failAt, Failed: maliciousCause})
	}
	return pts
}

// runPoints are the single runs behind a sweep: several per size, so they
// are drawn as markers only.
func runPoints(rate, failAt float64) []result.Point {
	pts := []result.Point{{Series: "runs", X: sweepSizes[0], Y: sweepRate(sweepSizes[0], rate) * 0.7, Warmup: true}}
	for _, x := range sweepSizes {
		for k := 0; k < 3; k++ {
			pts = append(pts, result.Point{Series: "runs", X: x, Y: sweepRate(x, rate) * (0.95 + 0.05*float64(k))})
		}
	}
	if failAt > 0 {
		pts = append(pts, result.Point{Series: "runs", X: failAt, Failed: "killed by the OOM killer"})
	}
	return pts
}

// queryPoints is a categorical series (no SeriesMeta): throughput per query
// type, drawn as bars; fail names a category that failed.
func queryPoints(rate float64, fail string) []result.Point {
	var pts []result.Point
	for i, q := range []string{"knn", "range", "point"} {
		p := result.Point{Series: "by_query", X: float64(i), Y: rate * float64(200*(i+1)*(i+1)), SD: rate * float64(15*(i+1)), N: 3,
			Labels: map[string]string{"category": q}}
		if q == fail {
			p = result.Point{Series: "by_query", X: float64(i), Failed: "index build failed", Labels: map[string]string{"category": q}}
		}
		pts = append(pts, p)
	}
	return pts
}

// withPoints adds a request-set time series and a sweep to a microblog
// fixture: a run with both intervals and points.
func withPoints(f fixture, failAt float64) fixture {
	f.series = map[string]result.SeriesMeta{"request_set": metaRequestSet, "sweep": metaSweep}
	f.points = append(requestSetPoints(f.speed), sweepPoints("sweep", f.rate, failAt)...)
	return f
}

// sweepRun is a run that writes points only, like an ingest sweep.
func sweepRun(dir, adapterName string, db adapter.Info, rate, speed float64, fail bool) fixture {
	f := fixture{dir: dir, adapter: adapterName, db: db, rate: rate, speed: speed, summary: true, workload: "ingest", noIntervals: true,
		series: map[string]result.SeriesMeta{"request_set": metaRequestSet, "stats": metaSweep, "runs": metaRuns}}
	failAt, failQuery := 0.0, ""
	if fail {
		failAt, failQuery = 20000, "range"
		f.events = []result.Event{{At: 3, Name: "load finished"}}
	}
	f.points = append(requestSetPoints(speed), sweepPoints("stats", rate, failAt)...)
	f.points = append(f.points, runPoints(rate, failAt)...)
	f.points = append(f.points, queryPoints(rate, failQuery)...)
	return f
}

func sweepA() fixture {
	return sweepRun("sweep-a", "sqlite", adapter.Info{Name: "SQLite", Version: "3.46.1"}, 1, 1, true)
}

func sweepB() fixture {
	return sweepRun("sweep-b", "postgres", adapter.Info{Name: "PostgreSQL", Version: "17.2"}, 1.6, 0.7, false)
}

// fixtureCount is the number of successful op operations in interval i at
// the given throughput multiplier.
func fixtureCount(op string, i int, rate float64) int64 {
	base := map[string]float64{"post": 40, "userline": 120, "timeline": 300}[op]
	return int64(base*rate) + int64(7*i)
}

// fixtureLatency is the latency in µs of the j-th op operation in interval
// i: a spread body, a slow tail every 50th, slower during warm-up.
func fixtureLatency(op string, i, j int, speed float64) int64 {
	base := map[string]float64{"post": 800, "userline": 300, "timeline": 1200}[op]
	v := base * float64(1+(j*j*7+i*13)%97) / 20
	if j%50 == 49 {
		v *= 25
	}
	if i < fixtureWarmup {
		v *= 3
	}
	return max(1, int64(v*speed))
}

func (f fixture) header() result.Header {
	workload := f.workload
	if workload == "" {
		workload = "microblog"
	}
	return result.Header{
		Version: "0.1.0-test", Workload: workload, Adapter: f.adapter,
		DSN: f.adapter + "://bench:xxxxx@localhost/bench", Database: f.db,
		Options: map[string]any{"users": 1000, "mix": "post=10,userline=20,timeline=70", "note": maliciousOption},
		Seed:    42,
		Machine: result.Machine{CPUModel: "Test CPU @ 3.00GHz", Cores: 8, MemoryBytes: 16 << 30,
			OS: "linux", Kernel: "6.1.0", GoVersion: "go1.26.8", Hostname: "bench-host"},
		Started: fixtureStart, Operations: fixtureOps,
		Groups:        map[string]string{"post": "author followers"},
		WarmupSeconds: fixtureWarmup,
		Series:        f.series,
	}
}

func (f fixture) interval(t testing.TB, i int) result.Interval {
	iv := result.Interval{Start: float64(i), End: float64(i + 1), Warmup: i < fixtureWarmup,
		Ops: map[string]result.OpInterval{}, Groups: map[string]map[string]string{"post": {}}}
	groups := map[string]*hdrhistogram.Histogram{}
	for _, op := range fixtureOps {
		h := result.NewHist()
		n := fixtureCount(op, i, f.rate)
		for j := 0; j < int(n); j++ {
			v := fixtureLatency(op, i, j, f.speed)
			if op == "post" {
				b := j % len(fixtureBuckets)
				v = v * int64(b+1) / 3
				if groups[fixtureBuckets[b]] == nil {
					groups[fixtureBuckets[b]] = result.NewHist()
				}
				must(t, groups[fixtureBuckets[b]].RecordValue(v))
			}
			must(t, h.RecordValue(v))
		}
		oi := result.OpInterval{Count: n, Hist: encode(t, h)}
		if op == "post" {
			oi.Errors = f.errors[i]
		}
		iv.Ops[op] = oi
	}
	for label, h := range groups {
		iv.Groups["post"][label] = encode(t, h)
	}
	return iv
}

// write creates the fixture's result file under root and reads it back.
func (f fixture) write(t testing.TB, root string) *result.Run {
	t.Helper()
	dir := filepath.Join(root, f.dir)
	w, err := result.Create(dir, f.header())
	must(t, err)
	var ivs []result.Interval
	if f.noIntervals {
		for _, e := range f.events {
			must(t, w.Event(e))
		}
	}
	for i := 0; i < fixtureIntervals && !f.noIntervals; i++ {
		iv := f.interval(t, i)
		ivs = append(ivs, iv)
		must(t, w.Interval(iv))
		for _, e := range f.events {
			if e.At >= iv.Start && e.At < iv.End {
				must(t, w.Event(e))
			}
		}
	}
	for _, p := range f.points {
		must(t, w.Point(p))
	}
	if f.summary {
		s, err := (&result.Run{Intervals: ivs}).Summarize()
		must(t, err)
		s.Extra = map[string]float64{"populate_seconds": 12.5, "db_size_bytes": 52428800, "materializer_lag_p99_us": 15300}
		must(t, w.Summary(s))
	}
	must(t, w.Close())
	if f.truncated {
		fh, err := os.OpenFile(w.Path(), os.O_APPEND|os.O_WRONLY, 0)
		must(t, err)
		_, err = fh.WriteString(`{"kind":"interval","interval":{"start":10,`)
		must(t, err)
		must(t, fh.Close())
	}
	run, err := result.Read(dir)
	must(t, err)
	return run
}

func encode(t testing.TB, h *hdrhistogram.Histogram) string {
	t.Helper()
	s, err := result.EncodeHist(h)
	must(t, err)
	return s
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
