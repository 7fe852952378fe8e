package experiment

import (
	"strings"
	"testing"
)

// externalBase is a valid external scenario; each case of
// TestParseExternal changes one part of it.
const externalBase = `name: ext
cluster:
  engine: external
  database: redis
  members:
    - {name: r1, host: 10.0.0.1, port: 6379}
    - {name: r2, host: 10.0.0.2, port: 6379}
    - {name: r3, host: 10.0.0.3, port: 6379, spare: true}
  commands:
    kill: ssh {host} sudo systemctl kill -s KILL redis
    restart: "ssh {host} sudo systemctl start redis"
    add: kubectl scale statefulset redis --replicas {n}
workload: {name: microblog, options: {duration: 60s}}
timeline:
  - {at: 10s, do: kill, nodes: [r2]}
  - {at: 20s, do: restart, nodes: [r2]}
`

// TestParseExternal: an external cluster's members and command templates
// are checked at parse time, each problem with its line.
func TestParseExternal(t *testing.T) {
	if _, err := Parse([]byte(externalBase)); err != nil {
		t.Fatalf("the base scenario: %v", err)
	}
	sc, _ := Parse([]byte(externalBase))
	if sc.Cluster.Nodes != 2 {
		t.Errorf("nodes = %d, want the 2 members that are not spares", sc.Cluster.Nodes)
	}
	tests := []struct{ name, old, new, want string }{
		{"unknown placeholder", "kill -s KILL redis", "kill -s KILL {service}", `line 10: cluster.commands.kill: unknown placeholder {service}`},
		{"unclosed quote", "systemctl kill -s KILL redis", "systemctl kill -s 'KILL redis", `line 10: cluster.commands.kill: unclosed '`},
		{"action without a command", "    restart: \"ssh {host} sudo systemctl start redis\"\n", "", `cluster.commands.restart: the timeline does restart: give its command`},
		{"not an action", "    add: kubectl", "    grow: kubectl", `line 12: cluster.commands.grow: not a node action`},
		{"no nodes", "    - {name: r1, host: 10.0.0.1, port: 6379}\n    - {name: r2, host: 10.0.0.2, port: 6379}\n", "", `cluster.members: at least one node that is a member`},
		{"no host", "{name: r2, host: 10.0.0.2, port: 6379}", "{name: r2, port: 6379}", `line 7: cluster.members[1].host: required`},
		{"bad port", "host: 10.0.0.2, port: 6379", "host: 10.0.0.2, port: 0", `line 7: cluster.members[1].port: 0 is not a port`},
		{"name a path", "{name: r2, host: 10.0.0.2", `{name: "../r2", host: 10.0.0.2`, `line 7: cluster.members[1].name: "../r2" holds a path separator`},
		{"name with a newline", "{name: r2, host: 10.0.0.2", `{name: "r\n2", host: 10.0.0.2`, `line 7: cluster.members[1].name: "r\n2" holds a control character`},
		{"same name twice", "{name: r2, host: 10.0.0.2", "{name: r1, host: 10.0.0.2", `line 7: cluster.members[1].name: "r1" names two members`},
		{"unknown database", "database: redis", "database: oracle", `line 4: cluster.database: "oracle": fieldbench can ask only cassandra, couchbase, couchdb, hbase, mongodb, redis, rethinkdb, sqlserver`},
		{"hbase without the gateway's DSN", "database: redis", "database: hbase", `cluster.dsn: required with database hbase: the adapter's DSN naming the REST gateway`},
		{"no database", "  database: redis\n", "", `cluster.database: required with engine external`},
		{"node not a member", "nodes: [r2]}\n  - {at: 20s", "nodes: [r9]}\n  - {at: 20s", `line 15: timeline[0].nodes[0]: "r9" is not a member of the external cluster`},
		{"local key on a local engine", "engine: external", "engine: redis\n  nodes: 2", `cluster.members: only for engine external`},
		{"engine options", "  database: redis\n", "  database: redis\n  options: {replicas: \"1\"}\n", `cluster.options: engine options are for the clusters fieldbench starts`},
		{"add names a node, no spare left", "  - {at: 20s, do: restart, nodes: [r2]}\n", "  - {at: 20s, do: add, count: 2}\n", `cluster.commands.add: uses {name}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := strings.Replace(externalBase, tt.old, tt.new, 1)
			if src == externalBase {
				t.Fatalf("the case changes nothing: %q", tt.old)
			}
			if tt.name == "add names a node, no spare left" {
				src = strings.Replace(src, "--replicas {n}", "--replicas {n} --pod {name}", 1)
			}
			_, err := Parse([]byte(src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v\nwant an error containing %q", err, tt.want)
			}
		})
	}
}
