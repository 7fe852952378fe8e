package cli_test

import (
	"context"
	"net"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	mongoadapter "github.com/fieldbench/fieldbench/db/mongodb"
)

// TestMongoDBHostsKillRestart: `cluster up mongodb --network hosts` puts
// FerretDB (the engine's one node) on a host of its own (the standard
// port 27017 of 198.18.0.1); the adapter, dialling through load host
// load1 as an experiment's load does, writes a document and FerretDB
// sees the load host's address as its client; the machine's own
// namespace does not reach the node; killed and restarted on its host,
// the node still has the document; status names the address, FerretDB
// and the host's counters; down leaves no namespace.
func TestMongoDBHostsKillRestart(t *testing.T) {
	const dsn = "mongodb://198.18.0.1:27017/fieldbench"
	h := upOnHosts(t, dsn, "mongodb")
	// Two minutes for the test's own requests.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The adapter, as an experiment's in-process load uses it: the
	// driver dials through fieldbench's default dial, which an experiment
	// on hosts points at the load host.
	load := h.dialFromLoad1(ctx)
	db, err := mongoadapter.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("the adapter with the load host's dial: %v", err)
	}
	defer db.Close()
	var me struct {
		You string `bson:"you"`
	}
	if err := db.Database().Client().Database("admin").RunCommand(ctx, bson.D{{Key: "whatsmyuri", Value: 1}}).Decode(&me); err != nil {
		t.Fatal(err)
	}
	if host, _, _ := net.SplitHostPort(me.You); host != load.Addr.String() {
		t.Errorf("FerretDB sees its client as %q, want the load host %s", me.You, load.Addr)
	}
	coll := db.Database().Collection("hosts_check")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "k1"}, {Key: "v", Value: "written from load1"}}); err != nil {
		t.Fatal(err)
	}

	// From the machine's own namespace the address reaches no FerretDB
	// (here a gateway outside may accept the connection: no handshake).
	if root, err := mongo.Connect(options.Client().ApplyURI("mongodb://198.18.0.1:27017/?directConnection=true&serverSelectionTimeoutMS=2000")); err == nil {
		if err := root.Ping(ctx, nil); err == nil {
			t.Error("FerretDB answered a ping from the root namespace")
		}
		_ = root.Disconnect(context.Background())
	}

	h.killRestart("ferretdb1")
	// The driver redials the restarted node through the load host.
	var doc struct {
		V string `bson:"v"`
	}
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: "k1"}}).Decode(&doc); err != nil || doc.V != "written from load1" {
		t.Errorf("after kill and restart: %q, %v: want the document written before", doc.V, err)
	}

	h.status("FerretDB", "198.18.0.1:27017  standalone  up", "server=FerretDB")
	db.Close()
	h.down()
}
