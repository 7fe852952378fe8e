package convergence

func init() {
	inapplicable["mongodb"] = "the mongodb engine runs one FerretDB server, which has no replication: there is no other node to read a write on"
}
