// Package rethinkapi holds what both the rethinkdb adapter and the
// rethinkdb cluster engine ask a RethinkDB-protocol server: which server it
// is. It is separate so that the engine does not import the adapter.
package rethinkapi

import (
	"context"
	"errors"
	"fmt"
	"strings"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"
)

// Server is what a server says it is.
type Server struct {
	// Name is "reqlite" or "RethinkDB".
	Name string
	// Version is the server's own version ("2.3.0" for reqlite, "2.4.4" or
	// "2.4.4~0bookworm" for RethinkDB).
	Version string
	// Raw is the whole process.version string.
	Raw string
}

// IsReqlite reports whether the server is reqlite.
func (s Server) IsReqlite() bool { return s.Name == "reqlite" }

// Identify reads a server_status process.version string: "rethinkdb
// 2.4.4~0bookworm (GCC 12.2.0)" on RethinkDB, "reqlite 2.3.0 (...)" where
// fieldbench's reqlite start script wrote it.
func Identify(version string) (Server, error) {
	f := strings.Fields(version)
	if len(f) < 2 {
		return Server{}, fmt.Errorf("server_status process.version %q: want NAME VERSION", version)
	}
	switch f[0] {
	case "reqlite":
		return Server{Name: "reqlite", Version: f[1], Raw: version}, nil
	case "rethinkdb":
		return Server{Name: "RethinkDB", Version: f[1], Raw: version}, nil
	}
	return Server{}, fmt.Errorf("server_status process.version %q: neither rethinkdb nor reqlite", version)
}

// ServerOf asks the server what it is: the process.version of its first
// rethinkdb.server_status row (a real RethinkDB has one per server; reqlite
// has one only when fieldbench's start script wrote it).
func ServerOf(ctx context.Context, s *r.Session) (Server, error) {
	cur, err := r.DB("rethinkdb").Table("server_status").Field("process").Field("version").Run(s, r.RunOpts{Context: ctx})
	if err != nil {
		return Server{}, fmt.Errorf("read rethinkdb.server_status: %w", err)
	}
	defer cur.Close()
	var v []string
	if err := cur.All(&v); err != nil {
		return Server{}, fmt.Errorf("read rethinkdb.server_status: %w", err)
	}
	if len(v) == 0 {
		return Server{}, errors.New("rethinkdb.server_status is empty: the server does not say what it is")
	}
	return Identify(v[0])
}
