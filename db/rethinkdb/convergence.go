package rethinkdb

import "github.com/fieldbench/fieldbench/convergence"

// Convergence (the time until a write is visible on every node) means
// nothing on the engine's one reqlite server: experiment/convergence's
// Open refuses it with this reason.
func init() {
	convergence.RegisterInapplicable(Name, "the rethinkdb engine runs one reqlite server, which has no replication: there is no other node to read a write on")
}
