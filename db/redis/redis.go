// Package redis is fieldbench's adapter for Redis and Redis Cluster, through
// go-redis (github.com/redis/go-redis/v9). Keys are designed so that every
// multi-key operation the workloads need stays inside one hash slot
// ({hash tags}); operations spanning slots are pipelined, not transactions,
// and say so (docs/redis.md).
//
// DSN:
//
//	redis://[user:password@]host:port                       one server
//	redis://host:port?cluster=1&addrs=host:port,host:port   Redis Cluster
//
// Other query options: pool=N (connections per node, default 10 ×
// GOMAXPROCS as go-redis does), timeout=DURATION (read and write timeouts,
// default 30s: a populate pipeline can be large).
package redis

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/adapter/rawio"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/workload/ingest"
	"github.com/fieldbench/fieldbench/workload/microblog"
	"github.com/fieldbench/fieldbench/workload/trajectory"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// Name is the adapter's name and DSN scheme.
const Name = "redis"

func init() {
	adapter.Register(Adapter{})
	// go-redis logs dial failures itself; fieldbench counts errors per
	// operation instead, and a log line could carry an address list.
	goredis.SetLogger(quietLogger{})
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// Adapter opens Redis DSNs.
type Adapter struct{}

// Name implements adapter.Adapter.
func (Adapter) Name() string { return Name }

// Schemes implements adapter.Adapter.
func (Adapter) Schemes() []string { return []string{Name} }

// Families implements adapter.Adapter.
func (Adapter) Families() []string { return adapter.FamiliesOf((*DB)(nil)) }

// Describe implements adapter.Adapter.
func (Adapter) Describe() string {
	return "Redis or Redis Cluster (go-redis, pipelines, GEO); DSN redis://host:port[?cluster=1&addrs=host:port,...]"
}

// Open implements adapter.Adapter.
func (Adapter) Open(ctx context.Context, dsn string) (adapter.DB, error) { return Open(ctx, dsn) }

// CheckDSN implements adapter.Adapter: ParseDSN, connecting to nothing.
func (Adapter) CheckDSN(dsn string) error {
	_, err := ParseDSN(dsn)
	return err
}

// Config is a parsed DSN.
type Config struct {
	Addrs    []string
	Cluster  bool
	Username string
	Password string
	PoolSize int
	Timeout  time.Duration
}

// ParseDSN reads a redis:// DSN.
func ParseDSN(dsn string) (Config, error) {
	c, err := parseDSN(dsn)
	return c, adapter.BadDSN(err)
}

// parseDSN is ParseDSN without the marking of its errors.
func parseDSN(dsn string) (Config, error) {
	u, err := adapter.ParseURL(dsn)
	if err != nil {
		return Config{}, fmt.Errorf("redis: %w", err)
	}
	if u.Scheme != Name {
		return Config{}, fmt.Errorf("redis DSN must look like redis://host:port[?cluster=1&addrs=host:port,...] (got %q)", redact.DSN(dsn))
	}
	if u.Host == "" {
		return Config{}, fmt.Errorf("redis DSN %q has no host:port", redact.DSN(dsn))
	}
	c := Config{Addrs: []string{u.Host}, PoolSize: 10 * runtime.GOMAXPROCS(0), Timeout: 30 * time.Second}
	if u.User != nil {
		c.Username = u.User.Username()
		c.Password, _ = u.User.Password()
	}
	if u.Path != "" && u.Path != "/" && u.Path != "/0" {
		return Config{}, fmt.Errorf("redis DSN %q: only database 0 is supported (Redis Cluster has no other)", redact.DSN(dsn))
	}
	for k, vs := range u.Query() {
		v := vs[len(vs)-1]
		switch k {
		case "cluster":
			c.Cluster, err = strconv.ParseBool(v)
		case "addrs":
			for _, a := range strings.Split(v, ",") {
				if a = strings.TrimSpace(a); a != "" && err == nil {
					err = adapter.CheckAddr(a)
					c.Addrs = append(c.Addrs, a)
				}
			}
		case "pool":
			c.PoolSize, err = strconv.Atoi(v)
			if err == nil && c.PoolSize < 1 {
				err = errors.New("want at least 1")
			}
		case "timeout":
			c.Timeout, err = time.ParseDuration(v)
		default:
			return Config{}, fmt.Errorf("redis DSN: unknown option %q (known: cluster, addrs, pool, timeout)", k)
		}
		if err != nil {
			return Config{}, fmt.Errorf("redis DSN option %s=%q: %w", k, v, err)
		}
	}
	if len(c.Addrs) > 1 && !c.Cluster {
		return Config{}, errors.New("redis DSN: addrs= lists cluster nodes; add cluster=1")
	}
	return c, nil
}

// DB is an open Redis (Cluster) connection. It implements adapter.DB,
// adapter.Sizer and the four families' Backends.
type DB struct {
	cfg Config
	rdb goredis.UniversalClient
	cc  *goredis.ClusterClient // nil for one server
	// dials space out reconnections to a server that refuses them, one
	// Backoff per node; see adapter.Backoff.
	dials *adapter.Backoffs
}

var (
	_ adapter.DB          = (*DB)(nil)
	_ adapter.Sizer       = (*DB)(nil)
	_ adapter.Pooler      = (*DB)(nil)
	_ adapter.Reconnector = (*DB)(nil)
	_ microblog.Backend   = (*DB)(nil)
	_ wiki.Backend        = (*DB)(nil)
	_ ingest.Backend      = (*DB)(nil)
	_ trajectory.Backend  = (*DB)(nil)
)

// Open connects and pings.
func Open(ctx context.Context, dsn string) (*DB, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	db := &DB{cfg: cfg, dials: &adapter.Backoffs{}}
	dial := rawio.Dial(db.dials.DialFunc(nil)) // see adapter/rawio
	// One dial per new connection: the backoff spaces the dials already,
	// and go-redis's own 5 attempts (each waiting out the backoff) held an
	// operation for seconds while its node was down (issue 31).
	const dialerRetries = 1
	if cfg.Cluster {
		db.cc = goredis.NewClusterClient(&goredis.ClusterOptions{
			Addrs: cfg.Addrs, Username: cfg.Username, Password: cfg.Password,
			PoolSize: cfg.PoolSize, ReadTimeout: cfg.Timeout, WriteTimeout: cfg.Timeout,
			DisableIdentity: true, Protocol: 2, Dialer: dial, DialerRetries: dialerRetries,
		})
		db.cc.AddHook(reloadOnNetError{cc: db.cc})
		db.rdb = db.cc
	} else {
		db.rdb = goredis.NewClient(&goredis.Options{
			Addr: cfg.Addrs[0], Username: cfg.Username, Password: cfg.Password,
			PoolSize: cfg.PoolSize, ReadTimeout: cfg.Timeout, WriteTimeout: cfg.Timeout,
			DisableIdentity: true, Protocol: 2, Dialer: dial, DialerRetries: dialerRetries,
		})
	}
	if err := db.rdb.Ping(ctx).Err(); err != nil {
		db.rdb.Close()
		return nil, fmt.Errorf("redis: connect to %s: %w", strings.Join(cfg.Addrs, ","), err)
	}
	return db, nil
}

// Reconnects implements adapter.Reconnector: the dials to every node.
func (db *DB) Reconnects() adapter.BackoffStats { return db.dials.Reconnects() }

// Client is the underlying go-redis client (for tests and tools).
func (db *DB) Client() goredis.UniversalClient { return db.rdb }

// Close implements adapter.DB.
func (db *DB) Close() error { return db.rdb.Close() }

// Pools implements adapter.Pooler: go-redis's pool statistics (summed over
// the nodes of a cluster, whose pools' total size go-redis does not say:
// Max is then 0).
func (db *DB) Pools() adapter.PoolStats {
	s := db.rdb.PoolStats()
	p := adapter.PoolStats{Open: int(s.TotalConns), Waits: int64(s.WaitCount), Waited: time.Duration(s.WaitDurationNs)}
	if db.cc == nil {
		p.Max = db.cfg.PoolSize
	}
	return p
}

// forEachMaster runs fn on every master (the one server when not a
// cluster), concurrently in a cluster.
func (db *DB) forEachMaster(ctx context.Context, fn func(ctx context.Context, c *goredis.Client) error) error {
	if db.cc != nil {
		return db.cc.ForEachMaster(ctx, fn)
	}
	return fn(ctx, db.rdb.(*goredis.Client))
}

// infoField is one "key:value" line of an INFO answer.
func infoField(info, key string) string {
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == key {
			return v
		}
	}
	return ""
}

// Info implements adapter.DB: the server version and the configuration
// that matters for the figures (persistence, memory limit, cluster size).
func (db *DB) Info(ctx context.Context) (adapter.Info, error) {
	cfg := map[string]string{"driver": "github.com/redis/go-redis/v9", "cluster": strconv.FormatBool(db.cc != nil),
		"pool_per_node": strconv.Itoa(db.cfg.PoolSize)}
	var version string
	masters := 0
	var mu sync.Mutex
	err := db.forEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
		info, err := c.Info(ctx, "server").Result()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if version == "" {
			version = infoField(info, "redis_version")
			for _, p := range []string{"appendonly", "appendfsync", "save", "maxmemory", "maxmemory-policy", "cluster-node-timeout"} {
				if v, err := c.ConfigGet(ctx, p).Result(); err == nil {
					cfg[p] = v[p]
				}
			}
		}
		masters++
		return nil
	})
	if err != nil {
		return adapter.Info{}, fmt.Errorf("redis: info: %w", err)
	}
	cfg["masters"] = strconv.Itoa(masters)
	if m, err := db.MicroblogModel(ctx); err == nil && m != "" {
		cfg["microblog_model"] = string(m)
	}
	return adapter.Info{Name: Name, Version: version, Config: cfg}, nil
}

// SizeBytes implements adapter.Sizer: the sum over masters of the
// append-only file's size (INFO persistence aof_current_size) — what the
// data takes on disk, replicas' copies not counted. A server without AOF
// reports used_memory_dataset (the data's share of its memory) instead.
func (db *DB) SizeBytes(ctx context.Context) (int64, error) {
	var total atomic.Int64
	err := db.forEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
		info, err := c.Info(ctx, "persistence", "memory").Result()
		if err != nil {
			return err
		}
		field := "used_memory_dataset"
		if infoField(info, "aof_enabled") == "1" {
			field = "aof_current_size"
		}
		n, err := strconv.ParseInt(infoField(info, field), 10, 64)
		if err != nil {
			return fmt.Errorf("read %s: %w", field, err)
		}
		total.Add(n)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("redis: size: %w", err)
	}
	return total.Load(), nil
}

// scanDelete unlinks every key matching pattern on every master.
func (db *DB) scanDelete(ctx context.Context, pattern string) error {
	return db.forEachMaster(ctx, func(ctx context.Context, c *goredis.Client) error {
		// One UNLINK per key: a node refuses multi-key commands across
		// slots (CROSSSLOT) even when it owns them all.
		return scanKeys(ctx, c, pattern, func(keys []string) error {
			p := c.Pipeline()
			for _, k := range keys {
				p.Unlink(ctx, k)
			}
			_, err := p.Exec(ctx)
			return err
		})
	})
}

// scanKeys calls fn with each batch of keys matching pattern on one node.
func scanKeys(ctx context.Context, c *goredis.Client, pattern string, fn func([]string) error) error {
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, pattern, 1000).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			if err := fn(keys); err != nil {
				return err
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}
