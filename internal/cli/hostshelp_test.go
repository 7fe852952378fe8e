package cli

import (
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/fieldbench/fieldbench/cluster"
)

// The help texts that say which engines run on --network hosts name
// exactly those the engines say (cluster.HostsEngines), and the others as
// the ones that do not: the lists were written by hand and would have
// gone stale with the next engine (issue 45, point 2). Covers cluster up
// --network, --cluster-network of every command that has it, and
// experiment's network: hosts.
func TestHelpNamesHostsEngines(t *testing.T) {
	t.Parallel()
	var profile *os.File
	root := newRoot(io.Discard, io.Discard, &profile)
	wantHosts := cluster.HostsEngines()
	var wantLoopback []string
	for _, e := range cluster.Engines() {
		if !slices.Contains(wantHosts, e) {
			wantLoopback = append(wantLoopback, e)
		}
	}
	if len(wantHosts) == 0 {
		t.Fatal("no engine runs on hosts: cluster.HostsEngines() is empty")
	}
	word := regexp.MustCompile(`[a-z]+`)
	check := func(where, text string) {
		t.Helper()
		text = strings.Join(strings.Fields(text), " ")
		var hosts, loopback []string
		prev := ""
		for _, w := range word.FindAllString(text, -1) {
			if slices.Contains(cluster.Engines(), w) {
				if prev == "not" || prev == "but" {
					loopback = append(loopback, w)
				} else {
					hosts = append(hosts, w)
				}
			}
			prev = w
		}
		slices.Sort(hosts)
		slices.Sort(loopback)
		if !slices.Equal(hosts, wantHosts) || !slices.Equal(loopback, wantLoopback) {
			t.Errorf("%s names %v on hosts and %v not, want %v and %v: %q", where, hosts, loopback, wantHosts, wantLoopback, text)
		}
	}
	up, _, err := root.Find([]string{"cluster", "up"})
	if err != nil {
		t.Fatal(err)
	}
	check("cluster up --network", up.Flags().Lookup("network").Usage)
	seen := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if f := c.Flags().Lookup("cluster-network"); f != nil {
			seen++
			check(c.CommandPath()+" --cluster-network", f.Usage)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	if seen == 0 {
		t.Error("no command has --cluster-network")
	}
	if run, _, err := root.Find([]string{"run", "microblog"}); err != nil || run.Flags().Lookup("cluster-network") == nil {
		t.Errorf("run microblog has no --cluster-network (%v)", err)
	}
	exp, _, err := root.Find([]string{"experiment"})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Join(strings.Fields(exp.Long), " ")
	i := strings.Index(long, "network: hosts puts each node")
	j := strings.Index(long[max(i, 0):], "docs/network.md")
	if i < 0 || j < 0 {
		t.Fatalf("experiment --help no longer says which engines run on hosts: %q", long)
	}
	check("experiment --help (network: hosts)", long[i:i+j])
}
