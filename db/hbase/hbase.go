// Package hbase is fieldbench's adapter for Apache HBase, through HBase's
// REST gateway (the RESTServer that `fieldbench cluster up hbase` starts
// beside the master). The native Go client (github.com/tsuna/gohbase) is
// not available from the Go module proxy this project can reach, so the
// adapter speaks the gateway's JSON protocol with net/http: gets, batched
// multi-row puts, and stateful scanners. The gateway is a hop a native
// client would not make; results say "via REST" (Info.Config) and
// docs/hbase.md describes the row-key designs.
//
// DSN:
//
//	hbase://host:port[/namespace][?timeout=DURATION&conns=N]
//
// host:port is the REST gateway. Tables live in namespace (created when
// absent; default "default"). timeout bounds one HTTP request (default 60s:
// a populate batch can be large); conns is the number of idle connections
// kept to the gateway (default 256, more than any client thread count used).
//
// The package is the whole database (docs/architecture.md, "Adding a
// database"): this adapter with a file per family (ingest.go,
// microblog.go, part.go, trajectory.go, wiki.go), the cluster engine that
// starts HBase and its REST gateway from Maven Central jars (engine.go)
// and what an external cluster asks an HBase (external.go); db/all links
// it into the binary. HBase has no convergence prober.
package hbase

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/workload/ingest"
	"github.com/fieldbench/fieldbench/workload/microblog"
	"github.com/fieldbench/fieldbench/workload/trajectory"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// Name is the adapter's name and DSN scheme.
const Name = "hbase"

func init() { adapter.Register(Adapter{}) }

// Adapter opens HBase DSNs.
type Adapter struct{}

// Name implements adapter.Adapter.
func (Adapter) Name() string { return Name }

// Schemes implements adapter.Adapter.
func (Adapter) Schemes() []string { return []string{Name} }

// Families implements adapter.Adapter.
func (Adapter) Families() []string { return adapter.FamiliesOf((*DB)(nil)) }

// Describe implements adapter.Adapter.
func (Adapter) Describe() string {
	return "Apache HBase through its REST gateway (batched puts, scanners); DSN hbase://host:port[/namespace]"
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
	Addr      string // REST gateway host:port
	Namespace string
	Timeout   time.Duration
	Conns     int
}

// ParseDSN parses hbase://host:port[/namespace][?timeout=&conns=].
func ParseDSN(dsn string) (Config, error) {
	c, err := parseDSN(dsn)
	return c, adapter.BadDSN(err)
}

// parseDSN is ParseDSN without the marking of its errors.
func parseDSN(dsn string) (Config, error) {
	c := Config{Namespace: "default", Timeout: 60 * time.Second, Conns: 256}
	u, err := adapter.ParseURL(dsn)
	if err != nil {
		return c, fmt.Errorf("hbase: %w", err)
	}
	if u.Scheme != Name {
		return c, fmt.Errorf("hbase DSN: want hbase://host:port[/namespace]")
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return c, fmt.Errorf("hbase DSN: want host:port of the REST gateway: %w", err)
	}
	c.Addr = u.Host
	if ns := strings.Trim(u.Path, "/"); ns != "" {
		for _, r := range ns {
			if !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return c, fmt.Errorf("hbase DSN: namespace %q: letters, digits and _ only", ns)
			}
		}
		c.Namespace = ns
	}
	for k, v := range u.Query() {
		switch k {
		case "timeout":
			c.Timeout, err = time.ParseDuration(v[0])
		case "conns":
			c.Conns, err = strconv.Atoi(v[0])
			if err == nil && c.Conns < 1 {
				err = errors.New("want at least 1")
			}
		default:
			return c, fmt.Errorf("hbase DSN: unknown option %q (known: timeout, conns)", k)
		}
		if err != nil {
			return c, fmt.Errorf("hbase DSN: option %s=%q: %w", k, v[0], err)
		}
	}
	return c, nil
}

// DB is an open connection to an HBase REST gateway.
type DB struct {
	cfg  Config
	base string
	http *http.Client
	// dials space out reconnections to a gateway that refuses them; see
	// adapter.Backoff.
	dials *adapter.Backoff
}

var (
	_ adapter.DB          = (*DB)(nil)
	_ adapter.Reconnector = (*DB)(nil)
	_ wiki.Backend        = (*DB)(nil)
	_ ingest.Backend      = (*DB)(nil)
	_ microblog.Backend   = (*DB)(nil)

	_ trajectory.Backend = (*DB)(nil)
)

// Open connects to the gateway and creates the namespace when absent.
func Open(ctx context.Context, dsn string) (*DB, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	dials := adapter.NewBackoff()
	tr := &http.Transport{
		// The dial is fieldbench's default (netdial), not a net.Dialer of
		// the adapter's own: during an experiment on hosts it opens each
		// connection inside the load host's namespace, the only place the
		// gateway's address is reachable from (docs/network.md).
		DialContext:         dials.DialFunc(nil),
		MaxIdleConns:        cfg.Conns,
		MaxIdleConnsPerHost: cfg.Conns,
		IdleConnTimeout:     90 * time.Second,
	}
	db := &DB{cfg: cfg, base: "http://" + cfg.Addr, http: &http.Client{Transport: tr, Timeout: cfg.Timeout}, dials: dials}
	if _, err := db.version(ctx); err != nil {
		tr.CloseIdleConnections()
		return nil, err
	}
	if cfg.Namespace != "default" {
		// Create, or find it exists: the gateway answers a missing
		// namespace's GET with 500, not 404.
		code, _, err := db.do(ctx, http.MethodPost, "/namespaces/"+cfg.Namespace, nil)
		if err == nil && code/100 != 2 {
			var body []byte
			code, body, err = db.do(ctx, http.MethodGet, "/namespaces/"+cfg.Namespace, nil)
			if err == nil && code != http.StatusOK {
				err = fmt.Errorf("%d %s", code, short(body))
			}
		}
		if err != nil {
			tr.CloseIdleConnections()
			return nil, fmt.Errorf("hbase: namespace %s: %w", cfg.Namespace, err)
		}
	}
	return db, nil
}

// Reconnects implements adapter.Reconnector: the dials to the gateway.
func (db *DB) Reconnects() adapter.BackoffStats { return db.dials.Stats() }

// Close implements adapter.DB.
func (db *DB) Close() error {
	db.http.CloseIdleConnections()
	return nil
}

func (db *DB) version(ctx context.Context) (string, error) {
	code, body, err := db.do(ctx, http.MethodGet, "/version/cluster", nil)
	if err != nil {
		return "", fmt.Errorf("hbase: REST gateway %s: %w", db.cfg.Addr, err)
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("hbase: REST gateway %s: version: %d %s", db.cfg.Addr, code, short(body))
	}
	return parseVersion(body), nil
}

// parseVersion reads /version/cluster: a JSON object {"Version": "..."}
// when JSON is asked for (as every request here does), or a bare string.
func parseVersion(body []byte) string {
	var v struct{ Version string }
	if json.Unmarshal(body, &v) == nil && v.Version != "" {
		return v.Version
	}
	return strings.Trim(strings.TrimSpace(string(body)), `"`)
}

// Info implements adapter.DB.
func (db *DB) Info(ctx context.Context) (adapter.Info, error) {
	v, err := db.version(ctx)
	if err != nil {
		return adapter.Info{}, err
	}
	return adapter.Info{Name: "HBase", Version: v, Config: map[string]string{
		"client":    "REST gateway (JSON)",
		"namespace": db.cfg.Namespace,
	}}, nil
}

// table is the full name of a table in the DSN's namespace.
func (db *DB) table(name string) string {
	if db.cfg.Namespace == "default" {
		return name
	}
	return db.cfg.Namespace + ":" + name
}

// do sends one request; JSON in and out.
func (db *DB) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	return db.doURL(ctx, method, db.base+path, body)
}

func (db *DB) doURL(ctx context.Context, method, u string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := db.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, err
	}
	if resp.StatusCode == http.StatusCreated {
		if loc := resp.Header.Get("Location"); loc != "" {
			return resp.StatusCode, []byte(loc), nil
		}
	}
	return resp.StatusCode, b, nil
}

func short(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// The REST gateway's JSON model: byte strings are base64, which
// encoding/json does for []byte.
type cellSet struct {
	Rows []row `json:"Row"`
}

type row struct {
	Key   []byte `json:"key"`
	Cells []cell `json:"Cell"`
}

type cell struct {
	Column []byte `json:"column"`
	Value  []byte `json:"$"`
}

func (r row) get(column string) ([]byte, bool) {
	for _, c := range r.Cells {
		if string(c.Column) == column {
			return c.Value, true
		}
	}
	return nil, false
}

// ensureTable creates table with the given column families when absent.
func (db *DB) ensureTable(ctx context.Context, name string, families ...string) error {
	t := db.table(name)
	code, body, err := db.do(ctx, http.MethodGet, "/"+url.PathEscape(t)+"/schema", nil)
	if err != nil {
		return fmt.Errorf("hbase: table %s: %w", t, err)
	}
	if code == http.StatusOK {
		return nil
	}
	if code != http.StatusNotFound {
		return fmt.Errorf("hbase: table %s: %d %s", t, code, short(body))
	}
	type colSchema struct {
		Name     string `json:"name"`
		Versions string `json:"VERSIONS"`
	}
	schema := struct {
		Name    string      `json:"name"`
		Columns []colSchema `json:"ColumnSchema"`
	}{Name: t}
	for _, f := range families {
		schema.Columns = append(schema.Columns, colSchema{Name: f, Versions: "1"})
	}
	b, _ := json.Marshal(schema)
	code, body, err = db.do(ctx, http.MethodPut, "/"+url.PathEscape(t)+"/schema", b)
	if err != nil {
		return fmt.Errorf("hbase: create table %s: %w", t, err)
	}
	// 304: the gateway found the table created meanwhile (by another
	// client creating it at the same time), which is what was asked.
	if code/100 != 2 && code != http.StatusNotModified {
		return fmt.Errorf("hbase: create table %s: %d %s", t, code, short(body))
	}
	return nil
}

// tableExists reports whether table exists.
func (db *DB) tableExists(ctx context.Context, name string) (bool, error) {
	t := db.table(name)
	code, body, err := db.do(ctx, http.MethodGet, "/"+url.PathEscape(t)+"/schema", nil)
	if err != nil {
		return false, fmt.Errorf("hbase: table %s: %w", t, err)
	}
	switch code {
	case http.StatusOK:
		return true, nil
	case http.StatusNotFound:
		return false, nil
	}
	return false, fmt.Errorf("hbase: table %s: %d %s", t, code, short(body))
}

// dropTable deletes table (the gateway disables it first); absent is fine.
func (db *DB) dropTable(ctx context.Context, name string) error {
	t := db.table(name)
	code, body, err := db.do(ctx, http.MethodDelete, "/"+url.PathEscape(t)+"/schema", nil)
	if err != nil {
		return fmt.Errorf("hbase: drop table %s: %w", t, err)
	}
	if code/100 != 2 && code != http.StatusNotFound {
		return fmt.Errorf("hbase: drop table %s: %d %s", t, code, short(body))
	}
	return nil
}

// recreate empties a table the fast way HBase has: drop and create (the
// gateway has no truncate).
func (db *DB) recreate(ctx context.Context, name string, families ...string) error {
	if err := db.dropTable(ctx, name); err != nil {
		return err
	}
	return db.ensureTable(ctx, name, families...)
}

// putRows writes rows in one request (a multi-row put: every row is
// acknowledged when it returns; rows are atomic, the batch is not).
func (db *DB) putRows(ctx context.Context, name string, rows []row) error {
	if len(rows) == 0 {
		return nil
	}
	b, err := json.Marshal(cellSet{Rows: rows})
	if err != nil {
		return err
	}
	t := db.table(name)
	code, body, err := db.do(ctx, http.MethodPut, "/"+url.PathEscape(t)+"/fakerow", b)
	if err != nil {
		return fmt.Errorf("hbase: put %d rows into %s: %w", len(rows), t, err)
	}
	if code/100 != 2 {
		return fmt.Errorf("hbase: put %d rows into %s: %d %s", len(rows), t, code, short(body))
	}
	return nil
}

// checkPut puts cells into row key only if column check holds value (the
// gateway's check-and-put, atomic in the region server); ok is false when
// the check failed and nothing was written.
func (db *DB) checkPut(ctx context.Context, name, key string, cells []cell, check cell) (bool, error) {
	t := db.table(name)
	all := append(append(make([]cell, 0, len(cells)+1), cells...), check)
	b, err := json.Marshal(cellSet{Rows: []row{{Key: []byte(key), Cells: all}}})
	if err != nil {
		return false, err
	}
	code, body, err := db.do(ctx, http.MethodPut, "/"+url.PathEscape(t)+"/"+url.PathEscape(key)+"?check=put", b)
	if err != nil {
		return false, fmt.Errorf("hbase: check-and-put %s/%s: %w", t, key, err)
	}
	switch code {
	case http.StatusOK, http.StatusCreated:
		return true, nil
	case http.StatusNotModified:
		return false, nil
	}
	return false, fmt.Errorf("hbase: check-and-put %s/%s: %d %s", t, key, code, short(body))
}

// getRow reads the given columns ("family:qualifier") of one row; ok is
// false when the row (or all those columns) is absent.
func (db *DB) getRow(ctx context.Context, name, key string, columns ...string) (row, bool, error) {
	t := db.table(name)
	p := "/" + url.PathEscape(t) + "/" + url.PathEscape(key)
	if len(columns) > 0 {
		p += "/" + strings.Join(columns, ",")
	}
	code, body, err := db.do(ctx, http.MethodGet, p, nil)
	if err != nil {
		return row{}, false, fmt.Errorf("hbase: get %s/%s: %w", t, key, err)
	}
	switch code {
	case http.StatusOK:
	case http.StatusNotFound:
		return row{}, false, nil
	default:
		return row{}, false, fmt.Errorf("hbase: get %s/%s: %d %s", t, key, code, short(body))
	}
	var cs cellSet
	if err := json.Unmarshal(body, &cs); err != nil {
		return row{}, false, fmt.Errorf("hbase: get %s/%s: %w", t, key, err)
	}
	if len(cs.Rows) == 0 {
		return row{}, false, nil
	}
	return cs.Rows[0], true, nil
}

// scanSpec is a scanner's range and projection. Filter is a filter in the
// gateway's JSON syntax, e.g. {"type":"FirstKeyOnlyFilter"}.
type scanSpec struct {
	Start, End string // [Start, End); "" is unbounded
	Columns    []string
	Filter     string
	Batch      int // cells per page (default 1000)
	Limit      int // stop after this many rows (0: no limit)
}

// scan calls fn with every row of the range, in key order. Pages of the
// gateway's stateful scanner are cut by cell count, so a row may straddle
// two pages: scan merges them before calling fn.
func (db *DB) scan(ctx context.Context, name string, s scanSpec, fn func(row) error) error {
	if s.Filter == "" && s.Limit > 0 && s.Limit <= statelessMaxRows {
		return db.scanStateless(ctx, name, s, fn)
	}
	t := db.table(name)
	spec := map[string]any{"batch": 1000}
	if s.Batch > 0 {
		spec["batch"] = s.Batch
	}
	if s.Start != "" {
		spec["startRow"] = []byte(s.Start)
	}
	if s.End != "" {
		spec["endRow"] = []byte(s.End)
	}
	if len(s.Columns) > 0 {
		cols := make([][]byte, len(s.Columns))
		for i, c := range s.Columns {
			cols[i] = []byte(c)
		}
		spec["column"] = cols
	}
	if s.Filter != "" {
		spec["filter"] = s.Filter
	}
	b, _ := json.Marshal(spec)
	code, body, err := db.do(ctx, http.MethodPost, "/"+url.PathEscape(t)+"/scanner", b)
	if err != nil {
		return fmt.Errorf("hbase: open scanner on %s: %w", t, err)
	}
	if code != http.StatusCreated {
		return fmt.Errorf("hbase: open scanner on %s: %d %s", t, code, short(body))
	}
	loc := string(body)
	defer func() {
		// A scanner left open holds server resources until its lease ends.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_, _, _ = db.doURL(dctx, http.MethodDelete, loc, nil)
	}()
	var pending *row
	rows := 0
	emit := func(r row) error {
		rows++
		if s.Limit > 0 && rows > s.Limit {
			return errStop
		}
		return fn(r)
	}
	for {
		code, body, err := db.doURL(ctx, http.MethodGet, loc, nil)
		if err != nil {
			return fmt.Errorf("hbase: scan %s: %w", t, err)
		}
		if code == http.StatusNoContent {
			break
		}
		if code != http.StatusOK {
			return fmt.Errorf("hbase: scan %s: %d %s", t, code, short(body))
		}
		var cs cellSet
		if err := json.Unmarshal(body, &cs); err != nil {
			return fmt.Errorf("hbase: scan %s: %w", t, err)
		}
		for i := range cs.Rows {
			r := cs.Rows[i]
			if pending != nil && bytes.Equal(pending.Key, r.Key) {
				pending.Cells = append(pending.Cells, r.Cells...)
				continue
			}
			if pending != nil {
				if err := emit(*pending); err != nil {
					if errors.Is(err, errStop) {
						return nil
					}
					return err
				}
			}
			pending = &r
		}
	}
	if pending != nil {
		if err := emit(*pending); err != nil && !errors.Is(err, errStop) {
			return err
		}
	}
	return nil
}

// errStop ends a scan early (limit reached).
var errStop = errors.New("stop scan")

// getRows reads rows by key with one request (the gateway's multiget);
// the answer maps key to row and leaves out rows that do not exist.
func (db *DB) getRows(ctx context.Context, name string, keys []string) (map[string]row, error) {
	out := make(map[string]row, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	t := db.table(name)
	q := url.Values{}
	for _, k := range keys {
		q.Add("row", k)
	}
	p := "/" + url.PathEscape(t) + "/multiget"
	code, body, err := db.do(ctx, http.MethodGet, p+"?"+q.Encode(), nil)
	if err != nil {
		return nil, fmt.Errorf("hbase: multiget %d rows of %s: %w", len(keys), t, err)
	}
	switch code {
	case http.StatusOK:
	case http.StatusNotFound:
		return out, nil
	default:
		return nil, fmt.Errorf("hbase: multiget %d rows of %s: %d %s", len(keys), t, code, short(body))
	}
	var cs cellSet
	if err := json.Unmarshal(body, &cs); err != nil {
		return nil, fmt.Errorf("hbase: multiget %d rows of %s: %w", len(keys), t, err)
	}
	for _, r := range cs.Rows {
		k := string(r.Key)
		if prev, ok := out[k]; ok {
			r.Cells = append(prev.Cells, r.Cells...)
		}
		out[k] = r
	}
	return out, nil
}

// deleteRows deletes whole rows, one DELETE each (the gateway has no
// multi-row delete), at most par at a time; absent rows are fine.
func (db *DB) deleteRows(ctx context.Context, name string, keys []string, par int) error {
	t := db.table(name)
	sem := make(chan struct{}, max(par, 1))
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			code, body, err := db.do(ctx, http.MethodDelete, "/"+url.PathEscape(t)+"/"+url.PathEscape(k), nil)
			if err == nil && code/100 != 2 && code != http.StatusNotFound {
				err = fmt.Errorf("%d %s", code, short(body))
			}
			if err != nil {
				errs[i] = fmt.Errorf("delete %s/%s: %w", t, k, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// statelessMaxRows is the largest bounded scan sent as one stateless
// request; longer ones use a stateful scanner (pages of Batch cells).
const statelessMaxRows = 1000

// scanStateless reads a bounded range with one request (the gateway's
// stateless scan, GET /TABLE/*?startrow=&endrow=&limit=) instead of the
// three a stateful scanner takes (open, read, delete): what a userline or
// timeline read is.
func (db *DB) scanStateless(ctx context.Context, name string, s scanSpec, fn func(row) error) error {
	t := db.table(name)
	q := url.Values{}
	if s.Start != "" {
		q.Set("startrow", s.Start)
	}
	if s.End != "" {
		q.Set("endrow", s.End)
	}
	for _, c := range s.Columns {
		q.Add("column", c)
	}
	q.Set("limit", strconv.Itoa(s.Limit))
	code, body, err := db.do(ctx, http.MethodGet, "/"+url.PathEscape(t)+"/*?"+q.Encode(), nil)
	if err != nil {
		return fmt.Errorf("hbase: scan %s: %w", t, err)
	}
	switch code {
	case http.StatusOK:
	case http.StatusNoContent, http.StatusNotFound:
		return nil
	default:
		return fmt.Errorf("hbase: scan %s: %d %s", t, code, short(body))
	}
	var cs cellSet
	if err := json.Unmarshal(body, &cs); err != nil {
		return fmt.Errorf("hbase: scan %s: %w", t, err)
	}
	rows := 0
	for i := 0; i < len(cs.Rows); i++ {
		r := cs.Rows[i]
		for i+1 < len(cs.Rows) && bytes.Equal(cs.Rows[i+1].Key, r.Key) {
			i++
			r.Cells = append(r.Cells, cs.Rows[i].Cells...)
		}
		if rows++; rows > s.Limit {
			break
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}
