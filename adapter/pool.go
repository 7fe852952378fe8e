package adapter

import (
	"database/sql"
	"time"
)

// PoolStats is what a DB's connection pools say about themselves, read from
// the driver's own pool statistics (pgxpool's Stat, go-redis's PoolStats,
// database/sql's DBStats): how many connections served the run's clients,
// and how long clients waited for one. Clients are goroutines and share the
// pools the adapter sized; a client's wait for a pooled connection is part
// of its latency.
type PoolStats struct {
	// Open is the number of connections open now, over every pool.
	Open int
	// Max is the pools' capacity over every pool (0: unbounded, or the
	// driver does not say).
	Max int
	// Waits is how many acquisitions found no free connection and waited
	// for one, since the DB was opened; Waited is their total wait.
	Waits  int64
	Waited time.Duration
}

// Add is the sum of two pools' figures (a DB with several pools).
func (p PoolStats) Add(q PoolStats) PoolStats {
	return PoolStats{Open: p.Open + q.Open, Max: p.Max + q.Max, Waits: p.Waits + q.Waits, Waited: p.Waited + q.Waited}
}

// Pooler is an optional capability of a DB that pools its connections and
// can read the pool's statistics from its driver. Pools is called about
// once a second while a run goes on, so it must be cheap (no round trip to
// the server).
type Pooler interface {
	Pools() PoolStats
}

// SQLPoolStats is the PoolStats of a database/sql pool.
func SQLPoolStats(db *sql.DB) PoolStats {
	s := db.Stats()
	return PoolStats{Open: s.OpenConnections, Max: s.MaxOpenConnections, Waits: s.WaitCount, Waited: s.WaitDuration}
}
