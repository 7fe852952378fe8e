package cassandra

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
	"github.com/fieldbench/fieldbench/convergence"
	"github.com/fieldbench/fieldbench/convergence/convergencetest"
)

// TestCassandra measures convergence on a 2-node cluster at RF 2 (write
// ONE then ALL, read ONE) and traces which replica a read through the
// second node consults.
func TestCassandra(t *testing.T) {
	t.Parallel()
	_, c := clustertest.OwnCluster(t, Name, cluster.Options{Nodes: 2}, 6*time.Minute)
	res := convergencetest.Measure(t, c, convergence.Options{CassandraWrite: "ONE", CassandraRead: "ONE", CassandraRF: 2}, "cassandra 2 nodes RF2 write ONE read ONE")
	if res.Settings["replication_factor"] != "2" || res.Settings["write_consistency"] != "ONE" {
		t.Errorf("settings %v", res.Settings)
	}
	res = convergencetest.Measure(t, c, convergence.Options{CassandraWrite: "ALL", CassandraRead: "ONE", CassandraRF: 2}, "cassandra 2 nodes RF2 write ALL read ONE")
	// Acknowledged at ALL means on both replicas: any read at ONE sees it.
	for _, nr := range res.PerNode {
		if nr.FirstRead != nr.FromAck.Count {
			t.Errorf("write ALL: %s needed more than one read in %d of %d rounds", nr.Node, nr.FromAck.Count-nr.FirstRead, nr.FromAck.Count)
		}
	}

	// Which replica does a read "on cass2" consult? Tracing tells.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	p, err := convergence.Open(ctx, c, convergence.Options{CassandraRF: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cp := p.(*cassProber)
	hosts := map[string]string{}
	for _, n := range c.Nodes {
		hosts[n.Host] = n.Name
	}
	reader := p.Nodes()[1]
	served := map[string]int{}
	const traced = 20
	for i := range traced {
		key := "trace-" + string(rune('a'+i))
		if _, err := p.Write(ctx, key, "x"); err != nil {
			t.Fatal(err)
		}
		srcs, err := cp.readSources(ctx, reader, key)
		if err != nil {
			t.Fatalf("trace of a read through %s: %v", reader, err)
		}
		for _, s := range srcs {
			name, ok := hosts[s]
			if !ok {
				t.Errorf("read served by %q, not a node of the cluster", s)
			}
			served[name]++
		}
	}
	t.Logf("cassandra: %d traced reads through %s (CL ONE) read the data on: %v", traced, reader, served)
}

// TestOpenUnsupported: convergence.Open refuses a Cassandra cluster with
// one running node (no other node to read a write on) as
// cluster.ErrUnsupported, before it dials anything: the row of
// convergence's TestOpenUnsupported that moved here with the
// prober, which that package's tests no longer link.
func TestOpenUnsupported(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		nodes []*cluster.Node
		want  string
	}{
		{"cassandra one node", []*cluster.Node{{Name: "cass1", Host: "127.0.0.1", Port: 1}}, "1 running node"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := convergence.Open(t.Context(), &cluster.Cluster{Engine: Name, Nodes: tt.nodes}, convergence.Options{})
			if err == nil {
				p.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, cluster.ErrUnsupported) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v: want one saying %q, wrapping cluster.ErrUnsupported", err, tt.want)
			}
		})
	}
}
