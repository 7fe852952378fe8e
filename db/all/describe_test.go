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

// What each engine says of itself before anything starts — whether it
// runs on --network hosts (and if not why), which options it refuses,
// how many nodes this machine may run, whether an external cluster can
// run its database — pinned engine by engine with the texts the user
// reads. Written against the tables keyed by engine name (optionCheckers,
// hostsEngines, noHosts, nodeLimits, remoteDBs) and kept when the engines
// came to answer for themselves (issue 45, point 2): it proves that move
// changed nothing a user sees. A newly registered engine fails it until
// it has its row. It lives here, where every database is linked (the
// engines of package cluster and those of the database folders, db/all):
// inside package cluster it would not see db/rethinkdb's engine.
func TestEngineDescriptions(t *testing.T) {
	t.Parallel()
	const (
		couchbaseWhy = "CouchbaseMock simulates every node inside one JVM that advertises one address, " +
			"so its nodes cannot be hosts of their own (they differ by port only, and a fault on one host would hit them all); " +
			"and the Couchbase SDK (gocbcore) dials key-value ports with a net.Dialer of its own, at addresses it reads from the bucket's configuration, " +
			"so an experiment's load cannot reach them from a load host. The mock already runs in a network namespace of its own (fbcb-*), " +
			"reached through a forwarder on 127.0.0.1; see docs/network.md"
	)
	rows := []struct {
		engine string
		// noHosts is CheckNetwork's error for --network hosts where the
		// engine runs on loopback only ("": it runs on hosts).
		noHosts string
		// bogus is CheckOptions's error for --opt bogus=1 ("": the engine
		// takes any option).
		bogus string
		// max is the most nodes CheckNodes accepts (0: no limit of its
		// own), and tooMany its error for max+1.
		max     int
		tooMany string
		// remote: an external cluster can run the database; dsnHint is
		// the "dsn: required" problem of a spec without a dsn ("": the
		// DSN is built from the members).
		remote  bool
		dsnHint string
	}{
		{engine: "cassandra",
			bogus: `cassandra: unknown option "bogus" (known: version, heap, rf (a number or nodes), consistency, replicas, request_timeout, dcs)`,
			max:   8, tooMany: "cassandra: 9 node(s) is more than the 8 this machine can run: each node is a JVM with its own heap (512 MB by default, about 1 GB resident), and nodes join one at a time (about a minute each)",
			remote: true},
		{engine: "couchbase",
			noHosts: "--network hosts: the couchbase engine starts on loopback only: " + couchbaseWhy,
			bogus:   `couchbase: option bogus="1": the engine's one option is buckets=N (0..32), extra buckets fb1..fbN besides default`,
			max:     8, tooMany: "couchbase: 9 node(s) is more than the 8 this machine can run: CouchbaseMock simulates every node in one JVM: more nodes are more threads of that one process",
			remote: true, dsnHint: "dsn: required with database couchbase: the adapter's DSN (couchbase://host:kvport/bucket): the members are REST addresses (port 8091)"},
		{engine: "couchdb",
			bogus: `couchdb: unknown option "bogus" (the engine has none)`,
			max:   8, tooMany: "couchdb: 9 node(s) is more than the 8 this machine can run: each node is a Node.js pouchdb-server process (about 100 MB resident) that replicates every database from every other node, so replication work grows with the square of the nodes",
			remote: true},
		{engine: "hbase",
			bogus:  `hbase: unknown option "bogus" (known: heap, rest-heap, rest-client-timeout, balancer-period, rs-hosts)`,
			remote: true, dsnHint: "dsn: required with database hbase: the adapter's DSN naming the REST gateway (hbase://host:8080): the members are region servers"},
		{engine: "mariadb",
			bogus: `mariadb: unknown option "bogus" (known: galera)`,
			max:   9, tooMany: "mariadb: 10 node(s) is more than the 9 this machine can run: each node is a full MariaDB server (buffer pool, and in Galera a full state transfer to join)"},
		{engine: "mongodb",
			bogus:  `mongodb: unknown option "bogus" (known: log-level)`,
			remote: true},
		{engine: "postgres",
			max: 16, tooMany: "postgres: 17 node(s) is more than the 16 this machine can run: each node is a full PostgreSQL server (shared buffers, WAL sender, a base backup of the primary)"},
		{engine: "redis",
			bogus: `redis: unknown option "bogus" (known: replicas, standalone, node-timeout, appendfsync)`,
			max:   64, tooMany: "redis: 65 node(s) is more than the 64 this machine can run: each Redis server is a process with a client port, a cluster bus port, an append-only file and a log; 64 servers (masters × (1 + replicas)) already outnumber this machine's cores many times over",
			remote: true},
		{engine: "rethinkdb",
			bogus:  `rethinkdb: unknown option "bogus" (the engine has none)`,
			remote: true},
		{engine: "sqlserver",
			bogus:  `sqlserver: unknown option "bogus" (known: storage)`,
			remote: true},
	}
	var names, hosts, remote []string
	for _, tc := range rows {
		names = append(names, tc.engine)
		if tc.noHosts == "" {
			hosts = append(hosts, tc.engine)
		}
		if tc.remote {
			remote = append(remote, tc.engine)
		}
	}
	if got := cluster.Engines(); !slices.Equal(got, names) {
		t.Fatalf("registered engines %v, the table describes %v: give every engine its row", got, names)
	}
	errText := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	for _, tc := range rows {
		t.Run(tc.engine, func(t *testing.T) {
			err := cluster.CheckNetwork(tc.engine, cluster.NetworkHosts)
			if tc.noHosts != "" {
				if got := errText(err); got != tc.noHosts {
					t.Errorf("--network hosts:\n got %q\nwant %q", got, tc.noHosts)
				}
			} else if err != nil && strings.Contains(err.Error(), "loopback only") {
				// Without root vnet.Check refuses; the engine must not.
				t.Errorf("--network hosts refused by the engine: %v", err)
			}
			if err := cluster.CheckNetwork(tc.engine, cluster.NetworkLoopback); err != nil {
				t.Errorf("--network loopback: %v", err)
			}
			if got := errText(cluster.CheckOptions(tc.engine, cluster.Options{Nodes: 1, Extra: map[string]string{"bogus": "1"}})); got != tc.bogus {
				t.Errorf("--opt bogus=1:\n got %q\nwant %q", got, tc.bogus)
			}
			if err := cluster.CheckOptions(tc.engine, cluster.Options{Nodes: 1}); err != nil {
				t.Errorf("no option refused: %v", err)
			}
			if tc.max == 0 {
				if err := cluster.CheckNodes(tc.engine, 1000, nil); err != nil {
					t.Errorf("--nodes 1000 refused by an engine without a limit: %v", err)
				}
			} else {
				if err := cluster.CheckNodes(tc.engine, tc.max, nil); err != nil {
					t.Errorf("--nodes %d (the limit) refused: %v", tc.max, err)
				}
				if got := errText(cluster.CheckNodes(tc.engine, tc.max+1, nil)); got != tc.tooMany {
					t.Errorf("--nodes %d:\n got %q\nwant %q", tc.max+1, got, tc.tooMany)
				}
			}
			if got := errText(cluster.CheckNodes(tc.engine, 0, nil)); got != "--nodes must be at least 1 (got 0)" {
				t.Errorf("--nodes 0: %q", got)
			}
			spec := cluster.ExternalSpec{Database: tc.engine, Members: []cluster.ExternalMember{{Name: "a", Host: "h", Port: 1}}}
			var problems []string
			for _, err := range spec.Problems(nil, 0) {
				problems = append(problems, err.Error())
			}
			var want []string
			switch {
			case !tc.remote:
				want = []string{`database: "` + tc.engine + `": fieldbench can ask only ` + strings.Join(remote, ", ") + ` about nodes it did not start`}
			case tc.dsnHint != "":
				want = []string{tc.dsnHint}
			}
			if !slices.Equal(problems, want) {
				t.Errorf("external spec without a dsn: problems %q, want %q", problems, want)
			}
		})
	}
	if got := cluster.HostsEngines(); !slices.Equal(got, hosts) {
		t.Errorf("HostsEngines() = %v, want %v", got, hosts)
	}
	if got := cluster.ExternalDatabases(); !slices.Equal(got, remote) {
		t.Errorf("ExternalDatabases() = %v, want %v", got, remote)
	}
	// An engine that is not registered (external, a typo) runs on loopback
	// only, and the error lists the engines that run on hosts.
	for _, name := range []string{"nosuch", cluster.EngineExternal} {
		err := errText(cluster.CheckNetwork(name, cluster.NetworkHosts))
		prefix := "--network hosts: the " + name + " engine starts on loopback only (hosts: "
		list, ok := strings.CutPrefix(err, prefix)
		list, ok2 := strings.CutSuffix(list, ")")
		got := strings.Split(list, ", ")
		slices.Sort(got)
		if !ok || !ok2 || !slices.Equal(got, hosts) {
			t.Errorf("%s --network hosts: %q, want %q and the engines %v", name, err, prefix+"...)", hosts)
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
