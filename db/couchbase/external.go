package couchbase

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/fieldbench/fieldbench/cluster"
)

// An external Couchbase is asked over its cluster REST API (the cluster
// manager, port 8091 on Couchbase Server), member by member, without
// credentials; the members are those REST addresses, not the key-value
// ports the adapter's DSN names, so the scenario's dsn is required:
//
//   - version: GET /pools, implementationVersion ("7.2.0-5325-enterprise"
//     on Couchbase Server, "CouchbaseMock" for the stand-in);
//   - members: GET /pools/default, whose nodes[] each have a hostname
//     (host:8091), a status ("healthy", "unhealthy", "warmup") and a
//     clusterMembership ("active", "inactiveAdded", "inactiveFailed"): a
//     node is up when healthy and active. CouchbaseMock's /pools/default
//     has no nodes at all (captured in testdata): each member that answers
//     GET /pools is then up on its own;
//   - data moving: GET /pools/default/rebalanceProgress, status "none" or
//     "running" (with each node's progress, 0 to 1). CouchbaseMock answers
//     it 404 and has no rebalance: nothing moves on it.
//
// Verified here against CouchbaseMock 1.5.27 only (GET /pools and the
// nodes-less /pools/default): Couchbase Server's nodes[] and
// rebalanceProgress are NOT VERIFIED HERE (they follow its documented
// answers), nor is whether it answers them without credentials (its
// documentation asks them with an administrator's; without, expect 401,
// reported as the error). No resource figure is asked.

// Remote implements Remoter: the members are REST addresses, not the
// key-value ports the adapter dials, so the scenario gives the dsn.
func (couchbaseEngine) Remote() *cluster.RemoteDB {
	return &cluster.RemoteDB{DSNHint: "the adapter's DSN (couchbase://host:kvport/bucket): the members are REST addresses (port 8091)",
		Version: cbRemoteVersion, Members: cbRemoteMembers, Status: cbRemoteStatus, Moving: cbRemoteMoving}
}

// couchbaseMockImpl is CouchbaseMock's implementationVersion.
const couchbaseMockImpl = "CouchbaseMock"

type cbPools struct {
	ImplementationVersion string `json:"implementationVersion"`
}

type cbNode struct {
	Hostname          string `json:"hostname"`
	Status            string `json:"status"`
	ClusterMembership string `json:"clusterMembership"`
	Version           string `json:"version"`
}

// cbPoolsDefault is the part of GET /pools/default asked; Nodes is nil
// when the answer has no nodes (CouchbaseMock).
type cbPoolsDefault struct {
	Nodes []cbNode `json:"nodes"`
}

func parseCBPools(b []byte) (cbPools, error) {
	var p cbPools
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("couchbase: GET /pools: %w", err)
	}
	if p.ImplementationVersion == "" {
		return p, errors.New("couchbase: GET /pools names no implementationVersion")
	}
	return p, nil
}

func parseCBPoolsDefault(b []byte) (cbPoolsDefault, error) {
	var p cbPoolsDefault
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("couchbase: GET /pools/default: %w", err)
	}
	return p, nil
}

// cbMembersOf maps nodes[] by hostname to "up" (healthy and active) or
// what they are ("unhealthy, active", "healthy, inactiveAdded").
func cbMembersOf(nodes []cbNode) map[string]string {
	out := map[string]string{}
	for _, n := range nodes {
		if n.Status == "healthy" && n.ClusterMembership == "active" {
			out[n.Hostname] = "up"
		} else {
			out[n.Hostname] = n.Status + ", " + n.ClusterMembership
		}
	}
	return out
}

// parseCBRebalance reads GET /pools/default/rebalanceProgress: moving
// unless status is "none", with each node's progress.
func parseCBRebalance(b []byte) (bool, string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return false, "", fmt.Errorf("couchbase: rebalanceProgress: %w", err)
	}
	var status string
	if err := json.Unmarshal(m["status"], &status); err != nil || status == "" {
		return false, "", fmt.Errorf("couchbase: rebalanceProgress has no status: %s", b)
	}
	if status == "none" {
		return false, "", nil
	}
	var parts []string
	for k, v := range m {
		var p struct {
			Progress *float64 `json:"progress"`
		}
		if k == "status" || json.Unmarshal(v, &p) != nil || p.Progress == nil {
			continue
		}
		parts = append(parts, k+" "+strconv.FormatFloat(*p.Progress, 'f', 2, 64))
	}
	sort.Strings(parts)
	why := "rebalance " + status
	if len(parts) > 0 {
		why += ": " + strings.Join(parts, ", ")
	}
	return true, why, nil
}

// cbGet GETs path from member n's REST address; notFound says the server
// answered 404.
func cbGet(ctx context.Context, n *cluster.Node, path string) (b []byte, notFound bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.Addr()+path, nil)
	if err != nil {
		return nil, false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, false, fmt.Errorf("couchbase: GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err = io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, false, fmt.Errorf("couchbase: GET %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode == http.StatusNotFound, fmt.Errorf("couchbase: GET %s of %s: %s", path, n.Addr(), resp.Status)
	}
	return b, false, nil
}

func cbRemoteVersion(ctx context.Context, _ *cluster.Cluster, n *cluster.Node) (string, error) {
	b, _, err := cbGet(ctx, n, "/pools")
	if err != nil {
		return "", err
	}
	p, err := parseCBPools(b)
	return p.ImplementationVersion, err
}

// cbAnswering are the members that answer GET /pools, with the
// implementationVersion of the first.
func cbAnswering(ctx context.Context, c *cluster.Cluster) ([]*cluster.Node, string) {
	var out []*cluster.Node
	var impl string
	for _, st := range cbRemoteStatusOf(ctx, c) {
		if st.State != "up" {
			continue
		}
		for _, n := range c.Nodes {
			if n.Name == st.Name {
				out = append(out, n)
			}
		}
		if impl == "" {
			impl = st.Detail["version"]
		}
	}
	return out, impl
}

func cbRemoteMembers(ctx context.Context, c *cluster.Cluster) (map[string]string, error) {
	live, _ := cbAnswering(ctx, c)
	if len(live) == 0 {
		return nil, errors.New("couchbase: no member answered GET /pools")
	}
	b, _, err := cbGet(ctx, live[0], "/pools/default")
	if err != nil {
		return nil, err
	}
	p, err := parseCBPoolsDefault(b)
	if err != nil {
		return nil, err
	}
	if p.Nodes == nil {
		out := map[string]string{}
		for _, n := range live {
			out[n.Addr()] = "up"
		}
		return out, nil
	}
	return cbMembersOf(p.Nodes), nil
}

func cbRemoteStatusOf(ctx context.Context, c *cluster.Cluster) []cluster.NodeStatus {
	return cluster.RemoteStatuses(ctx, c, "", func(ctx context.Context, n *cluster.Node, st *cluster.NodeStatus) error {
		v, err := cbRemoteVersion(ctx, c, n)
		if err != nil {
			return err
		}
		st.Detail["version"] = v
		return nil
	})
}

func cbRemoteStatus(ctx context.Context, c *cluster.Cluster) ([]cluster.NodeStatus, error) {
	return cbRemoteStatusOf(ctx, c), nil
}

func cbRemoteMoving(ctx context.Context, c *cluster.Cluster) (bool, string, error) {
	live, impl := cbAnswering(ctx, c)
	if len(live) == 0 {
		return false, "", errors.New("couchbase: no member answered GET /pools")
	}
	b, notFound, err := cbGet(ctx, live[0], "/pools/default/rebalanceProgress")
	if notFound && impl == couchbaseMockImpl {
		return false, "", nil
	}
	if err != nil {
		return false, "", err
	}
	return parseCBRebalance(b)
}
