package rethinkdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/fieldbench/fieldbench/cluster"
)

// An external RethinkDB is asked through its system tables, with the
// adapter's driver (rethinkdb-go) as admin without a password, member by
// member (the members are driver addresses, port 28015):
//
//   - version: rethinkdb.server_status's process.version ("rethinkdb
//     2.4.4~0bookworm (GCC 12.2.0)"; "reqlite 2.3.0 (...)" where
//     fieldbench's reqlite start script wrote it), as serverOf reads it;
//   - members: the rows of rethinkdb.server_status of the first member
//     that answers, one per connected server, each up at its
//     network.canonical_addresses hosts on its network.reql_port. reqlite
//     has no cluster: its one row (captured in testdata) has neither, and
//     each member that answers is then up on its own;
//   - data moving: rethinkdb.table_status, whose every table's shards
//     list replicas with a state: anything but "ready" ("transitioning",
//     "backfilling", "disconnected", "waiting_for_primary"...) is data
//     not yet where the configuration puts it. reqlite's table_status is
//     empty even with tables (captured): nothing moves on it.
//
// Verified here against reqlite 2.3.0 only: RethinkDB's server_status
// network fields and table_status replica states are NOT VERIFIED HERE
// (they follow RethinkDB's documented system tables). No resource figure
// is asked (server_stats has none of cpu, rss or disk).

// rethinkRemote is the rethinkdb engine's remote side
// (cluster.Single.External).
var rethinkRemote = cluster.RemoteDB{DSN: rethinkRemoteDSN, Version: rethinkRemoteVersion, Members: rethinkRemoteMembers,
	Status: rethinkRemoteStatus, Moving: rethinkRemoteMoving}

// rethinkStatusRow is the part of a server_status row asked.
type rethinkStatusRow struct {
	Name    string `json:"name"`
	Network struct {
		ReqlPort           int `json:"reql_port"`
		CanonicalAddresses []struct {
			Host string `json:"host"`
		} `json:"canonical_addresses"`
	} `json:"network"`
}

// rethinkTableStatus is the part of a table_status row asked.
type rethinkTableStatus struct {
	DB     string `json:"db"`
	Name   string `json:"name"`
	Shards []struct {
		Replicas []struct {
			Server string `json:"server"`
			State  string `json:"state"`
		} `json:"replicas"`
	} `json:"shards"`
}

func parseRethinkServerStatus(b []byte) ([]rethinkStatusRow, error) {
	var rows []rethinkStatusRow
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, fmt.Errorf("rethinkdb: server_status: %w", err)
	}
	return rows, nil
}

// rethinkMembersOf maps server_status rows to host:reql_port "up"; ok is
// false when no row names a driver port (reqlite).
func rethinkMembersOf(rows []rethinkStatusRow) (map[string]string, bool) {
	out := map[string]string{}
	for _, row := range rows {
		if row.Network.ReqlPort == 0 {
			continue
		}
		for _, a := range row.Network.CanonicalAddresses {
			out[net.JoinHostPort(a.Host, strconv.Itoa(row.Network.ReqlPort))] = "up"
		}
	}
	return out, len(out) > 0
}

// rethinkNotReady reads table_status rows: moving while a replica of a
// shard is not "ready", saying which.
func rethinkNotReady(b []byte) (bool, string, error) {
	var tables []rethinkTableStatus
	if err := json.Unmarshal(b, &tables); err != nil {
		return false, "", fmt.Errorf("rethinkdb: table_status: %w", err)
	}
	var why []string
	for _, t := range tables {
		for i, sh := range t.Shards {
			for _, rep := range sh.Replicas {
				if rep.State != "ready" {
					why = append(why, fmt.Sprintf("%s.%s shard %d on %s: %s", t.DB, t.Name, i+1, rep.Server, rep.State))
				}
			}
		}
	}
	sort.Strings(why)
	return len(why) > 0, strings.Join(why, ", "), nil
}

// rethinkSystemTable reads a table of the rethinkdb database through n,
// as JSON (the form parsed and captured).
func rethinkSystemTable(ctx context.Context, n *cluster.Node, table string) ([]byte, error) {
	s, done, err := rethinkSession(n)
	if err != nil {
		return nil, fmt.Errorf("rethinkdb: connect to %s: %w", n.Addr(), err)
	}
	defer done()
	var rows []map[string]any
	if err := readAll(ctx, s, r.DB("rethinkdb").Table(table), &rows); err != nil {
		return nil, fmt.Errorf("rethinkdb: read rethinkdb.%s of %s: %w", table, n.Addr(), err)
	}
	return json.Marshal(rows)
}

func rethinkRemoteDSN(c *cluster.Cluster) string {
	for _, n := range c.Nodes {
		if n.Role != cluster.RoleDecommissioned {
			return fmt.Sprintf("rethinkdb://%s/%s", n.Addr(), rethinkDatabase)
		}
	}
	return ""
}

func rethinkRemoteVersion(ctx context.Context, _ *cluster.Cluster, n *cluster.Node) (string, error) {
	s, done, err := rethinkSession(n)
	if err != nil {
		return "", fmt.Errorf("rethinkdb: connect to %s: %w", n.Addr(), err)
	}
	defer done()
	srv, err := serverOf(ctx, s)
	if err != nil {
		return "", fmt.Errorf("rethinkdb: %s: %w", n.Addr(), err)
	}
	return srv.Name + " " + srv.Version, nil
}

func rethinkRemoteStatusOf(ctx context.Context, c *cluster.Cluster) []cluster.NodeStatus {
	return cluster.RemoteStatuses(ctx, c, "", func(ctx context.Context, n *cluster.Node, st *cluster.NodeStatus) error {
		v, err := rethinkRemoteVersion(ctx, c, n)
		if err != nil {
			return err
		}
		st.Detail["server"] = v
		return nil
	})
}

func rethinkRemoteStatus(ctx context.Context, c *cluster.Cluster) ([]cluster.NodeStatus, error) {
	return rethinkRemoteStatusOf(ctx, c), nil
}

// rethinkAnswering are the members that answer a version query.
func rethinkAnswering(ctx context.Context, c *cluster.Cluster) []*cluster.Node {
	up := map[string]bool{}
	for _, st := range rethinkRemoteStatusOf(ctx, c) {
		up[st.Name] = st.State == "up"
	}
	var out []*cluster.Node
	for _, n := range c.Nodes {
		if up[n.Name] {
			out = append(out, n)
		}
	}
	return out
}

func rethinkRemoteMembers(ctx context.Context, c *cluster.Cluster) (map[string]string, error) {
	live := rethinkAnswering(ctx, c)
	if len(live) == 0 {
		return nil, errors.New("rethinkdb: no member answered")
	}
	b, err := rethinkSystemTable(ctx, live[0], "server_status")
	if err != nil {
		return nil, err
	}
	rows, err := parseRethinkServerStatus(b)
	if err != nil {
		return nil, err
	}
	if m, ok := rethinkMembersOf(rows); ok {
		return m, nil
	}
	out := map[string]string{}
	for _, n := range live {
		out[n.Addr()] = "up"
	}
	return out, nil
}

func rethinkRemoteMoving(ctx context.Context, c *cluster.Cluster) (bool, string, error) {
	live := rethinkAnswering(ctx, c)
	if len(live) == 0 {
		return false, "", errors.New("rethinkdb: no member answered")
	}
	b, err := rethinkSystemTable(ctx, live[0], "table_status")
	if err != nil {
		return false, "", err
	}
	return rethinkNotReady(b)
}
