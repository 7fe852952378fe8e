package cluster

import (
	"strings"
	"testing"
)

// What `cluster up` and `cluster status` print of a cluster: a password
// never (the DSN masked, with where it is whole), the virtual network for
// a cluster on hosts, the command that stops it.
func TestWriteUpAndStatusOf(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		cl       Cluster
		up, stat []string // lines in each, in order
	}{
		{"no secret", Cluster{Engine: "redis", Version: "7.2", Dir: "/c/redis", DSN: "redis://127.0.0.1:7000", Nodes: []*Node{{}, {}}},
			[]string{"redis cluster of 2 node(s) is up in /c/redis", "DSN: redis://127.0.0.1:7000", "stop it with: fieldbench cluster down --dir /c/redis"},
			[]string{"redis 7.2 in /c/redis", "DSN: redis://127.0.0.1:7000", "", "NODE"}},
		{"a password, on hosts", Cluster{Engine: "mariadb", Version: "11", Dir: "/c/m", DSN: "mysql://root:s3cret@198.18.0.1:3306/fb", Network: NetworkHosts, Nodes: []*Node{{}}},
			[]string{"mariadb cluster of 1 node(s) is up in /c/m", "DSN: mysql://root:xxxxx@198.18.0.1:3306/fb",
				`the whole DSN, password included, is in /c/m/cluster.json (readable by you only): --db "$(fieldbench cluster dsn --dir /c/m)"`,
				"the nodes are hosts on the virtual network " + NetworkID("/c/m") + " (198.18.0.0/15)", "stop it with: fieldbench cluster down --dir /c/m"},
			[]string{"mariadb 11 in /c/m", "DSN: mysql://root:xxxxx@198.18.0.1:3306/fb", "network: hosts, each node a network namespace of its own on the virtual network " + NetworkID("/c/m"), "", "NODE"}},
	} {
		var up, stat strings.Builder
		WriteUp(&up, &c.cl)
		if err := WriteStatusOf(&stat, &c.cl, []NodeStatus{{Name: "n1", State: "up"}}); err != nil {
			t.Fatal(err)
		}
		for _, x := range []struct {
			what, got string
			want      []string
		}{{"up", up.String(), c.up}, {"status", stat.String(), c.stat}} {
			lines := strings.Split(x.got, "\n")
			if len(lines) < len(x.want) {
				t.Errorf("%s, %s: %q, want %q", c.name, x.what, x.got, x.want)
				continue
			}
			for i, w := range x.want {
				if !strings.HasPrefix(lines[i], w) || w == "" && lines[i] != "" {
					t.Errorf("%s, %s: line %d is %q, want %q", c.name, x.what, i+1, lines[i], w)
				}
			}
			if strings.Contains(x.got, "s3cret") {
				t.Errorf("%s, %s: the password is shown: %s", c.name, x.what, x.got)
			}
		}
	}
}
