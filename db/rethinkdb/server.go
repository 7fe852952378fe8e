package rethinkdb

// What the adapter (Info), the engine (its start and status) and the
// external side (version) all ask a RethinkDB-protocol server: which
// server it is. It was package rethinkapi while the engine lived in
// package cluster and could not import the adapter.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"
)

// serverID is what a server says it is.
type serverID struct {
	// Name is "reqlite" or "RethinkDB".
	Name string
	// Version is the server's own version ("2.3.0" for reqlite, "2.4.4" or
	// "2.4.4~0bookworm" for RethinkDB).
	Version string
	// Raw is the whole process.version string.
	Raw string
}

// IsReqlite reports whether the server is reqlite.
func (s serverID) IsReqlite() bool { return s.Name == "reqlite" }

// identify reads a server_status process.version string: "rethinkdb
// 2.4.4~0bookworm (GCC 12.2.0)" on RethinkDB, "reqlite 2.3.0 (...)" where
// fieldbench's reqlite start script wrote it.
func identify(version string) (serverID, error) {
	f := strings.Fields(version)
	if len(f) < 2 {
		return serverID{}, fmt.Errorf("server_status process.version %q: want NAME VERSION", version)
	}
	switch f[0] {
	case "reqlite":
		return serverID{Name: "reqlite", Version: f[1], Raw: version}, nil
	case "rethinkdb":
		return serverID{Name: "RethinkDB", Version: f[1], Raw: version}, nil
	}
	return serverID{}, fmt.Errorf("server_status process.version %q: neither rethinkdb nor reqlite", version)
}

// serverOf asks the server what it is: the process.version of its first
// rethinkdb.server_status row (a real RethinkDB has one per server; reqlite
// has one only when fieldbench's start script wrote it).
func serverOf(ctx context.Context, s *r.Session) (serverID, error) {
	cur, err := r.DB("rethinkdb").Table("server_status").Field("process").Field("version").Run(s, r.RunOpts{Context: ctx})
	if err != nil {
		return serverID{}, fmt.Errorf("read rethinkdb.server_status: %w", err)
	}
	defer cur.Close()
	var v []string
	if err := cur.All(&v); err != nil {
		return serverID{}, fmt.Errorf("read rethinkdb.server_status: %w", err)
	}
	if len(v) == 0 {
		return serverID{}, errors.New("rethinkdb.server_status is empty: the server does not say what it is")
	}
	return identify(v[0])
}
