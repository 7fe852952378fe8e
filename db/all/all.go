// Package all links every database folder into what imports it: each
// db/<name> holds one database whole (its adapter, its cluster engine,
// its external side, its convergence registration), registered by its
// init functions, and importing this package runs them. adapter/all
// imports it, so the binary and every test that links adapter/all have
// every database. A new folder is one line here (TestLinksEveryFolder).
package all

import (
	_ "github.com/fieldbench/fieldbench/db/mongodb"
	_ "github.com/fieldbench/fieldbench/db/rethinkdb"
	_ "github.com/fieldbench/fieldbench/db/sqlserver"
)
