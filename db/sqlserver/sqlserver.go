// Package sqlserver is fieldbench's adapter for Microsoft SQL Server,
// through the official driver github.com/microsoft/go-mssqldb.
//
// DSN: sqlserver://user:password@host:port?database=NAME[&ingest=insert|bulk][&rows=N][&standin=iridium]
// plus any parameter of the driver (encrypt=disable, dial timeout=5,
// packet size=4096...), which is handed to it unchanged. database= is
// required: the ingest table is created in it.
//
// SQL Server itself cannot be installed on this machine. The adapter is
// tested against Iridium SQL 0.1.13, a TDS server written in Rust that
// reports itself as SQL Server 2022 (`fieldbench cluster up sqlserver`).
// go-mssqldb cannot talk to it as it is: standin=iridium in the DSN makes
// the adapter rewrite Iridium's two TDS defects on its own connections
// (internal/tdsfix, through the driver's Dialer hook; see
// docs/sqlserver.md). A real SQL Server never needs it. The adapter keeps to what both servers do: plain multi-row INSERT statements,
// each a transaction of its own, no BEGIN TRANSACTION request (Iridium
// hangs on it). Bulk copy (ingest=bulk) is for a real server only: Iridium
// fails it, so that path is not verified here, and `list`, Info and the
// docs say so.
//
// The package is the whole database (docs/architecture.md, "Adding a
// database"): this adapter with its ingest family (ingest.go), the
// cluster engine that starts Iridium SQL (engine.go) and what an external
// cluster asks a SQL Server (external.go); db/all links it into the
// binary.
package sqlserver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	mssql "github.com/microsoft/go-mssqldb"
	"github.com/microsoft/go-mssqldb/msdsn"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/db/sqlserver/internal/tdsfix"
	"github.com/fieldbench/fieldbench/redact"
	"github.com/fieldbench/fieldbench/workload/ingest"
)

// Name is the adapter's name.
const Name = "sqlserver"

// NotVerified marks code paths that no server on this machine runs (bulk
// copy: Iridium SQL fails it); it goes into `list`, the result's database
// config and the docs.
const NotVerified = "not verified here"

func init() { adapter.Register(Adapter{}) }

// Adapter opens SQL Server DSNs.
type Adapter struct{}

// Name implements adapter.Adapter.
func (Adapter) Name() string { return Name }

// Schemes implements adapter.Adapter.
func (Adapter) Schemes() []string { return []string{"sqlserver"} }

// Families implements adapter.Adapter.
func (Adapter) Families() []string { return adapter.FamiliesOf((*DB)(nil)) }

// Describe implements adapter.Adapter.
func (Adapter) Describe() string {
	return "Microsoft SQL Server (official driver go-mssqldb; tested here against Iridium SQL 0.1.13, a stand-in " +
		"whose figures say nothing about SQL Server's speed); DSN sqlserver://user:pass@host:port?database=NAME[&ingest=insert|bulk][&rows=N][&standin=iridium] " +
		"(ingest=bulk and rows above the default: " + NotVerified + "; " + StandinNote + ")"
}

// Open implements adapter.Adapter.
func (Adapter) Open(ctx context.Context, dsn string) (adapter.DB, error) { return Open(ctx, dsn) }

// CheckDSN implements adapter.Adapter: ParseDSN, connecting to nothing.
func (Adapter) CheckDSN(dsn string) error {
	_, err := ParseDSN(dsn)
	return err
}

// IngestMode is how an ingest batch is sent.
type IngestMode string

const (
	// IngestInsert sends multi-row INSERT statements (insertRows records
	// each, within SQL Server's 2,100 parameters a request).
	IngestInsert IngestMode = "insert"
	// IngestBulk sends each batch through the driver's bulk copy (the
	// TDS BULK LOAD of bcp and SqlBulkCopy). Not verified here: Iridium
	// SQL fails it.
	IngestBulk IngestMode = "bulk"
)

// StandinIridium is the value of standin= that makes the adapter rewrite
// Iridium SQL's two TDS defects.
const StandinIridium = "iridium"

// StandinNote says what standin=iridium does, in `list` and in a result's
// database config.
const StandinNote = "standin=iridium rewrites the two TDS protocol defects of Iridium SQL, the stand-in `cluster up sqlserver` starts " +
	"(pre-login answered with packet type 0x12, collation change with 5 extra bytes); never needed on a real SQL Server"

// Config is a parsed DSN.
type Config struct {
	// Driver is the driver's configuration (password included: never
	// print it).
	Driver   msdsn.Config
	Database string
	Ingest   IngestMode
	// Rows is the records per INSERT (rows=N); 0 is the default, the
	// most whose statement text stays within 4,000 characters.
	Rows int
	// Standin is "iridium" when the connections rewrite Iridium SQL's two
	// TDS defects (standin=iridium), else empty.
	Standin string
}

// ownParams are the query parameters fieldbench reads and removes before
// the rest goes to the driver.
var ownParams = []string{"ingest", "rows", "standin"}

// ParseDSN parses a sqlserver:// DSN. Errors never show the password.
func ParseDSN(dsn string) (*Config, error) {
	c, err := parseDSN(dsn)
	return c, adapter.BadDSN(err)
}

// parseDSN is ParseDSN without the marking of its errors.
func parseDSN(dsn string) (*Config, error) {
	u, err := adapter.ParseURL(dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlserver: %w", err)
	}
	if u.Scheme != "sqlserver" {
		return nil, fmt.Errorf("sqlserver: DSN scheme %q: want sqlserver://", u.Scheme)
	}
	if u.Host == "" {
		return nil, errors.New("sqlserver: DSN has no host:port (sqlserver://user:password@127.0.0.1:1433?database=fieldbench)")
	}
	if u.Path != "" && u.Path != "/" {
		// go-mssqldb reads a path as an instance name, which needs the
		// SQL Browser service; fieldbench always connects to a port.
		return nil, errors.New("sqlserver: DSN has a path (an instance name): give host:port and ?database=NAME instead")
	}
	q := u.Query()
	c := &Config{Ingest: IngestInsert}
	switch m := IngestMode(strings.ToLower(q.Get("ingest"))); m {
	case "":
	case IngestInsert, IngestBulk:
		c.Ingest = m
	default:
		return nil, fmt.Errorf("sqlserver: ingest=%q: want insert or bulk", m)
	}
	if v := q.Get("rows"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxInsertRows {
			return nil, fmt.Errorf("sqlserver: rows=%q: want 1 to %d records per INSERT", v, maxInsertRows)
		}
		c.Rows = n
	}
	switch v := strings.ToLower(q.Get("standin")); v {
	case "":
	case StandinIridium:
		c.Standin = v
	default:
		return nil, fmt.Errorf("sqlserver: standin=%q: the only stand-in is iridium (Iridium SQL); a real SQL Server needs no standin=", v)
	}
	for _, k := range ownParams {
		q.Del(k)
	}
	c.Database = q.Get("database")
	if c.Database == "" {
		return nil, errors.New("sqlserver: DSN names no database (sqlserver://user:password@127.0.0.1:1433?database=fieldbench)")
	}
	u.RawQuery = q.Encode()
	cfg, err := msdsn.Parse(u.String())
	if err != nil {
		// The driver's message may quote a parameter's value.
		return nil, fmt.Errorf("sqlserver: DSN parameters: %s", redact.Text(err.Error()))
	}
	if cfg.AppName == "" {
		cfg.AppName = "fieldbench"
	}
	if c.Standin != "" && cfg.Encryption != msdsn.EncryptionDisabled {
		// The rewrite reads the login response, which TLS would hide;
		// Iridium runs without TLS anyway (--no-tls).
		return nil, errors.New("sqlserver: standin=iridium needs encrypt=disable (the rewrite reads the login response, which TLS would hide)")
	}
	c.Driver = cfg
	return c, nil
}

// DB is an open SQL Server database.
type DB struct {
	pool    *sql.DB
	cfg     *Config
	backoff *adapter.Backoff
	// writeMu serializes the adapter's writes when the server is Iridium
	// SQL (nil otherwise): Iridium's transactions are not isolated from
	// concurrent writers to the same table. It refuses a second
	// transaction's write with "lock conflict (no-wait)", and a commit
	// loses the rows other sessions wrote meanwhile (measured: 90 of 1,750
	// acknowledged records missing). Real SQL Server writes run
	// concurrently.
	writeMu *sync.Mutex
	// fixes counts the rewrites of Iridium's TDS defects (standin=iridium;
	// nil otherwise), for the tests.
	fixes *tdsfix.Counter
}

var (
	_ adapter.DB          = (*DB)(nil)
	_ adapter.Reconnector = (*DB)(nil)
	_ ingest.Backend      = (*DB)(nil)
)

// maxIdle is the pool's idle connection cap: enough for the studies'
// client counts without reconnecting.
const maxIdle = 256

// Open connects to the server of dsn and checks that it answers.
func Open(ctx context.Context, dsn string) (*DB, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	conn := mssql.NewConnectorConfig(cfg.Driver)
	b := adapter.NewBackoff()
	dial := b.DialFunc(nil)
	db := &DB{cfg: cfg, backoff: b}
	if cfg.Standin == StandinIridium {
		// go-mssqldb's own extension point: every connection of the pool
		// comes from this Dialer, wrapped with the rewrite.
		db.fixes = new(tdsfix.Counter)
		plain := dial
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := plain(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return tdsfix.Wrap(c, db.fixes), nil
		}
	}
	conn.Dialer = dialer(dial)
	db.pool = sql.OpenDB(conn)
	db.pool.SetMaxIdleConns(maxIdle)
	db.pool.SetConnMaxIdleTime(5 * time.Minute)
	if err := db.pool.PingContext(ctx); err != nil {
		db.pool.Close()
		if cfg.Standin == "" && strings.Contains(err.Error(), "expected packet type 4") {
			return nil, fmt.Errorf("sqlserver: connect to %s: %w (if this is Iridium SQL, as `fieldbench cluster up sqlserver` starts, add standin=iridium&encrypt=disable to the DSN)", cfg.Driver.Host, err)
		}
		return nil, fmt.Errorf("sqlserver: connect to %s: %w", cfg.Driver.Host, err)
	}
	var version string
	if err := db.pool.QueryRowContext(ctx, "SELECT @@VERSION").Scan(&version); err != nil {
		db.pool.Close()
		return nil, fmt.Errorf("sqlserver: read version: %w", err)
	}
	if IsIridium(version) {
		db.writeMu = new(sync.Mutex)
	} else if cfg.Standin != "" {
		db.pool.Close()
		return nil, fmt.Errorf("sqlserver: standin=iridium, but %s is not Iridium SQL (@@VERSION %q): a real SQL Server needs no standin=, remove it", cfg.Driver.Host, firstLine(version))
	}
	return db, nil
}

// IsIridium reports whether a @@VERSION is Iridium SQL's, which calls
// itself "Microsoft SQL Server 2022 ... (iridium_sql emulator)".
func IsIridium(version string) bool { return strings.Contains(version, "iridium_sql") }

// dialer adapts a dial function to the driver's Dialer interface.
type dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// DialContext implements mssql.Dialer.
func (d dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return d(ctx, network, addr)
}

// Reconnects implements adapter.Reconnector.
func (db *DB) Reconnects() adapter.BackoffStats { return db.backoff.Stats() }

// Close closes the pool.
func (db *DB) Close() error { return db.pool.Close() }

// Info implements adapter.DB: the server's @@VERSION, the database and
// how ingest batches are sent. Iridium SQL answers @@VERSION as SQL Server
// 2022 with "(iridium_sql emulator)" after it: its result then says
// Iridium SQL, with the version it claims beside it and a stand_in note.
func (db *DB) Info(ctx context.Context) (adapter.Info, error) {
	var version string
	if err := db.pool.QueryRowContext(ctx, "SELECT @@VERSION").Scan(&version); err != nil {
		return adapter.Info{}, fmt.Errorf("sqlserver: read version: %w", err)
	}
	version = firstLine(version)
	cfg := map[string]string{
		"driver":   "github.com/microsoft/go-mssqldb",
		"addr":     fmt.Sprintf("%s:%d", db.cfg.Driver.Host, db.cfg.Driver.Port),
		"database": db.cfg.Database,
		"ingest":   string(db.cfg.Ingest),
	}
	if db.cfg.Ingest == IngestBulk {
		cfg["ingest"] += " (" + NotVerified + ")"
	}
	if db.cfg.Rows != 0 {
		cfg["rows"] = strconv.Itoa(db.cfg.Rows)
		if db.cfg.Rows > defaultInsertRows() {
			cfg["rows"] += " (" + NotVerified + ")"
		}
	}
	if db.cfg.Standin != "" {
		cfg["tds_rewrites"] = StandinNote
	}
	if IsIridium(version) {
		cfg["sqlserver_compat"] = version
		cfg["stand_in"] = "Iridium SQL, a SQL Server stand-in: its figures say nothing about SQL Server's speed; " +
			"the adapter serializes its writes to it (its transactions are not isolated)"
		version = "Iridium SQL (reports " + version + ")"
	}
	return adapter.Info{Name: Name, Version: version, Config: cfg}, nil
}

// firstLine is s up to its first line break (@@VERSION runs over several
// lines: product, build date, copyright, edition).
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}

// quoteIdent quotes a table or column name in brackets.
func quoteIdent(s string) string { return "[" + strings.ReplaceAll(s, "]", "]]") + "]" }
