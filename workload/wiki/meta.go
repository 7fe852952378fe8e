package wiki

import (
	"strconv"

	"github.com/fieldbench/fieldbench/workload"
)

// Name is the workload's registry name.
const Name = "wiki"

// Defaults. The request-set figures are the study's (seed 002: R = 10,000
// requests, r = 80 % reads, each request set executed 10 times, one client
// thread per database node, i.e. 1 on a single node). The study loaded 10 M
// Wikipedia articles (28 GB); the synthetic default is small enough to load
// in about a second on a laptop and is scaled with --articles.
const (
	DefaultArticles = 10_000
	DefaultRequests = 10_000
	DefaultReads    = 80
	DefaultThreads  = 1
	DefaultSets     = 10
	DefaultRepeat   = 10
	DefaultZipfS    = 1.1
)

// Ops are the recorded operations, in the order their indexes say.
var Ops = []string{"read", "update"}

// Operation indexes into Ops.
const (
	OpRead = iota
	OpUpdate
)

type meta struct{}

func (meta) Meta() workload.Meta {
	return workload.Meta{
		Name:        Name,
		Description: "Wikipedia articles read and appended to in timed request sets (Dory et al. 2011, elasticity and scalability)",
		Operations:  Ops,
		Options: []workload.Option{
			{Name: "articles", Default: strconv.Itoa(DefaultArticles), Help: "synthetic articles to load (sizes heavy-tailed like Wikipedia's; ~5 KB mean)"},
			{Name: "seed", Default: "1", Help: "seed of the synthetic articles and of the requests"},
			{Name: "from", Default: `""`, Help: "load a MediaWiki XML dump (pages-articles.xml or .xml.bz2, - for stdin) instead of synthetic articles"},
			{Name: "keep-redirects", Default: "false", Help: "with --from: load redirect pages too (skipped by default)"},
			{Name: "requests", Default: strconv.Itoa(DefaultRequests), Help: "requests per request set (R)"},
			{Name: "reads", Default: strconv.Itoa(DefaultReads), Help: "percentage of read-only requests (r); the others append \"1\" and write back"},
			{Name: "threads", Default: strconv.Itoa(DefaultThreads), Help: "client threads (T), each doing R/T requests sequentially; the study: one per node"},
			{Name: "sets", Default: strconv.Itoa(DefaultSets), Help: "request sets run back to back"},
			{Name: "repeat", Default: strconv.Itoa(DefaultRepeat), Help: "executions of each request set; its point is their mean and standard deviation"},
			{Name: "dist", Default: string(Uniform), Help: "how request ids are drawn: uniform (the study) or zipf"},
			{Name: "zipf-s", Default: strconv.FormatFloat(DefaultZipfS, 'g', -1, 64), Help: "skew of --dist zipf (> 1)"},
			{Name: "db", Default: `""`, Help: "database DSN (default: a new SQLite file in the run directory)"},
			{Name: "results", Default: "results", Help: "directory under which the run directory is created"},
			{Name: "loop", Default: "false", Help: "send every thread's requests from one event loop, as pgbench does (--reads 100; postgres, single-server redis)"},
		},
	}
}

func (meta) Supports(db any) bool {
	_, ok := db.(Backend)
	return ok
}

func init() { workload.Register(meta{}) }
