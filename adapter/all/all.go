// Package all links every workload and adapter into the binary: importing it
// runs their registrations. The databases that are one folder each
// (db/<name>: adapter and cluster engine together) come through db/all.
package all

import (
	_ "github.com/fieldbench/fieldbench/adapter/cassandra"
	_ "github.com/fieldbench/fieldbench/adapter/couchbase"
	_ "github.com/fieldbench/fieldbench/adapter/couchdb"
	_ "github.com/fieldbench/fieldbench/adapter/hbase"
	_ "github.com/fieldbench/fieldbench/adapter/mariadb"
	_ "github.com/fieldbench/fieldbench/adapter/null"
	_ "github.com/fieldbench/fieldbench/adapter/postgres"
	_ "github.com/fieldbench/fieldbench/adapter/redis"
	_ "github.com/fieldbench/fieldbench/adapter/sqlite"
	_ "github.com/fieldbench/fieldbench/db/all"
	_ "github.com/fieldbench/fieldbench/workload/ingest"
	_ "github.com/fieldbench/fieldbench/workload/microblog"
	_ "github.com/fieldbench/fieldbench/workload/trajectory"
	_ "github.com/fieldbench/fieldbench/workload/wiki"
)
