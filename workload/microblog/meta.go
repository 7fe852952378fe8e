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
		Options: []workload.Option{
			{Name: "users", Default: "400", Help: "users in the dataset (400 gives ~10,080 follows and ~3,540 tweets, as in the study)"},
			{Name: "seed", Default: "1", Help: "seed of the dataset and of the clients' choices"},
			{Name: "model", Default: string(Denormalized), Help: "data model: denormalized, normalized or async"},
			{Name: "clients", Default: "200", Help: "concurrent clients, each simulating one user"},
			{Name: "duration", Default: DefaultDuration, Help: "run time, warm-up included"},
			{Name: "warmup", Default: "0s", Help: "time at the start excluded from the summary"},
			{Name: "rate", Default: "0", Help: "open loop: operations per second over all clients (0 = closed loop)"},
			{Name: "mix", Default: DefaultMix, Help: "operation weights"},
		},
	}
}

func (meta) Supports(db any) bool {
	_, ok := db.(Backend)
	return ok
}

func init() { workload.Register(meta{}) }
