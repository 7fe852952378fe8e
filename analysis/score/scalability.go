package score

import "math"

// Scalability is the study's score for going from N to 2N nodes with data,
// clients and request-set size doubled: (Avg_2N − Avg_N) / Avg_N, where each
// Avg is the mean request-set time of the stable cluster at that size. 0 is
// perfect, negative is superlinear, lower is better. NaN when avgN is 0 or
// either is not a number.
func Scalability(avgN, avg2N float64) float64 {
	if !finite(avgN) || !finite(avg2N) || avgN == 0 {
		return math.NaN()
	}
	return (avg2N - avgN) / avgN
}

// Step is one size of a scalability scenario.
type Step struct {
	Label string  // the points' "step" label ("1", "2", …)
	Nodes string  // the points' "nodes" label during the step, if any
	Avg   float64 // mean request-set time (s)
	SD    float64 // sample standard deviation of the request-set times (s), NaN with one set
	N     int     // request sets behind Avg
	// Until is the join moment that ends the sets counted, when the step
	// had one (sets after it ran on the enlarged cluster); NaN otherwise.
	Until float64
}

// Transition is the scalability score between two consecutive steps.
type Transition struct {
	From, To Step
	Score    float64
}

// ScalabilitySteps scores each consecutive pair of steps, in the given order.
func ScalabilitySteps(steps []Step) []Transition {
	var out []Transition
	for i := 1; i < len(steps); i++ {
		out = append(out, Transition{From: steps[i-1], To: steps[i], Score: Scalability(steps[i-1].Avg, steps[i].Avg)})
	}
	return out
}
