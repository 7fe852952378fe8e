package mongodb

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/budget"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

func TestParseMongoOpts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		opts    cluster.Options
		want    string
		wantErr string
	}{
		{cluster.Options{Nodes: 1}, "WARN", ""},
		{cluster.Options{Nodes: 0}, "WARN", ""},
		{cluster.Options{Nodes: 1, Extra: map[string]string{"log-level": "debug"}}, "DEBUG", ""},
		{cluster.Options{Nodes: 1, Extra: map[string]string{"log-level": "loud"}}, "", "want DEBUG"},
		{cluster.Options{Nodes: 1, Extra: map[string]string{"replicas": "1"}}, "", "unknown option"},
		{cluster.Options{Nodes: 3}, "", "no replication"},
	}
	for _, tt := range tests {
		got, err := parseMongoOpts(tt.opts)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseMongoOpts(%+v) error %v, want %q", tt.opts, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parseMongoOpts(%+v) = %q, %v; want %q", tt.opts, got, err, tt.want)
		}
	}
	if _, err := parseMongoOpts(cluster.Options{Nodes: 2}); !errors.Is(err, cluster.ErrUnsupported) {
		t.Errorf("2 nodes: %v does not wrap ErrUnsupported", err)
	}
}

// TestMongoEngine starts FerretDB through the engine, checks that the
// cluster and its status name FerretDB and its version (never MongoDB),
// that a document written before a SIGKILL is there after the restart
// (FerretDB acknowledges an insert once SQLite committed it), and stops it.
func TestMongoEngine(t *testing.T) {
	ctx, e, c := clustertest.OwnClusterContext(t, Name, cluster.Options{Nodes: 1}, 15*time.Minute) // a first build included
	if c.Version != "FerretDB "+FerretDBVersion || !strings.HasPrefix(c.DSN, "mongodb://127.0.0.1:") || c.Nodes[0].Host != cluster.Loopback {
		t.Fatalf("cluster = version %q, DSN %q, host %q", c.Version, c.DSN, c.Nodes[0].Host)
	}
	st, err := e.Status(ctx, c)
	if err != nil || len(st) != 1 || st[0].State != "up" || st[0].Detail["server"] != "FerretDB" || st[0].Detail["version"] != FerretDBVersion {
		t.Fatalf("Status = %+v, %v", st, err)
	}
	cl, err := mongo.Connect(options.Client().ApplyURI(c.DSN))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Disconnect(context.Background())
	coll := cl.Database("fieldbench").Collection("kill_test")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "k"}, {Key: "v", Value: 7}}); err != nil {
		t.Fatal(err)
	}
	k := e.(cluster.Killer)
	if err := k.Kill(ctx, c, "ferretdb1"); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.Status(ctx, c); st[0].State != "stopped" {
		t.Errorf("after Kill, state %q", st[0].State)
	}
	if err := k.Restart(ctx, c, "ferretdb1"); err != nil {
		t.Fatal(err)
	}
	var got struct {
		V int `bson:"v"`
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: "k"}}).Decode(&got); err != nil || got.V != 7 {
		t.Errorf("after kill and restart: %+v, %v", got, err)
	}
	if err := e.Down(ctx, c); err != nil {
		t.Fatal(err)
	}
	if cluster.Alive(c.Nodes[0].PID) {
		t.Error("FerretDB still running after Down")
	}
}

// TestMongoBudget: `cluster up mongodb --budget cpu=0.5,memory=256MiB`
// holds FerretDB in a control group of that size from its start, a kill
// and restart keep it there (the same group, the new PID in it), status
// says the budget and what the node used against it, and the teardown
// leaves no group behind.
func TestMongoBudget(t *testing.T) {
	plan, err := budget.ParsePlan([]string{"cpu=0.5,memory=256MiB"})
	if err != nil {
		t.Fatal(err)
	}
	clustertest.SkipWithoutBudgets(t, plan.Node)
	ctx, e, c := clustertest.OwnClusterContext(t, Name, cluster.Options{Nodes: 1, Budget: plan}, 3*time.Minute)
	groups := clustertest.CheckHeld(t, c)
	n := c.Nodes[0]
	before := n.Cgroup.Dirs
	k := e.(cluster.Killer)
	if err := k.Kill(ctx, c, n.Name); err != nil {
		t.Fatal(err)
	}
	if err := k.Restart(ctx, c, n.Name); err != nil {
		t.Fatal(err)
	}
	clustertest.CheckHeld(t, c)
	if !slices.Equal(n.Cgroup.Dirs, before) {
		t.Errorf("after a restart the node is in %v, before in %v", n.Cgroup.Dirs, before)
	}
	st, err := e.Status(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	cluster.AddBudgets(c, st)
	if d := st[0].Detail; d["budget"] != "cpu=0.5,memory=256MiB" || !strings.Contains(d["cpu_throttled"], "periods") || !strings.HasSuffix(d["memory_used"], "of 256MiB") {
		t.Errorf("status detail %v: want the budget and its use", d)
	}
	if len(cluster.GroupsLeft(c)) == 0 {
		t.Error("GroupsLeft finds no group of a cluster that runs in one")
	}
	if err := cluster.Teardown(ctx, c); err != nil {
		t.Fatal(err)
	}
	clustertest.CheckRemoved(t, groups)
	if left := cluster.GroupsLeft(c); len(left) > 0 {
		t.Errorf("groups left after the teardown: %v", left)
	}
}
