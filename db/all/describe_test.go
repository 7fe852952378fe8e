package all

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/cluster"
)

// What every engine says of itself before anything starts, checked for
// all that are registered (each database folder pins its own words in
// its TestDescribe, clustertest.Description): the same checks pass for
// every engine, and an engine that is not registered (external, a typo)
// runs on loopback only, takes any option and any number of nodes, its
// --network hosts error listing the engines that run on hosts. Before
// issue 45 these answers came from tables keyed by engine name
// (optionCheckers, hostsEngines, noHosts, nodeLimits, remoteDBs); this
// test and the folders' rows were written against those tables and kept
// when the engines came to answer for themselves.
func TestEngineDescriptions(t *testing.T) {
	t.Parallel()
	hosts := cluster.HostsEngines()
	for _, name := range cluster.Engines() {
		t.Run(name, func(t *testing.T) {
			hostErr := cluster.CheckNetwork(name, cluster.NetworkHosts)
			onHosts := slices.Contains(hosts, name)
			if !onHosts && (hostErr == nil || !strings.HasPrefix(hostErr.Error(), "--network hosts: the "+name+" engine starts on loopback only")) {
				t.Errorf("not in HostsEngines, but --network hosts: %v", hostErr)
			}
			if onHosts && hostErr != nil && strings.Contains(hostErr.Error(), "loopback only") {
				t.Errorf("in HostsEngines, but --network hosts: %v", hostErr)
			}
			if err := cluster.CheckNetwork(name, cluster.NetworkLoopback); err != nil {
				t.Errorf("--network loopback: %v", err)
			}
			if err := cluster.CheckOptions(name, cluster.Options{Nodes: 1}); err != nil {
				t.Errorf("no option refused: %v", err)
			}
			if err := cluster.CheckOptions(name, cluster.Options{Nodes: 1, Extra: map[string]string{"bogus": "1"}}); err != nil && !strings.HasPrefix(err.Error(), name+": ") {
				t.Errorf("--opt bogus=1: %q does not name the engine first", err)
			}
			if err := cluster.CheckNodes(name, 0, nil); err == nil || err.Error() != "--nodes must be at least 1 (got 0)" {
				t.Errorf("--nodes 0: %v", err)
			}
			if err := cluster.CheckNodes(name, 1, nil); err != nil {
				t.Errorf("--nodes 1: %v", err)
			}
		})
	}
	for _, name := range []string{"nosuch", cluster.EngineExternal} {
		err := cluster.CheckNetwork(name, cluster.NetworkHosts)
		prefix := "--network hosts: the " + name + " engine starts on loopback only (hosts: "
		var list string
		ok, ok2 := false, false
		if err != nil {
			list, ok = strings.CutPrefix(err.Error(), prefix)
			list, ok2 = strings.CutSuffix(list, ")")
		}
		got := strings.Split(list, ", ")
		slices.Sort(got)
		if !ok || !ok2 || !slices.Equal(got, hosts) {
			t.Errorf("%s --network hosts: %v, want %q and the engines %v", name, err, prefix+"...)", hosts)
		}
		if err := cluster.CheckOptions(name, cluster.Options{Nodes: 1, Extra: map[string]string{"bogus": "1"}}); err != nil {
			t.Errorf("%s --opt bogus=1: %v", name, err)
		}
		if err := cluster.CheckNodes(name, 1000, nil); err != nil {
			t.Errorf("%s --nodes 1000: %v", name, err)
		}
	}
}

// TestDocsListEngines: the lists of engines the README and the reference
// print are the registry's (issue 45, point 2: every list of engines a
// user reads comes from, or is checked against, the registry): the
// README's "Engines:" sentence is cluster.Engines(), and every "every
// engine but X: A, B ... and Z" of the docs names LoopbackEngines as X and
// HostsEngines as the list, in their order.
func TestDocsListEngines(t *testing.T) {
	t.Parallel()
	read := func(path string) string {
		b, err := os.ReadFile(filepath.Join("..", "..", path))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(string(b)), " ") // lines joined
	}
	readme := read("README.md")
	if want := "Engines: " + strings.Join(cluster.Engines(), ", ") + " ("; !strings.Contains(readme, want) {
		t.Errorf("README.md does not say %q", want)
	}
	list := regexp.MustCompile(`every engine but ([a-z, ]+?): ([a-z]+(?:, [a-z]+)* and [a-z]+)`)
	want := cluster.WordList(cluster.LoopbackEngines(), "and") + ": " + cluster.WordList(cluster.HostsEngines(), "and")
	found := 0
	for _, doc := range []string{"docs/commands.md", "docs/experiments.md", "README.md"} {
		for _, m := range list.FindAllStringSubmatch(read(doc), -1) {
			found++
			if got := m[1] + ": " + m[2]; got != want {
				t.Errorf("%s says %q; the registry: %q", doc, got, want)
			}
		}
	}
	if found < 3 {
		t.Errorf("found %d lists of the engines on hosts in the docs, want at least 3 (commands.md twice, experiments.md)", found)
	}
}
