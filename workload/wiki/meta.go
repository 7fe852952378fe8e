package wiki

import (
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
	}
}

func (meta) Supports(db any) bool {
	_, ok := db.(Backend)
	return ok
}

func init() { workload.Register(meta{}) }
