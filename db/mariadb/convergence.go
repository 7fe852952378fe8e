package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/convergence"
)

func init() { convergence.Register(Name, openMariaDB) }

// mariadbProber writes on the first running Galera node and reads every
// other node over its own connection pool. Galera certifies a write set on
// every node before the commit returns (virtually synchronous), but each
// node applies it afterwards in its own time: a read on another node sees
// it only once applied, unless wsrep_sync_wait makes the read wait — which
// Options.MariaDBSyncWait sets per session.
type mariadbProber struct {
	writer   string
	names    []string
	pools    map[string]*sql.DB
	settings map[string]string
}

// mariadbAccount reads the benchmark account and database from the
// cluster's DSN (mariadb://user:password@host:port/db?nodes=...): the
// engine creates them with a random password only the DSN holds.
func mariadbAccount(dsn string) (user, pass, db string, err error) {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return "", "", "", errors.New("convergence: mariadb: the cluster's DSN has no account (user:password@)")
	}
	pass, _ = u.User.Password()
	db = strings.TrimPrefix(u.Path, "/")
	if db == "" {
		return "", "", "", errors.New("convergence: mariadb: the cluster's DSN names no database")
	}
	return u.User.Username(), pass, db, nil
}

func openMariaDB(ctx context.Context, c *cluster.Cluster, opts convergence.Options) (_ convergence.Prober, err error) {
	if c.Options["galera"] != "true" {
		return nil, fmt.Errorf("convergence: mariadb: a single server has no other node to read (start a Galera cluster: --nodes 2 or --opt galera=true): %w", cluster.ErrUnsupported)
	}
	nodes, err := convergence.Running(c)
	if err != nil {
		return nil, err
	}
	user, pass, db, err := mariadbAccount(c.DSN)
	if err != nil {
		return nil, err
	}
	p := &mariadbProber{writer: nodes[0].Name, pools: map[string]*sql.DB{}, settings: map[string]string{"engine": "mariadb (Galera)"}}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	for i, n := range nodes {
		cfg := mysql.NewConfig()
		cfg.User, cfg.Passwd, cfg.DBName = user, pass, db
		cfg.Net, cfg.Addr = "tcp", n.Addr()
		cfg.Timeout = 5 * time.Second
		cfg.InterpolateParams = true
		if i > 0 && opts.MariaDBSyncWait != nil {
			// Sent as SET on every new connection of a reading node.
			cfg.Params = map[string]string{"wsrep_sync_wait": strconv.Itoa(*opts.MariaDBSyncWait)}
		}
		conn, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, fmt.Errorf("convergence: mariadb %s: %w", n.Name, err)
		}
		pool := sql.OpenDB(conn)
		pool.SetMaxIdleConns(4)
		p.pools[n.Name] = pool
		p.names = append(p.names, n.Name)
		if err := pool.PingContext(ctx); err != nil {
			return nil, fmt.Errorf("convergence: mariadb %s: %w", n.Name, err)
		}
	}
	w := p.pools[p.writer]
	if _, err := w.ExecContext(ctx, "create table if not exists "+convergence.Table+
		" (k varchar(64) not null primary key, v varchar(255) not null) engine=InnoDB"); err != nil {
		return nil, fmt.Errorf("convergence: mariadb: create table %s: %w", convergence.Table, err)
	}
	p.settings["writer"] = p.writer
	p.settings["read"] = "each other node over its own connections"
	vars := map[string]string{}
	for _, q := range []string{"show global variables like 'wsrep%'", "show global status like 'wsrep%'", "show global variables like 'version'"} {
		rows, err := w.QueryContext(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("convergence: mariadb: %s: %w", q, err)
		}
		for rows.Next() {
			var k, v string
			if err := rows.Scan(&k, &v); err != nil {
				rows.Close()
				return nil, fmt.Errorf("convergence: mariadb: %s: %w", q, err)
			}
			vars[strings.ToLower(k)] = v
		}
		rows.Close()
	}
	for _, k := range []string{"version", "wsrep_sync_wait", "wsrep_slave_threads", "wsrep_causal_reads",
		"wsrep_provider_version", "wsrep_cluster_size", "wsrep_sst_method"} {
		if v, ok := vars[k]; ok {
			p.settings[k] = v
		}
	}
	if opts.MariaDBSyncWait != nil {
		p.settings["read_session_wsrep_sync_wait"] = strconv.Itoa(*opts.MariaDBSyncWait)
	} else {
		p.settings["read_session_wsrep_sync_wait"] = "server default (" + vars["wsrep_sync_wait"] + ")"
	}
	// The table (DDL replicates in total order) must exist everywhere.
	for _, n := range p.names[1:] {
		pool := p.pools[n]
		if err := convergence.WaitAll(ctx, 30*time.Second, "table "+convergence.Table+" on "+n, func(ctx context.Context) error {
			var k string
			err := pool.QueryRowContext(ctx, "select k from "+convergence.Table+" limit 1").Scan(&k)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			return err
		}); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *mariadbProber) Nodes() []string             { return p.names }
func (p *mariadbProber) Settings() map[string]string { return p.settings }

func (p *mariadbProber) Write(ctx context.Context, key, value string) (string, error) {
	_, err := p.pools[p.writer].ExecContext(ctx, "insert into "+convergence.Table+" (k, v) values (?, ?) on duplicate key update v = values(v)", key, value)
	if err != nil {
		return p.writer, fmt.Errorf("convergence: mariadb write on %s: %w", p.writer, err)
	}
	return p.writer, nil
}

func (p *mariadbProber) Read(ctx context.Context, node, key string) (string, bool, error) {
	pool, ok := p.pools[node]
	if !ok {
		return "", false, fmt.Errorf("convergence: mariadb: no node %q", node)
	}
	var v string
	err := pool.QueryRowContext(ctx, "select v from "+convergence.Table+" where k = ?", key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("convergence: mariadb read on %s: %w", node, err)
	}
	return v, true, nil
}

func (p *mariadbProber) Close() error {
	var errs []error
	for _, pool := range p.pools {
		errs = append(errs, pool.Close())
	}
	return errors.Join(errs...)
}
