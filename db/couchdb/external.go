package couchdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/db/couchdb/couchapi"
)

// An external CouchDB is asked over HTTP with the adapter's own client
// (couchapi), member by member, without credentials:
//
//   - version: GET / (the welcome: "CouchDB 3.3.3", or "pouchdb-server
//     4.2.0" for the stand-in);
//   - members: for CouchDB, GET /_membership of the first member that
//     answers: cluster_nodes are the configured Erlang nodes
//     (name@host), all_nodes those connected; a configured node is up when
//     connected, and is matched to a member by host (members share one
//     port). pouchdb-server answers /_membership with the same constant
//     node1@127.0.0.1 on every server (captured in testdata): it is not a
//     cluster, so each member that answers GET / is up on its own;
//   - data moving: for CouchDB, the internal_replication_jobs of
//     /_node/NODE/_system on every connected node (shard copies syncing);
//     for pouchdb-server, whose servers replicate each database to each
//     other (the couchdb engine, the adapter's peers=), two answering
//     members holding a different number of documents in a database.
//
// Verified here against pouchdb-server 4.2.0 only: CouchDB's
// /_membership matching and /_node/NODE/_system are NOT VERIFIED HERE
// (pouchdb-server has no cluster). No resource figure is asked.

// Remote implements Remoter.
func (couchEngine) Remote() *cluster.RemoteDB {
	return &cluster.RemoteDB{DSN: couchRemoteDSN, Version: couchRemoteVersion, Members: couchRemoteMembers,
		Status: couchRemoteStatus, Moving: couchRemoteMoving}
}

type couchMembership struct {
	AllNodes     []string `json:"all_nodes"`
	ClusterNodes []string `json:"cluster_nodes"`
}

func parseCouchMembership(b []byte) (couchMembership, error) {
	var m couchMembership
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("couchdb: /_membership: %w", err)
	}
	return m, nil
}

// couchNodeHost is the host of an Erlang node name, name@host.
func couchNodeHost(node string) string {
	if i := strings.LastIndexByte(node, '@'); i >= 0 {
		return node[i+1:]
	}
	return node
}

// couchMembersOf maps CouchDB's membership to host:port (port: the
// members' port) with up for a connected node and "not connected" for a
// configured one that is not.
func couchMembersOf(m couchMembership, port int) map[string]string {
	connected := map[string]bool{}
	for _, n := range m.AllNodes {
		connected[n] = true
	}
	out := map[string]string{}
	for _, n := range m.ClusterNodes {
		a := net.JoinHostPort(couchNodeHost(n), strconv.Itoa(port))
		if connected[n] {
			out[a] = "up"
		} else {
			out[a] = "not connected"
		}
	}
	return out
}

// couchDocsDiffer says which database, if any, holds a different number
// of documents on different members (counts by database, then member).
func couchDocsDiffer(counts map[string]map[string]int64) (bool, string) {
	dbs := make([]string, 0, len(counts))
	for d := range counts {
		dbs = append(dbs, d)
	}
	sort.Strings(dbs)
	for _, d := range dbs {
		var names []string
		for n := range counts[d] {
			names = append(names, n)
		}
		sort.Strings(names)
		differ := false
		var parts []string
		for i, n := range names {
			if i > 0 && counts[d][n] != counts[d][names[0]] {
				differ = true
			}
			parts = append(parts, n+"="+strconv.FormatInt(counts[d][n], 10))
		}
		if differ {
			return true, d + ": documents per member " + strings.Join(parts, " ")
		}
	}
	return false, ""
}

// couchSystem is what /_node/NODE/_system says about shard syncing.
type couchSystem struct {
	InternalReplicationJobs int64 `json:"internal_replication_jobs"`
}

func couchRemoteDSN(c *cluster.Cluster) string {
	for _, n := range c.Nodes {
		if n.Role != cluster.RoleDecommissioned {
			return "couchdb://" + n.Addr()
		}
	}
	return ""
}

func couchRemoteVersion(ctx context.Context, _ *cluster.Cluster, n *cluster.Node) (string, error) {
	w, err := couchClient(n).Welcome(ctx)
	if err != nil {
		return "", err
	}
	if w.Version == "" {
		return "", errors.New("couchdb: GET / names no version")
	}
	return w.Server + " " + w.Version, nil
}

// couchAnswering are the members that answer GET /, with the welcome of
// the first.
func couchAnswering(ctx context.Context, c *cluster.Cluster) ([]*cluster.Node, couchapi.Welcome) {
	var out []*cluster.Node
	var first couchapi.Welcome
	for _, n := range c.Nodes {
		if !n.Running() || n.Role == cluster.RoleDecommissioned {
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, cluster.RemoteAskTimeout)
		w, err := couchClient(n).Welcome(qctx)
		cancel()
		if err == nil {
			if len(out) == 0 {
				first = w
			}
			out = append(out, n)
		}
	}
	return out, first
}

func couchRemoteMembers(ctx context.Context, c *cluster.Cluster) (map[string]string, error) {
	live, w := couchAnswering(ctx, c)
	if len(live) == 0 {
		return nil, errors.New("couchdb: no member answered GET /")
	}
	if w.Server != "CouchDB" {
		out := map[string]string{}
		for _, n := range live {
			out[n.Addr()] = "up"
		}
		return out, nil
	}
	var raw json.RawMessage
	if err := couchClient(live[0]).Do(ctx, "GET", "/_membership", nil, nil, &raw); err != nil {
		return nil, fmt.Errorf("couchdb: /_membership: %w", err)
	}
	m, err := parseCouchMembership(raw)
	if err != nil {
		return nil, err
	}
	return couchMembersOf(m, live[0].Port), nil
}

func couchRemoteStatus(ctx context.Context, c *cluster.Cluster) ([]cluster.NodeStatus, error) {
	return cluster.RemoteStatuses(ctx, c, "", func(ctx context.Context, n *cluster.Node, st *cluster.NodeStatus) error {
		cl := couchClient(n)
		w, err := cl.Welcome(ctx)
		if err != nil {
			return err
		}
		st.Detail["server"] = w.Server + " " + w.Version
		couchCountDetail(ctx, cl, st.Detail)
		return nil
	}), nil
}

func couchRemoteMoving(ctx context.Context, c *cluster.Cluster) (bool, string, error) {
	live, w := couchAnswering(ctx, c)
	if len(live) == 0 {
		return false, "", errors.New("couchdb: no member answered GET /")
	}
	if w.Server == "CouchDB" {
		var m couchMembership
		if err := couchClient(live[0]).Do(ctx, "GET", "/_membership", nil, nil, &m); err != nil {
			return false, "", fmt.Errorf("couchdb: /_membership: %w", err)
		}
		var why []string
		for _, node := range m.AllNodes {
			var s couchSystem
			if err := couchClient(live[0]).Do(ctx, "GET", "/_node/"+node+"/_system", nil, nil, &s); err != nil {
				return false, "", fmt.Errorf("couchdb: /_node/%s/_system: %w", node, err)
			}
			if s.InternalReplicationJobs > 0 {
				why = append(why, fmt.Sprintf("%s: %d internal replication job(s)", node, s.InternalReplicationJobs))
			}
		}
		return len(why) > 0, strings.Join(why, ", "), nil
	}
	if len(live) < 2 {
		return false, "", nil
	}
	dbs, err := couchapi.UserDBs(ctx, couchClient(live[0]))
	if err != nil {
		return false, "", fmt.Errorf("couchdb: list databases: %w", err)
	}
	counts := map[string]map[string]int64{}
	for _, d := range dbs {
		counts[d] = map[string]int64{}
		for _, n := range live {
			i, err := couchClient(n).DBInfo(ctx, d)
			if err != nil {
				return false, "", fmt.Errorf("couchdb: %s on %s: %w", d, n.Name, err)
			}
			counts[d][n.Name] = i.DocCount
		}
	}
	moving, why := couchDocsDiffer(counts)
	return moving, why, nil
}
