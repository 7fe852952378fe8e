package trajectory

import (
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
	}
}

func (meta) Supports(db any) bool {
	_, ok := db.(Backend)
	return ok
}

func init() { workload.Register(meta{}) }
