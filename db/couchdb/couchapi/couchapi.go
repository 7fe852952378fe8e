// Package couchapi is the small part of CouchDB's HTTP API that fieldbench
// needs, over net/http and encoding/json: requests with CouchDB's error
// bodies turned into Go errors, databases, the server's welcome, and
// continuous replication of a database between standalone servers
// (_replicator documents). The adapter, the cluster engine and the
// convergence prober share it, so the three agree on how a replicated
// database is set up; it imports nothing of fieldbench.
package couchapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Client speaks to one server. Base is "http://host:port" (no credentials,
// so it can be printed); User and Password, when set, go in a Basic
// Authorization header.
type Client struct {
	Base     string
	User     string
	Password string
	HTTP     *http.Client
}

// Error is a CouchDB error answer: the HTTP status and the body's "error"
// and "reason".
type Error struct {
	Status int
	Code   string `json:"error"`
	Reason string `json:"reason"`
	Method string
	Path   string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.Path, e.Status, e.Code, e.Reason)
}

// Status reports err's HTTP status when it is an *Error, else 0.
func Status(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// IsNotFound reports a 404 answer (missing document or database).
func IsNotFound(err error) bool { return Status(err) == http.StatusNotFound }

// IsConflict reports a 409 answer (a document update conflict, or a
// document that exists already).
func IsConflict(err error) bool { return Status(err) == http.StatusConflict }

// Do sends one request: body (when not nil) is encoded as JSON, a 2xx
// answer is decoded into out (when not nil), and any other answer becomes
// an *Error. path is escaped by the caller (see Path).
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s %s: encode: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	u := c.Base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.User != "" {
		req.SetBasicAuth(c.User, c.Password)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s%s: %w", method, c.Base, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		e := &Error{Status: resp.StatusCode, Method: method, Path: path}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if json.Unmarshal(b, e) != nil || e.Code == "" {
			e.Code, e.Reason = http.StatusText(resp.StatusCode), strings.TrimSpace(string(b))
		}
		return e
	}
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: decode the answer: %w", method, path, err)
	}
	return nil
}

// Path joins escaped path segments: Path("db", "a/b") is "/db/a%2Fb".
// Segments that start with "_" (_design, _all_docs...) are the caller's to
// write whole.
func Path(segments ...string) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	return b.String()
}

// Welcome is the server's answer to GET /. CouchDB says {"couchdb":
// "Welcome", "version": ...}; pouchdb-server (express-pouchdb) says
// {"express-pouchdb": "Welcome!", "version": ...}. Server names which.
type Welcome struct {
	Server  string // "CouchDB", "pouchdb-server" or the vendor's name
	Version string
	Vendor  string
}

// Welcome asks the server what it is.
func (c *Client) Welcome(ctx context.Context) (Welcome, error) {
	var m map[string]any
	if err := c.Do(ctx, http.MethodGet, "/", nil, nil, &m); err != nil {
		return Welcome{}, err
	}
	return ParseWelcome(m), nil
}

// ParseWelcome reads GET /'s answer.
func ParseWelcome(m map[string]any) Welcome {
	str := func(v any) string { s, _ := v.(string); return s }
	w := Welcome{Version: str(m["version"])}
	if v, ok := m["vendor"].(map[string]any); ok {
		w.Vendor = str(v["name"])
	}
	switch {
	case m["couchdb"] != nil:
		w.Server = "CouchDB"
	case m["express-pouchdb"] != nil:
		w.Server = "pouchdb-server"
	case w.Vendor != "":
		w.Server = w.Vendor
	default:
		w.Server = "unknown CouchDB-compatible server"
	}
	return w
}

// CreateDB creates database name; one that exists already is fine.
func (c *Client) CreateDB(ctx context.Context, name string) error {
	err := c.Do(ctx, http.MethodPut, Path(name), nil, nil, nil)
	if Status(err) == http.StatusPreconditionFailed { // file_exists
		return nil
	}
	return err
}

// DeleteDB deletes database name; one that does not exist is fine.
func (c *Client) DeleteDB(ctx context.Context, name string) error {
	err := c.Do(ctx, http.MethodDelete, Path(name), nil, nil, nil)
	if IsNotFound(err) {
		return nil
	}
	return err
}

// AllDBs lists the server's databases.
func (c *Client) AllDBs(ctx context.Context) ([]string, error) {
	var out []string
	err := c.Do(ctx, http.MethodGet, "/_all_dbs", nil, nil, &out)
	return out, err
}

// DBInfo is GET /db.
type DBInfo struct {
	DocCount  int64 `json:"doc_count"`
	DiskSize  int64 `json:"disk_size"`
	UpdateSeq any   `json:"update_seq"` // a number (PouchDB) or a string (CouchDB 2+)
	Sizes     struct {
		File     int64 `json:"file"`
		External int64 `json:"external"`
		Active   int64 `json:"active"`
	} `json:"sizes"`
}

// DBInfo reads a database's information; a missing database is an error
// for which IsNotFound holds.
func (c *Client) DBInfo(ctx context.Context, name string) (DBInfo, error) {
	var i DBInfo
	err := c.Do(ctx, http.MethodGet, Path(name), nil, nil, &i)
	return i, err
}
