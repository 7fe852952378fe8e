package clustertest

import (
	"slices"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/cluster"
)

// Description is what an engine says of itself before anything starts,
// in the very words the user reads: whether it runs on --network hosts
// (and if not why), which options it refuses, how many nodes this machine
// may run, whether an external cluster can run its database. Each
// database folder pins its own in a test of its own (CheckDescription),
// so a new engine's description lives with the engine and no table
// elsewhere names it.
type Description struct {
	Engine string
	// NoHosts is CheckNetwork's error for --network hosts where the
	// engine runs on loopback only ("": it runs on hosts).
	NoHosts string
	// Bogus is CheckOptions's error for --opt bogus=1 ("": the engine
	// takes any option).
	Bogus string
	// Max is the most nodes CheckNodes accepts (0: no limit of its own),
	// and TooMany its error for Max+1.
	Max     int
	TooMany string
	// Remote: an external cluster can run the database; DSNHint is the
	// "dsn: required" problem of a spec without a dsn ("": the DSN is
	// built from the members).
	Remote  bool
	DSNHint string
}

// CheckDescription fails t where the registered engine d.Engine does not
// describe itself as d says.
func CheckDescription(t *testing.T, d Description) {
	t.Helper()
	errText := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	if !slices.Contains(cluster.Engines(), d.Engine) {
		t.Fatalf("engine %q is not registered (registered: %v)", d.Engine, cluster.Engines())
	}
	err := cluster.CheckNetwork(d.Engine, cluster.NetworkHosts)
	if d.NoHosts != "" {
		if got := errText(err); got != d.NoHosts {
			t.Errorf("--network hosts:\n got %q\nwant %q", got, d.NoHosts)
		}
	} else if err != nil && strings.Contains(err.Error(), "loopback only") {
		// Without root vnet.Check refuses; the engine must not.
		t.Errorf("--network hosts refused by the engine: %v", err)
	}
	if got := slices.Contains(cluster.HostsEngines(), d.Engine); got != (d.NoHosts == "") {
		t.Errorf("HostsEngines() has %s: %v, want %v", d.Engine, got, d.NoHosts == "")
	}
	if err := cluster.CheckNetwork(d.Engine, cluster.NetworkLoopback); err != nil {
		t.Errorf("--network loopback: %v", err)
	}
	if got := errText(cluster.CheckOptions(d.Engine, cluster.Options{Nodes: 1, Extra: map[string]string{"bogus": "1"}})); got != d.Bogus {
		t.Errorf("--opt bogus=1:\n got %q\nwant %q", got, d.Bogus)
	}
	if err := cluster.CheckOptions(d.Engine, cluster.Options{Nodes: 1}); err != nil {
		t.Errorf("no option refused: %v", err)
	}
	if d.Max == 0 {
		if err := cluster.CheckNodes(d.Engine, 1000, nil); err != nil {
			t.Errorf("--nodes 1000 refused by an engine without a limit: %v", err)
		}
	} else {
		if err := cluster.CheckNodes(d.Engine, d.Max, nil); err != nil {
			t.Errorf("--nodes %d (the limit) refused: %v", d.Max, err)
		}
		if got := errText(cluster.CheckNodes(d.Engine, d.Max+1, nil)); got != d.TooMany {
			t.Errorf("--nodes %d:\n got %q\nwant %q", d.Max+1, got, d.TooMany)
		}
	}
	if got := errText(cluster.CheckNodes(d.Engine, 0, nil)); got != "--nodes must be at least 1 (got 0)" {
		t.Errorf("--nodes 0: %q", got)
	}
	if got := slices.Contains(cluster.ExternalDatabases(), d.Engine); got != d.Remote {
		t.Errorf("ExternalDatabases() has %s: %v, want %v", d.Engine, got, d.Remote)
	}
	spec := cluster.ExternalSpec{Database: d.Engine, Members: []cluster.ExternalMember{{Name: "a", Host: "h", Port: 1}}}
	var problems []string
	for _, err := range spec.Problems(nil, 0) {
		problems = append(problems, err.Error())
	}
	var want []string
	switch {
	case !d.Remote:
		want = []string{`database: "` + d.Engine + `": fieldbench can ask only ` + strings.Join(cluster.ExternalDatabases(), ", ") + ` about nodes it did not start`}
	case d.DSNHint != "":
		want = []string{d.DSNHint}
	}
	if !slices.Equal(problems, want) {
		t.Errorf("external spec without a dsn: problems %q, want %q", problems, want)
	}
}
