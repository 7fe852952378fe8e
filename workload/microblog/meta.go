package microblog

import "github.com/fieldbench/fieldbench/workload"

// Name is the workload's registry name.
const Name = "microblog"

// Study defaults (seed 000: 200 clients, 4 minutes, uniform mix, 400 users).
const (
	DefaultUsers    = 400
	DefaultClients  = 200
	DefaultDuration = "4m"
	DefaultMix      = "post=1,userline=1,timeline=1"
)

type meta struct{}

func (meta) Meta() workload.Meta {
	models := make([]string, len(Models))
	for i, m := range Models {
		models[i] = string(m)
	}
	return workload.Meta{
		Name:        Name,
		Description: "Twitter-like microblog (Fonseca et al. 2013): power-law follow graph, posts fanned out to followers' timelines",
		Operations:  ClientOps,
		Models:      models,
	}
}

func (meta) Supports(db any) bool {
	_, ok := db.(Backend)
	return ok
}

func init() { workload.Register(meta{}) }
