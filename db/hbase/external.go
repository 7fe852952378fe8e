package hbase

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/fieldbench/fieldbench/adapter"
	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/redact"
)

// An external HBase is asked everything through its REST gateway, the one
// the adapter's DSN names (the adapter speaks REST too, docs/hbase.md):
//
//   - version: /version/cluster (the cluster's version, as the master
//     reports it, not the gateway's);
//   - members: /status/cluster, the master's live region servers (up) and
//     dead ones (host,port,startcode), by host:port as HBase names them
//     (the scenario's members must use the same host names);
//   - data movement: the info:state column of every row of hbase:meta
//     (one scan through the gateway), where a region that is not OPEN
//     (OPENING, CLOSING, SPLITTING, ...) is in transition, and a live
//     region server that holds no region while another holds more than
//     one (a join the balancer has not served yet). The master's own
//     regions-in-transition count (its JMX servlet, which the hbase
//     engine reads for clusters it started) is not asked: it needs the
//     master's info port, which a user's cluster need not expose, and the
//     REST status does not carry it. hbase:meta's own region keeps its
//     state in ZooKeeper, not in a row: its moves are not seen.
//   - resources: /status/cluster's storefileSizeMB per region, summed per
//     region server (disk); heap and request counts are status facts.

// Remote implements Remoter: an external HBase is asked through the REST
// gateway its DSN names (the members are region servers, not what the
// adapter talks to, so the scenario gives the dsn).
func (hbaseEngine) Remote() *cluster.RemoteDB {
	return &cluster.RemoteDB{DSNHint: "the adapter's DSN naming the REST gateway (hbase://host:8080): the members are region servers",
		Version: hbaseRemoteVersion, Members: hbaseRemoteMembers, Resources: hbaseRemoteResources, Reported: []string{"disk"},
		Source: hbaseRemoteSource, Status: hbaseRemoteStatus, Moving: hbaseRemoteMoving}
}

// hbaseRemoteSource says where an external HBase's disk figure comes from.
const hbaseRemoteSource = "/status/cluster of the REST gateway: disk = the sum of storefileSizeMB over the regions each region server holds (its HFiles, each region's in whole MB as HBase truncates it; no write-ahead log, no memstore)"

// hbaseRemoteClusterStatus is /status/cluster as JSON. Region names are
// bytes, which the gateway sends in base64 (as JSON does []byte).
type hbaseRemoteClusterStatus struct {
	LiveNodes []hbaseRemoteServer `json:"LiveNodes"`
	DeadNodes []string            `json:"DeadNodes"`
	Regions   int                 `json:"regions"`
}

type hbaseRemoteServer struct {
	Name       string `json:"name"` // host:port
	StartCode  int64  `json:"startCode"`
	Requests   int64  `json:"requests"`
	HeapSizeMB int64  `json:"heapSizeMB"`
	MaxHeapMB  int64  `json:"maxHeapSizeMB"`
	Regions    []struct {
		Name          []byte `json:"name"`
		ReadRequests  int64  `json:"readRequestsCount"`
		WriteRequests int64  `json:"writeRequestsCount"`
		StorefileMB   int64  `json:"storefileSizeMB"`
		MemStoreMB    int64  `json:"memStoreSizeMB"`
	} `json:"Region"`
}

// hbaseRemoteGateway is the REST gateway the cluster's DSN names.
func hbaseRemoteGateway(c *cluster.Cluster) (*cluster.Node, error) {
	u, err := adapter.ParseURL(c.DSN)
	if err != nil {
		return nil, err
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return nil, fmt.Errorf("hbase: the DSN names no REST gateway host:port (%s): %w", redact.DSN(c.DSN), err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("hbase: REST gateway port %q: %w", port, err)
	}
	return &cluster.Node{Name: "rest", Host: host, Port: p, Remote: true}, nil
}

// hbaseRemoteGet GETs path from the gateway into a string.
func hbaseRemoteGet(ctx context.Context, c *cluster.Cluster, path string) ([]byte, error) {
	gw, err := hbaseRemoteGateway(c)
	if err != nil {
		return nil, err
	}
	var s string
	if err := hbaseGet(ctx, gw, path, &s); err != nil {
		return nil, fmt.Errorf("hbase REST gateway %s: %w", gw.Addr(), err)
	}
	return []byte(s), nil
}

// parseHBaseVersion reads /version/cluster: {"Version":"2.6.1-hadoop3"}.
func parseHBaseVersion(b []byte) (string, error) {
	var v struct {
		Version string `json:"Version"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return "", fmt.Errorf("hbase: /version/cluster: %w", err)
	}
	if v.Version == "" {
		return "", fmt.Errorf("hbase: /version/cluster names no version: %s", cluster.Tail(string(b), 200))
	}
	return v.Version, nil
}

func parseHBaseClusterStatus(b []byte) (*hbaseRemoteClusterStatus, error) {
	var st hbaseRemoteClusterStatus
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("hbase: /status/cluster: %w", err)
	}
	return &st, nil
}

// hbaseDeadAddr turns a dead server's name, host,port,startcode (HBase's
// ServerName), into host:port.
func hbaseDeadAddr(name string) string {
	parts := strings.Split(name, ",")
	if len(parts) < 2 {
		return name
	}
	return net.JoinHostPort(parts[0], parts[1])
}

// hbaseRemoteVersion asks the gateway the cluster's version (n, a region
// server, is not asked: it speaks only HBase's RPC).
func hbaseRemoteVersion(ctx context.Context, c *cluster.Cluster, _ *cluster.Node) (string, error) {
	b, err := hbaseRemoteGet(ctx, c, "/version/cluster")
	if err != nil {
		return "", err
	}
	return parseHBaseVersion(b)
}

func hbaseRemoteClusterStatusOf(ctx context.Context, c *cluster.Cluster) (*hbaseRemoteClusterStatus, error) {
	b, err := hbaseRemoteGet(ctx, c, "/status/cluster")
	if err != nil {
		return nil, err
	}
	return parseHBaseClusterStatus(b)
}

// hbaseMembers is what the master lists: "up" for a live region server,
// "dead" for one it lists dead and not live again.
func hbaseMembers(st *hbaseRemoteClusterStatus) map[string]string {
	out := map[string]string{}
	for _, d := range st.DeadNodes {
		out[hbaseDeadAddr(d)] = "dead"
	}
	for _, rs := range st.LiveNodes {
		out[rs.Name] = "up"
	}
	return out
}

func hbaseRemoteMembers(ctx context.Context, c *cluster.Cluster) (map[string]string, error) {
	st, err := hbaseRemoteClusterStatusOf(ctx, c)
	if err != nil {
		return nil, err
	}
	return hbaseMembers(st), nil
}

// hbaseServerStatus is one live region server's status line.
func hbaseServerStatus(rs hbaseRemoteServer) cluster.NodeStatus {
	var reads, writes, store, mem int64
	for _, r := range rs.Regions {
		reads += r.ReadRequests
		writes += r.WriteRequests
		store += r.StorefileMB
		mem += r.MemStoreMB
	}
	return cluster.NodeStatus{Addr: rs.Name, Role: "regionserver", State: "up", Detail: map[string]string{
		"regions":         strconv.Itoa(len(rs.Regions)),
		"requests":        strconv.FormatInt(reads+writes, 10),
		"read_requests":   strconv.FormatInt(reads, 10),
		"write_requests":  strconv.FormatInt(writes, 10),
		"server_requests": strconv.FormatInt(rs.Requests, 10),
		"storefile_mb":    strconv.FormatInt(store, 10),
		"memstore_mb":     strconv.FormatInt(mem, 10),
		"heap_mb":         fmt.Sprintf("%d/%d", rs.HeapSizeMB, rs.MaxHeapMB),
	}}
}

// hbaseExternalStatus is a status line per member (up with the master's
// facts, dead, or not listed), then one per live region server that is
// not a member (named by its address).
func hbaseExternalStatus(c *cluster.Cluster, st *hbaseRemoteClusterStatus) []cluster.NodeStatus {
	live := map[string]hbaseRemoteServer{}
	for _, rs := range st.LiveNodes {
		live[rs.Name] = rs
	}
	dead := map[string]bool{}
	for _, d := range st.DeadNodes {
		dead[hbaseDeadAddr(d)] = true
	}
	var out []cluster.NodeStatus
	seen := map[string]bool{}
	for _, n := range c.Nodes {
		if n.Role == cluster.RoleDecommissioned {
			continue
		}
		seen[n.Addr()] = true
		var ns cluster.NodeStatus
		switch rs, ok := live[n.Addr()]; {
		case ok:
			ns = hbaseServerStatus(rs)
		case dead[n.Addr()]:
			ns = cluster.NodeStatus{Addr: n.Addr(), Role: "regionserver", State: "dead"}
		default:
			ns = cluster.NodeStatus{Addr: n.Addr(), Role: "regionserver", State: "not listed"}
		}
		ns.Name = n.Name
		out = append(out, ns)
	}
	for _, rs := range st.LiveNodes {
		if !seen[rs.Name] {
			ns := hbaseServerStatus(rs)
			ns.Role = "regionserver (not a member)"
			out = append(out, ns)
		}
	}
	return out
}

func hbaseRemoteStatus(ctx context.Context, c *cluster.Cluster) ([]cluster.NodeStatus, error) {
	st, err := hbaseRemoteClusterStatusOf(ctx, c)
	if err != nil {
		return nil, err
	}
	return hbaseExternalStatus(c, st), nil
}

// hbaseRemoteResources: each live member's disk, its regions' store
// files (hbaseRemoteSource); CPU and memory are NaN (heap used is a
// status fact, not a resident set).
func hbaseRemoteResources(ctx context.Context, c *cluster.Cluster) (map[string]cluster.NodeResources, error) {
	st, err := hbaseRemoteClusterStatusOf(ctx, c)
	if err != nil {
		return nil, err
	}
	return hbaseResourcesOf(c, st), nil
}

func hbaseResourcesOf(c *cluster.Cluster, st *hbaseRemoteClusterStatus) map[string]cluster.NodeResources {
	live := map[string]hbaseRemoteServer{}
	for _, rs := range st.LiveNodes {
		live[rs.Name] = rs
	}
	out := map[string]cluster.NodeResources{}
	for _, n := range c.Nodes {
		rs, ok := live[n.Addr()]
		if !ok || !n.Running() {
			continue
		}
		var mb int64
		for _, r := range rs.Regions {
			mb += r.StorefileMB
		}
		out[n.Name] = cluster.NodeResources{CPUSeconds: math.NaN(), RSSBytes: math.NaN(), DiskBytes: float64(mb) * (1 << 20)}
	}
	return out
}

// hbaseMetaRows is a scan of hbase:meta's info:state column through the
// gateway: row keys (region names) and cell values, base64 as []byte.
type hbaseMetaRows struct {
	Row []struct {
		Key  []byte `json:"key"`
		Cell []struct {
			Column []byte `json:"column"`
			Value  []byte `json:"$"`
		} `json:"Cell"`
	} `json:"Row"`
}

// hbaseSettledStates are the region states of hbase:meta that are not a
// transition: OPEN, CLOSED (a disabled table), SPLIT and MERGED (parents
// the catalog janitor has not removed yet), FAILED_OPEN and FAILED_CLOSE
// (stuck until an operator acts: no data moves by itself).
var hbaseSettledStates = map[string]bool{"OPEN": true, "CLOSED": true, "SPLIT": true, "MERGED": true, "FAILED_OPEN": true, "FAILED_CLOSE": true}

// hbaseMetaStateScan is the gateway's scan of every region's info:state
// in hbase:meta, whose answer hbaseMetaInTransition reads.
const hbaseMetaStateScan = "/hbase:meta/*/info:state"

// hbaseMetaInTransition reads the answer (body, or the error of the GET)
// to hbaseMetaStateScan: the regions in transition by state. The gateway
// answers 404 to a scan that finds no row (HBase 3 without any table): no
// region has a state, none is in transition.
func hbaseMetaInTransition(body []byte, err error) (map[string]int, error) {
	if err != nil && strings.Contains(err.Error(), ": 404 Not Found") {
		return map[string]int{}, nil
	}
	if err != nil {
		return nil, err
	}
	return hbaseInTransition(body)
}

// hbaseInTransition counts, by state, the regions whose info:state in
// hbase:meta is a transition (OPENING, CLOSING, SPLITTING, MERGING,
// SPLITTING_NEW, MERGING_NEW, OFFLINE, ABNORMALLY_CLOSED: a crashed
// server's region not reassigned yet).
func hbaseInTransition(b []byte) (map[string]int, error) {
	var rows hbaseMetaRows
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, fmt.Errorf("hbase: scan of hbase:meta info:state: %w", err)
	}
	out := map[string]int{}
	for _, r := range rows.Row {
		for _, cell := range r.Cell {
			if string(cell.Column) != "info:state" {
				continue
			}
			if s := string(cell.Value); !hbaseSettledStates[s] {
				out[s]++
			}
		}
	}
	return out, nil
}

// hbaseRemoteMovingOf says whether data moves: regions in transition
// (rit, by state), or a live region server that holds no region while
// another holds more than one.
func hbaseRemoteMovingOf(rit map[string]int, st *hbaseRemoteClusterStatus) (bool, string) {
	var why []string
	if len(rit) > 0 {
		var parts []string
		total := 0
		for s, k := range rit {
			total += k
			parts = append(parts, fmt.Sprintf("%s %d", s, k))
		}
		sort.Strings(parts)
		why = append(why, fmt.Sprintf("%d region(s) in transition in hbase:meta (%s)", total, strings.Join(parts, ", ")))
	}
	var empty []string
	most := 0
	for _, rs := range st.LiveNodes {
		most = max(most, len(rs.Regions))
		if len(rs.Regions) == 0 {
			empty = append(empty, rs.Name)
		}
	}
	if len(empty) > 0 && most > 1 {
		sort.Strings(empty)
		why = append(why, fmt.Sprintf("%s hold(s) no region while another holds %d", strings.Join(empty, ", "), most))
	}
	return len(why) > 0, strings.Join(why, "; ")
}

func hbaseRemoteMoving(ctx context.Context, c *cluster.Cluster) (bool, string, error) {
	rit, err := hbaseMetaInTransition(hbaseRemoteGet(ctx, c, hbaseMetaStateScan))
	if err != nil {
		return false, "", err
	}
	st, err := hbaseRemoteClusterStatusOf(ctx, c)
	if err != nil {
		return false, "", err
	}
	moving, why := hbaseRemoteMovingOf(rit, st)
	return moving, why, nil
}
