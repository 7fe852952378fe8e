package cluster

import (
	"strconv"
	"strings"

	"github.com/fieldbench/fieldbench/cluster/budget"
)

// What a user asks of a cluster on the command line, parsed here rather
// than in the CLI (issue 45: internal/cli is wiring only), which maps the
// refusals (ErrBadInput) to exit 2 as it does Up's.

// ParseOptions is the engine options of `cluster up --opt` and
// `--cluster-opt`, each key=value, as Options.Extra: an option that is not
// key=value (or has no key) is bad input, named as --opt whichever flag
// gave it, as the CLI always named it. A key given twice keeps its last
// value.
func ParseOptions(opts []string) (map[string]string, error) {
	m := map[string]string{}
	for _, o := range opts {
		k, v, ok := strings.Cut(o, "=")
		if !ok || k == "" {
			return nil, badInputf("--opt %q is not key=value", o)
		}
		m[k] = v
	}
	return m, nil
}

// ParseSpec is --cluster ENGINE:NODES: the engine's name (checked by Up,
// not here) and the node count; anything else is bad input.
func ParseSpec(spec string) (engine string, nodes int, err error) {
	engine, n, ok := strings.Cut(spec, ":")
	nodes, nerr := strconv.Atoi(n)
	if !ok || nerr != nil {
		return "", 0, badInputf("--cluster %q is not ENGINE:NODES (e.g. postgres:2)", spec)
	}
	return engine, nodes, nil
}

// NewOptions is the Options of a cluster the command line asks for:
// `cluster up`'s --nodes, --opt, --network and --budget, or run's
// --cluster ENGINE:NODES with --cluster-opt, --cluster-network and
// --cluster-budget. What does not parse is bad input.
func NewOptions(nodes int, opts []string, network string, budgets []string) (Options, error) {
	extra, err := ParseOptions(opts)
	if err != nil {
		return Options{}, err
	}
	plan, err := budget.ParsePlan(budgets)
	if err != nil {
		return Options{}, badInput{err}
	}
	return Options{Nodes: nodes, Extra: extra, Network: network, Budget: plan}, nil
}
