package cluster

// RecordSpawn is recordSpawn for the tests of package cluster_test, which
// announce a process in a cluster's SpawnLog as Start does (those tests
// link db/all for a real engine, which package cluster's cannot: a
// database folder imports cluster).
var RecordSpawn = recordSpawn
