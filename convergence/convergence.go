// Package convergence measures how long a write made through one node takes
// to become visible when every other node is read directly — the "time for
// a new tweet to be seen on every node" of the microblogging study (seed
// 000, section V.E), which reported its mean and standard deviation for
// Cassandra and Couchbase.
//
// A Prober knows one replicated database: which node it writes through,
// which nodes it can read directly, and how. Measure drives any Prober: it
// writes a unique key per round and polls every other node concurrently
// until the value appears or a timeout passes. Open picks the Prober for a
// cluster started by the cluster package (PostgreSQL streaming replicas,
// Redis Cluster replicas, a MariaDB Galera cluster, Cassandra, couchdb
// nodes replicating each other). What
// "directly" means for each is written down in docs/convergence.md.
package convergence

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
)

// Prober writes through one node and reads single nodes. Implementations
// are safe for concurrent use: Measure reads every node from its own
// goroutine (one at a time per node).
type Prober interface {
	// Nodes are the names (as in the cluster description) of the nodes the
	// prober can read, the writer's node included.
	Nodes() []string
	// Write stores value under key and returns once the database
	// acknowledged it, with the name of the node it went through.
	Write(ctx context.Context, key, value string) (writer string, err error)
	// Read asks node alone for key: found is false when the node does not
	// (yet) have it.
	Read(ctx context.Context, node, key string) (value string, found bool, err error)
	// Settings are the facts that decide what is measured (consistency
	// levels, replication factor, wsrep_sync_wait, synchronous_commit...),
	// for the result.
	Settings() map[string]string
	Close() error
}

// Options choose the replica setting a Prober measures. Zero values take
// the defaults documented on each field.
type Options struct {
	// CassandraWrite and CassandraRead are consistency levels (ONE, TWO,
	// QUORUM, ALL...; default ONE for both, the study's setting).
	CassandraWrite, CassandraRead string
	// CassandraRF is the replication factor of the keyspace the prober
	// creates (default: the number of running nodes, at most 3).
	CassandraRF int
	// CassandraKeyspace is that keyspace (default fieldbench_convergence).
	// It is dropped and created again by Open, so that its RF is RF.
	CassandraKeyspace string

	// RedisMaster names the master whose replicas are read (default: the
	// first master in the cluster description that has a replica). Keys
	// are given a hash tag that places them in one of its slots.
	RedisMaster string

	// MariaDBSyncWait, when not nil, is the session value of
	// wsrep_sync_wait on the reading connections (1 makes a Galera read
	// wait until the node has applied everything committed before it);
	// nil leaves the server's setting (0 by default: reads do not wait).
	MariaDBSyncWait *int
}

// Table is the table (or Cassandra table, Redis key prefix) the probers
// write to. It lives in the engine's benchmark database and holds one small
// row per round.
const Table = "fieldbench_convergence"

// Open connects a Prober to c, chosen by c.Engine. Engines without
// replicas to read (or with none started) give an error wrapping
// cluster.ErrUnsupported.
func Open(ctx context.Context, c *cluster.Cluster, opts Options) (Prober, error) {
	if c == nil {
		return nil, errors.New("convergence: no cluster")
	}
	// An external cluster is measured like the database it runs.
	if why, ok := inapplicable[c.DB()]; ok {
		return nil, fmt.Errorf("convergence: %s: %w", why, cluster.ErrUnsupported)
	}
	open, ok := openers[c.DB()]
	if !ok {
		return nil, fmt.Errorf("convergence: engine %q: %w (convergence is measured on: %s)", c.DB(), cluster.ErrUnsupported, strings.Join(Engines(), ", "))
	}
	return open(ctx, c, opts)
}

// openers are the engines a Prober can be opened on; each engine's file
// registers its own.
var openers = map[string]func(context.Context, *cluster.Cluster, Options) (Prober, error){}

// Register records how to open a Prober on engine; a database folder's
// convergence.go calls it from init. It panics on a second registration.
func Register(engine string, open func(context.Context, *cluster.Cluster, Options) (Prober, error)) {
	if _, dup := openers[engine]; dup {
		panic("convergence: duplicate registration of " + engine)
	}
	openers[engine] = open
}

// inapplicable are engines that fieldbench starts without replicas, with
// the reason convergence means nothing on them.
var inapplicable = map[string]string{}

// RegisterInapplicable records that convergence means nothing on engine
// (one fieldbench starts without replicas) and why: Open refuses it with
// that reason, wrapping cluster.ErrUnsupported. Exported for a database's
// own folder, whose convergence.go calls it from init (db/mongodb,
// db/rethinkdb); it panics on a second registration of engine.
func RegisterInapplicable(engine, why string) {
	if _, dup := inapplicable[engine]; dup {
		panic("convergence: duplicate registration of " + engine)
	}
	inapplicable[engine] = why
}

// Engines lists the engines convergence can be measured on, sorted.
func Engines() []string {
	out := make([]string, 0, len(openers))
	for e := range openers {
		out = append(out, e)
	}
	sort.Strings(out)
	return out
}

// Running are the nodes of c that are not stopped, with at least two
// required: one to write through and one to read.
func Running(c *cluster.Cluster) ([]*cluster.Node, error) {
	var out []*cluster.Node
	var names []string
	for _, n := range c.Nodes {
		if !n.Stopped {
			out = append(out, n)
			names = append(names, n.Name)
		}
	}
	if len(out) < 2 {
		return nil, fmt.Errorf("convergence: the %s cluster has %d running node(s) [%s]; a write must be read on another node: %w",
			c.Engine, len(out), strings.Join(names, " "), cluster.ErrUnsupported)
	}
	return out, nil
}

// WaitAll polls check every 50 ms until it succeeds or limit passes: schema
// objects the prober creates must exist on every node before round one, or
// the first round would measure DDL propagation.
func WaitAll(ctx context.Context, limit time.Duration, what string, check func(context.Context) error) error {
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		err := check(wctx)
		if err == nil {
			return nil
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("convergence: %s not ready within %v: %w", what, limit, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
