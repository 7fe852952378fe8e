package cluster

import (
	"os"
	"testing"
)

func TestMovingFrom(t *testing.T) {
	self := os.Getpid() // a PID that is alive
	c := &Cluster{Nodes: []*Node{
		{Name: "a", PID: self},
		{Name: "b", PID: self},
		{Name: "c", PID: self, Stopped: true}, // killed on purpose: not movement
	}}
	why := func(st NodeStatus) string { return st.Detail["w"] }
	cases := []struct {
		name   string
		sts    []NodeStatus
		moving bool
		detail string
	}{
		{"all settled", []NodeStatus{{Name: "a"}, {Name: "b"}}, false, ""},
		{"one moving", []NodeStatus{{Name: "a"}, {Name: "b", Detail: map[string]string{"w": "joining"}}}, true, "b: joining"},
		{"two moving", []NodeStatus{{Name: "a", Detail: map[string]string{"w": "x"}}, {Name: "b", Detail: map[string]string{"w": "y"}}}, true, "a: x; b: y"},
		{"stopped node ignored", []NodeStatus{{Name: "a"}, {Name: "c", Detail: map[string]string{"w": "down"}}}, false, ""},
		{"unknown node ignored", []NodeStatus{{Name: "zz", Detail: map[string]string{"w": "?"}}}, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, d := MovingFrom(c, tc.sts, why)
			if m != tc.moving || d != tc.detail {
				t.Errorf("movingFrom = %v %q, want %v %q", m, d, tc.moving, tc.detail)
			}
		})
	}
}
