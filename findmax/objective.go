package findmax

import "github.com/fieldbench/fieldbench/job"

// Objective is --slo of `findmax WORKLOAD` checked before anything runs,
// its refusals bad input (job.Usage): the rules (ParseSLO), none naming an
// operation the workload's clients do not send (CheckRules; ops is its
// Meta().Operations). Here rather than in the CLI (issue 45: internal/cli
// is wiring only), which asks it once, before --cluster starts a server.
func Objective(slo string, ops []string) ([]Rule, error) {
	rules, err := ParseSLO(slo)
	if err != nil {
		return nil, job.Usage(err)
	}
	if err := CheckRules(rules, ops); err != nil {
		return nil, job.Usage(err)
	}
	return rules, nil
}

// SizedWorkloads are the registered workloads whose run is a fixed amount
// of work rather than a time (job.Traits.SizeStep): findmax sizes that
// work so each step lasts --step-duration, as its help says, naming them.
func SizedWorkloads() []string {
	var out []string
	for _, name := range job.Names() {
		if j, err := job.New(name); err == nil && job.TraitsOf(j).SizeStep != nil {
			out = append(out, name)
		}
	}
	return out
}
