package convergence

func init() {
	inapplicable["rethinkdb"] = "the rethinkdb engine runs one reqlite server, which has no replication: there is no other node to read a write on"
}
