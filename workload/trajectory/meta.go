package trajectory

import (
	"strconv"

	"github.com/fieldbench/fieldbench/workload"
)

// Name is the workload's registry name.
const Name = "trajectory"

type meta struct{}

func (meta) Meta() workload.Meta {
	return workload.Meta{
		Name:        Name,
		Description: "mobile users' location updates in a synthetic city (Niyizamwiyitira & Lundberg 2017): sequential and random writes, distance, k-NN, range and region queries over cells",
		Operations:  Ops,
		Options: []workload.Option{
			{Name: "scale", Default: strconv.FormatFloat(DefaultScale, 'g', -1, 64), Help: "dataset size: round(scale x 6,483,397.5) records; 1, 2, 4 = the study's 6,483,398 / 12,966,795 / 25,933,590"},
			{Name: "seed", Default: "1", Help: "seed of the city, the users, the random orders and the query parameters"},
			{Name: "mode", Default: "both", Help: "sequential (1 client, in order), random (--clients, shuffled) or both"},
			{Name: "clients", Default: strconv.Itoa(DefaultRandomClients), Help: "clients of the random mode (sequential always uses 1)"},
			{Name: "batch", Default: strconv.Itoa(DefaultBatch), Help: "records per write request"},
			{Name: "queries", Default: strconv.Itoa(DefaultQueries), Help: "distinct queries per query type"},
			{Name: "repeat", Default: strconv.Itoa(DefaultRepeat), Help: "times each query is sent per mode (the study's 10)"},
			{Name: "radius", Default: strconv.Itoa(DefaultRadius), Help: "distance query radius (m)"},
			{Name: "k", Default: strconv.Itoa(DefaultK), Help: "k of the k-NN query"},
			{Name: "max-dist", Default: strconv.Itoa(DefaultMaxDist), Help: "k-NN distance bound (m)"},
			{Name: "verify", Default: "true", Help: "check every answer against the brute-force reference (a mismatch is an error of kind \"wrong answer\")"},
			{Name: "reset", Default: "false", Help: "delete trajectory data already in --db instead of refusing to run"},
		},
	}
}

func (meta) Supports(db any) bool {
	_, ok := db.(Backend)
	return ok
}

func init() { workload.Register(meta{}) }
