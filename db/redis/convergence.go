package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/convergence"
)

func init() { convergence.Register(Name, openRedis) }

// redisProber writes to one master of a Redis Cluster and reads its
// replicas directly, each over a connection in READONLY mode (without it a
// replica answers MOVED to the master). Every key carries a hash tag chosen
// so that its slot is served by that master: only the replicas of the
// master owning a key's slot hold it. Redis replication is asynchronous:
// the master acknowledges before any replica has the write.
type redisProber struct {
	master   string
	names    []string
	clients  map[string]*goredis.Client
	tag      string
	settings map[string]string
}

// redisClusterNode is one line of CLUSTER NODES.
type redisClusterNode struct {
	id, addr, flags, master string
	slots                   [][2]int
}

func parseRedisNodes(s string) []redisClusterNode {
	var out []redisClusterNode
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		cn := redisClusterNode{id: f[0], addr: addr, flags: f[2], master: f[3]}
		for _, sl := range f[8:] {
			if strings.HasPrefix(sl, "[") {
				continue // a slot being migrated
			}
			lo, hi, rng := strings.Cut(sl, "-")
			a, err1 := strconv.Atoi(lo)
			b := a
			var err2 error
			if rng {
				b, err2 = strconv.Atoi(hi)
			}
			if err1 == nil && err2 == nil {
				cn.slots = append(cn.slots, [2]int{a, b})
			}
		}
		out = append(out, cn)
	}
	return out
}

func (cn redisClusterNode) healthy() bool {
	return !strings.Contains(cn.flags, "fail") && !strings.Contains(cn.flags, "handshake") && !strings.Contains(cn.flags, "noaddr")
}

func (cn redisClusterNode) owns(slot int) bool {
	for _, r := range cn.slots {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}

func redisClient(n *cluster.Node, readonly bool) *goredis.Client {
	o := &goredis.Options{Addr: n.Addr(), DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second,
		WriteTimeout: 5 * time.Second, PoolSize: 2, MaxRetries: -1, Protocol: 2, DisableIdentity: true}
	if readonly {
		o.OnConnect = func(ctx context.Context, cn *goredis.Conn) error { return cn.ReadOnly(ctx).Err() }
	}
	return goredis.NewClient(o)
}

func openRedis(ctx context.Context, c *cluster.Cluster, opts convergence.Options) (_ convergence.Prober, err error) {
	if c.Options["standalone"] == "true" {
		return nil, fmt.Errorf("convergence: redis: a standalone server has no replica (start a cluster with --opt replicas=1): %w", cluster.ErrUnsupported)
	}
	nodes, err := convergence.Running(c)
	if err != nil {
		return nil, err
	}
	byAddr := map[string]*cluster.Node{}
	for _, n := range nodes {
		byAddr[n.Addr()] = n
	}
	// The cluster's own view of who replicates whom (roles change on
	// failover; the cluster description may be older).
	var view []redisClusterNode
	var errs []error
	for _, n := range nodes {
		cl := redisClient(n, false)
		s, err := cl.ClusterNodes(ctx).Result()
		cl.Close()
		if err == nil {
			view = parseRedisNodes(s)
			break
		}
		errs = append(errs, fmt.Errorf("%s: %w", n.Name, err))
	}
	if view == nil {
		return nil, fmt.Errorf("convergence: redis: no node answered CLUSTER NODES: %w", errors.Join(errs...))
	}
	replicasOf := map[string][]*cluster.Node{}
	for _, cn := range view {
		if n := byAddr[cn.addr]; n != nil && cn.master != "-" && cn.healthy() && strings.Contains(cn.flags, "slave") {
			replicasOf[cn.master] = append(replicasOf[cn.master], n)
		}
	}
	var master *redisClusterNode
	for _, n := range nodes { // cluster description order: deterministic
		for i := range view {
			cn := &view[i]
			if cn.addr != n.Addr() || !strings.Contains(cn.flags, "master") || !cn.healthy() || len(cn.slots) == 0 {
				continue
			}
			if opts.RedisMaster != "" && n.Name != opts.RedisMaster {
				continue
			}
			if len(replicasOf[cn.id]) > 0 && master == nil {
				master = cn
			}
		}
	}
	if master == nil {
		what := "no master has a running replica (start the cluster with --opt replicas=1)"
		if opts.RedisMaster != "" {
			what = fmt.Sprintf("%s is not a running master with a running replica", opts.RedisMaster)
		}
		return nil, fmt.Errorf("convergence: redis: %s: %w", what, cluster.ErrUnsupported)
	}
	mnode := byAddr[master.addr]
	p := &redisProber{master: mnode.Name, clients: map[string]*goredis.Client{}, settings: map[string]string{"engine": "redis (cluster)"}}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	p.clients[mnode.Name] = redisClient(mnode, false)
	p.names = append(p.names, mnode.Name)
	var reps []string
	for _, n := range replicasOf[master.id] {
		p.clients[n.Name] = redisClient(n, true)
		p.names = append(p.names, n.Name)
		reps = append(reps, n.Name)
	}
	// A hash tag whose slot the master serves.
	mc := p.clients[mnode.Name]
	for i := 0; p.tag == "" && i < 100000; i++ {
		tag := "c" + strconv.Itoa(i)
		slot, err := mc.ClusterKeySlot(ctx, "{"+tag+"}").Result()
		if err != nil {
			return nil, fmt.Errorf("convergence: redis: CLUSTER KEYSLOT on %s: %w", mnode.Name, err)
		}
		if master.owns(int(slot)) {
			p.tag = tag
			p.settings["slot"] = strconv.FormatInt(slot, 10)
		}
	}
	if p.tag == "" {
		return nil, fmt.Errorf("convergence: redis: found no hash tag in the slots of %s", mnode.Name)
	}
	for name, cl := range p.clients {
		if err := cl.Ping(ctx).Err(); err != nil {
			return nil, fmt.Errorf("convergence: redis %s: %w", name, err)
		}
	}
	if info, err := mc.Info(ctx, "server").Result(); err == nil {
		p.settings["redis_version"] = infoField(info, "redis_version")
	}
	if cfg, err := mc.ConfigGet(ctx, "appendfsync").Result(); err == nil {
		p.settings["appendfsync"] = cfg["appendfsync"]
	}
	if cfg, err := mc.ConfigGet(ctx, "min-replicas-to-write").Result(); err == nil {
		p.settings["min-replicas-to-write"] = cfg["min-replicas-to-write"]
	}
	p.settings["writer"] = mnode.Name
	p.settings["replicas"] = strings.Join(reps, ",")
	p.settings["replication"] = "asynchronous (no WAIT)"
	p.settings["read"] = "each replica of the writer's master over a READONLY connection"
	return p, nil
}

func (p *redisProber) key(k string) string { return convergence.Table + ":{" + p.tag + "}:" + k }

func (p *redisProber) Nodes() []string             { return p.names }
func (p *redisProber) Settings() map[string]string { return p.settings }

func (p *redisProber) Write(ctx context.Context, key, value string) (string, error) {
	if err := p.clients[p.master].Set(ctx, p.key(key), value, time.Hour).Err(); err != nil {
		return p.master, fmt.Errorf("convergence: redis write on %s: %w", p.master, err)
	}
	return p.master, nil
}

func (p *redisProber) Read(ctx context.Context, node, key string) (string, bool, error) {
	cl, ok := p.clients[node]
	if !ok {
		return "", false, fmt.Errorf("convergence: redis: no node %q", node)
	}
	v, err := cl.Get(ctx, p.key(key)).Result()
	if errors.Is(err, goredis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("convergence: redis read on %s: %w", node, err)
	}
	return v, true, nil
}

func (p *redisProber) Close() error {
	var errs []error
	for _, cl := range p.clients {
		errs = append(errs, cl.Close())
	}
	return errors.Join(errs...)
}
