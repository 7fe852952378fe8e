package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/convergence"
)

func init() {
	convergence.Register(Name, func(ctx context.Context, c *cluster.Cluster, _ convergence.Options) (convergence.Prober, error) {
		return openPostgres(ctx, c)
	})
}

// pgProber writes on the primary and reads each streaming replica over its
// own connection: "directly" is literal, a replica answers from what it
// has replayed (hot standby). The server's synchronous_commit and
// synchronous_standby_names decide whether a commit waits for a replica;
// the engine's default (no synchronous standby) makes replication
// asynchronous.
type pgProber struct {
	primary  string
	names    []string
	conns    map[string]*pgConn
	settings map[string]string
}

// pgConn is one connection: a pgx.Conn is not safe for concurrent use.
// A read cut off by its context closes the connection (pgx cannot tell
// where the protocol stream stopped), so get reconnects a closed one.
type pgConn struct {
	mu   sync.Mutex
	url  string
	conn *pgx.Conn
}

// get returns the live connection; the caller holds mu.
func (c *pgConn) get(ctx context.Context) (*pgx.Conn, error) {
	if c.conn != nil && !c.conn.IsClosed() {
		return c.conn, nil
	}
	conn, err := pgx.Connect(ctx, c.url)
	if err != nil {
		return nil, err
	}
	c.conn = conn
	return conn, nil
}

func pgURL(c *cluster.Cluster, n *cluster.Node) string {
	user, db := pgUser, PGDatabase
	if u, err := url.Parse(c.DSN); err == nil && c.DSN != "" {
		if u.User != nil && u.User.Username() != "" {
			user = u.User.Username()
		}
		if len(u.Path) > 1 {
			db = u.Path[1:]
		}
	}
	u := url.URL{Scheme: "postgres", User: url.User(user), Host: n.Addr(), Path: "/" + db,
		RawQuery: "sslmode=disable&connect_timeout=5"}
	return u.String()
}

func openPostgres(ctx context.Context, c *cluster.Cluster) (_ convergence.Prober, err error) {
	nodes, err := convergence.Running(c)
	if err != nil {
		return nil, err
	}
	p := &pgProber{conns: map[string]*pgConn{}, settings: map[string]string{"engine": "postgres"}}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	var replicas []*cluster.Node
	for _, n := range nodes {
		switch n.Role {
		case "primary":
			p.primary = n.Name
		case "replica":
			replicas = append(replicas, n)
		}
	}
	if p.primary == "" || len(replicas) == 0 {
		return nil, fmt.Errorf("convergence: postgres needs a running primary and a replica: %w", cluster.ErrUnsupported)
	}
	for _, n := range nodes {
		if n.Role != "primary" && n.Role != "replica" {
			continue
		}
		pc := &pgConn{url: pgURL(c, n)}
		if _, err := pc.get(ctx); err != nil {
			return nil, fmt.Errorf("convergence: postgres %s: %w", n.Name, err)
		}
		p.conns[n.Name] = pc
		p.names = append(p.names, n.Name)
	}
	pc := p.conns[p.primary].conn
	if _, err := pc.Exec(ctx, "create table if not exists "+convergence.Table+" (k text primary key, v text not null)"); err != nil {
		return nil, fmt.Errorf("convergence: postgres: create table %s: %w", convergence.Table, err)
	}
	for _, k := range []string{"synchronous_commit", "synchronous_standby_names", "server_version"} {
		var v string
		if err := pc.QueryRow(ctx, "select current_setting($1)", k).Scan(&v); err != nil {
			return nil, fmt.Errorf("convergence: postgres: read %s: %w", k, err)
		}
		p.settings[k] = v
	}
	if p.settings["synchronous_standby_names"] == "" {
		p.settings["replication"] = "asynchronous streaming (no synchronous standby)"
	} else {
		p.settings["replication"] = "synchronous standby: " + p.settings["synchronous_standby_names"]
	}
	p.settings["writer"] = p.primary
	p.settings["read"] = "each replica over its own connection (hot standby)"
	// The table must have reached every replica before round one.
	for _, n := range replicas {
		rc := p.conns[n.Name].conn
		err := convergence.WaitAll(ctx, 30*time.Second, "table "+convergence.Table+" on "+n.Name, func(ctx context.Context) error {
			var ok bool
			if err := rc.QueryRow(ctx, "select to_regclass($1) is not null", convergence.Table).Scan(&ok); err != nil {
				return err
			}
			if !ok {
				return errors.New("table not replicated yet")
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *pgProber) Nodes() []string             { return p.names }
func (p *pgProber) Settings() map[string]string { return p.settings }

func (p *pgProber) Write(ctx context.Context, key, value string) (string, error) {
	c := p.conns[p.primary]
	c.mu.Lock()
	defer c.mu.Unlock()
	conn, err := c.get(ctx)
	if err == nil {
		_, err = conn.Exec(ctx, "insert into "+convergence.Table+" (k, v) values ($1, $2) on conflict (k) do update set v = excluded.v", key, value)
	}
	if err != nil {
		return p.primary, fmt.Errorf("convergence: postgres write on %s: %w", p.primary, err)
	}
	return p.primary, nil
}

func (p *pgProber) Read(ctx context.Context, node, key string) (string, bool, error) {
	c, ok := p.conns[node]
	if !ok {
		return "", false, fmt.Errorf("convergence: postgres: no node %q", node)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var v string
	conn, err := c.get(ctx)
	if err == nil {
		err = conn.QueryRow(ctx, "select v from "+convergence.Table+" where k = $1", key).Scan(&v)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("convergence: postgres read on %s: %w", node, err)
	}
	return v, true, nil
}

// Close closes the connections; the table stays (rows are a few bytes).
func (p *pgProber) Close() error {
	var errs []error
	for _, c := range p.conns {
		if c.conn != nil {
			errs = append(errs, c.conn.Close(context.Background()))
		}
	}
	return errors.Join(errs...)
}
