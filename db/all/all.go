// Package all links every database into what imports it — the binary,
// and every test that needs them all: each db/<name> holds one database
// whole (its adapter, its cluster engine, its external side, its
// convergence registration), registered by its init functions, and
// importing this package runs them; adapter/all brings the databases
// that have no folder yet and the workloads. A new folder is one line
// here (TestLinksEveryFolder). It imports adapter/all, not the other way
// round: a database folder stands above the adapter layer it builds on.
package all

import (
	_ "github.com/fieldbench/fieldbench/adapter/all"
	_ "github.com/fieldbench/fieldbench/db/cassandra"
	_ "github.com/fieldbench/fieldbench/db/couchbase"
	_ "github.com/fieldbench/fieldbench/db/couchdb"
	_ "github.com/fieldbench/fieldbench/db/hbase"
	_ "github.com/fieldbench/fieldbench/db/mariadb"
	_ "github.com/fieldbench/fieldbench/db/mongodb"
	_ "github.com/fieldbench/fieldbench/db/postgres"
	_ "github.com/fieldbench/fieldbench/db/redis"
	_ "github.com/fieldbench/fieldbench/db/rethinkdb"
	_ "github.com/fieldbench/fieldbench/db/sqlite"
	_ "github.com/fieldbench/fieldbench/db/sqlserver"
)
