package hbase

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/fieldbench/fieldbench/cluster"
)

// The answers in testdata/external were captured from HBase
// 2.6.1-hadoop3's REST gateway (`fieldbench cluster up hbase --nodes 2`,
// then `cluster add`, 3,000 wiki articles loaded, the added region server
// 127.0.0.1:33805 killed, another added):
//
//	version.json           /version/cluster
//	status-live.json       /status/cluster, three region servers live
//	status-dead.json       31 s after the kill: the master lists it dead,
//	                       its region not reassigned yet
//	status-recovered.json  the region reopened on 127.0.0.1:35151
//	status-joined.json     just after another region server joined
//	meta-opening.json      hbase:meta info:state while the region reopened
//	meta-open.json         the same, seconds later
func hbaseTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "external", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseHBaseVersion(t *testing.T) {
	tests := []struct {
		name, in, want string
		err            bool
	}{
		{"captured", string(hbaseTestdata(t, "version.json")), "2.6.1-hadoop3", false},
		{"no version", `{}`, "", true},
		{"not JSON", `<html>`, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseHBaseVersion([]byte(tt.in))
			if got != tt.want || (err != nil) != tt.err {
				t.Errorf("got %q, %v; want %q (error %v)", got, err, tt.want, tt.err)
			}
		})
	}
}

// TestHBaseExternalStatus: members, status lines, disk and data movement
// read from the captured answers.
func TestHBaseExternalStatus(t *testing.T) {
	const a, b, k, j = "127.0.0.1:35151", "127.0.0.1:36035", "127.0.0.1:33805", "127.0.0.1:38465"
	c := &cluster.Cluster{Nodes: []*cluster.Node{
		{Name: "rs1", Host: "127.0.0.1", Port: 35151, Remote: true},
		{Name: "rs2", Host: "127.0.0.1", Port: 36035, Remote: true},
		{Name: "rs3", Host: "127.0.0.1", Port: 33805, Remote: true},
	}}
	tests := []struct {
		file    string
		members map[string]string
		// states and regions by status line (name, or address for a
		// region server that is not a member)
		states  map[string]string
		regions map[string]string
		diskMB  map[string]float64
		moving  bool
		why     string
	}{
		{"status-live.json", map[string]string{a: "up", b: "up", k: "up"},
			map[string]string{"rs1": "up", "rs2": "up", "rs3": "up"},
			map[string]string{"rs1": "1", "rs2": "1", "rs3": "1"},
			map[string]float64{"rs1": 0, "rs2": 1, "rs3": 0}, false, ""},
		{"status-dead.json", map[string]string{a: "up", b: "up", k: "dead"},
			map[string]string{"rs1": "up", "rs2": "up", "rs3": "dead"},
			map[string]string{"rs1": "1", "rs2": "1"},
			map[string]float64{"rs1": 0, "rs2": 1}, false, ""},
		{"status-recovered.json", map[string]string{a: "up", b: "up", k: "dead"},
			map[string]string{"rs1": "up", "rs2": "up", "rs3": "dead"},
			map[string]string{"rs1": "2", "rs2": "1"},
			map[string]float64{"rs1": 15, "rs2": 1}, false, ""},
		{"status-joined.json", map[string]string{a: "up", b: "up", k: "dead", j: "up"},
			map[string]string{"rs1": "up", "rs2": "up", "rs3": "dead", j: "up"},
			map[string]string{"rs1": "2", "rs2": "1", j: "0"},
			map[string]float64{"rs1": 15, "rs2": 1}, true, "127.0.0.1:38465 hold(s) no region while another holds 2"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			st, err := parseHBaseClusterStatus(hbaseTestdata(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if got := hbaseMembers(st); !reflect.DeepEqual(got, tt.members) {
				t.Errorf("members = %v, want %v", got, tt.members)
			}
			states, regions := map[string]string{}, map[string]string{}
			for _, ns := range hbaseExternalStatus(c, st) {
				key := ns.Name
				if key == "" {
					key = ns.Addr
				}
				states[key] = ns.State
				if r, ok := ns.Detail["regions"]; ok {
					regions[key] = r
				}
			}
			if !reflect.DeepEqual(states, tt.states) || !reflect.DeepEqual(regions, tt.regions) {
				t.Errorf("status: states %v regions %v; want %v %v", states, regions, tt.states, tt.regions)
			}
			disk := map[string]float64{}
			for n, r := range hbaseResourcesOf(c, st) {
				if !math.IsNaN(r.CPUSeconds) || !math.IsNaN(r.RSSBytes) {
					t.Errorf("%s: CPU and RSS must be NaN (not reported): %+v", n, r)
				}
				disk[n] = r.DiskBytes / (1 << 20)
			}
			if !reflect.DeepEqual(disk, tt.diskMB) {
				t.Errorf("disk (MiB) = %v, want %v", disk, tt.diskMB)
			}
			moving, why := hbaseRemoteMovingOf(nil, st)
			if moving != tt.moving || why != tt.why {
				t.Errorf("moving = %v %q, want %v %q", moving, why, tt.moving, tt.why)
			}
		})
	}
}

// TestHBaseInTransition reads region states from hbase:meta scans.
func TestHBaseInTransition(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want map[string]int
		why  string
	}{
		{"reopening", hbaseTestdata(t, "meta-opening.json"), map[string]int{"OPENING": 1}, "1 region(s) in transition in hbase:meta (OPENING 1)"},
		{"open", hbaseTestdata(t, "meta-open.json"), map[string]int{}, ""},
		{"settled states", []byte(`{"Row":[{"key":"YQ==","Cell":[{"column":"aW5mbzpzdGF0ZQ==","$":"Q0xPU0VE"}]},{"key":"Yg==","Cell":[{"column":"aW5mbzpzdGF0ZQ==","$":"U1BMSVQ="}]}]}`), map[string]int{}, ""},
		{"another column is ignored", []byte(`{"Row":[{"key":"YQ==","Cell":[{"column":"aW5mbzpzbg==","$":"T1BFTklORw=="}]}]}`), map[string]int{}, ""},
	}
	st, err := parseHBaseClusterStatus(hbaseTestdata(t, "status-recovered.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := hbaseInTransition(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("in transition = %v, want %v", got, tt.want)
			}
			if moving, why := hbaseRemoteMovingOf(got, st); moving != (tt.why != "") || why != tt.why {
				t.Errorf("moving = %v %q, want %q", moving, why, tt.why)
			}
		})
	}
	if _, err := hbaseInTransition([]byte("not json")); err == nil {
		t.Error("a malformed scan is not an error")
	}
}

// TestHBaseMetaInTransition: the gateway's 404 to a scan that finds no
// row is "nothing in transition", another error stays one, an answer is
// read as hbaseInTransition reads it.
func TestHBaseMetaInTransition(t *testing.T) {
	for _, tt := range []struct {
		name    string
		body    []byte
		err     error
		want    map[string]int
		wantErr bool
	}{
		{"no row", nil, errors.New("GET /hbase:meta/*/info:state: 404 Not Found"), map[string]int{}, false},
		{"gateway down", nil, errors.New("dial tcp 127.0.0.1:1: connection refused"), nil, true},
		{"reopening", hbaseTestdata(t, "meta-opening.json"), nil, map[string]int{"OPENING": 1}, false},
		{"malformed", []byte("not json"), nil, nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := hbaseMetaInTransition(tt.body, tt.err)
			if (err != nil) != tt.wantErr || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("= %v, %v; want %v (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestHBaseDeadAddr: HBase names a dead server host,port,startcode.
func TestHBaseDeadAddr(t *testing.T) {
	for in, want := range map[string]string{"127.0.0.1,33805,1795861020043": "127.0.0.1:33805", "rs1.example.org,16020,1": "rs1.example.org:16020", "odd": "odd"} {
		if got := hbaseDeadAddr(in); got != want {
			t.Errorf("hbaseDeadAddr(%q) = %q, want %q", in, got, want)
		}
	}
}
