package mongodb

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/clustertest"
)

// The answers in testdata/external were captured from FerretDB
// 1.24.2 (`fieldbench cluster up mongodb`) with the Go driver's
// RunCommand, as canonical extended JSON; FerretDB answered
// replSetGetStatus with the error kept in ferretdb-replSetGetStatus.error.
// No MongoDB runs here: replSetGetStatus's members, serverStatus's mem and
// extra_info have no captured answer (mongoNotVerified).
func mongoTestdata(t *testing.T, name string, into any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "external", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := bson.UnmarshalExtJSON(b, true, into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func TestMongoExternalAnswers(t *testing.T) {
	var bi mongoBuildInfo
	mongoTestdata(t, "ferretdb-buildInfo.json", &bi)
	var h mongoHello
	mongoTestdata(t, "ferretdb-hello.json", &h)
	var ss mongoServerStatus
	mongoTestdata(t, "ferretdb-serverStatus.json", &ss)
	tests := []struct {
		name      string
		bi        mongoBuildInfo
		wantV     string
		h         mongoHello
		wantRole  string
		ss        mongoServerStatus
		wantNoRes bool
	}{
		{"FerretDB 1.24.2", bi, "7.0.42 (FerretDB 1.24.2)", h, "standalone", ss, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if v, err := mongoVersionString(tt.bi); v != tt.wantV || err != nil {
				t.Errorf("version = %q, %v; want %q", v, err, tt.wantV)
			}
			if r := mongoRole(tt.h); r != tt.wantRole {
				t.Errorf("role = %q, want %q", r, tt.wantRole)
			}
			r := mongoResourcesOf(tt.ss)
			if tt.wantNoRes != (math.IsNaN(r.CPUSeconds) && math.IsNaN(r.RSSBytes) && math.IsNaN(r.DiskBytes)) {
				t.Errorf("resources = %+v; want all NaN: %v", r, tt.wantNoRes)
			}
		})
	}
	if _, err := mongoVersionString(mongoBuildInfo{}); err == nil {
		t.Error("a buildInfo without a version is not an error")
	}
}

// TestExternalMongoFerretDB opens FerretDB, started by the project's
// mongodb engine, as an external MongoDB: version from buildInfo, the
// member up as a standalone (FerretDB does not replicate: its
// replSetGetStatus is CommandNotFound), nothing moving, and no resource
// figure (its serverStatus has neither mem nor extra_info).
func TestExternalMongoFerretDB(t *testing.T) {
	ctx, e, local := clustertest.OwnClusterContext(t, Name, cluster.Options{Nodes: 1}, 15*time.Minute) // a first build included
	n := local.Nodes[0]
	spec := cluster.ExternalSpec{Database: "mongodb", Members: []cluster.ExternalMember{{Name: "m1", Host: n.Host, Port: n.Port}}}
	ext, c, err := cluster.OpenExternal(ctx, spec, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Down(ctx, c)
	if !strings.HasSuffix(c.Version, "(FerretDB "+FerretDBVersion+")") || c.DSN != "mongodb://"+n.Addr()+"/fieldbench" {
		t.Errorf("version %q, DSN %q", c.Version, c.DSN)
	}
	members, err := mongoRemoteMembers(ctx, c)
	if err != nil || len(members) != 1 || members[n.Addr()] != "up" {
		t.Errorf("members = %v, %v; want %s up", members, err, n.Addr())
	}
	sts, err := ext.Status(ctx, c)
	if err != nil || len(sts) != 1 || sts[0].State != "up" || sts[0].Role != "standalone" || sts[0].Name != "m1" {
		t.Errorf("status = %+v, %v", sts, err)
	}
	if moving, why, err := ext.Moving(ctx, c); moving || err != nil {
		t.Errorf("moving = %v %q %v; want nothing moving on a standalone", moving, why, err)
	}
	res, err := ext.Resources(ctx, c)
	if err != nil || len(res) != 1 || !math.IsNaN(res["m1"].RSSBytes) || !math.IsNaN(res["m1"].CPUSeconds) {
		t.Errorf("resources = %+v, %v; want m1's figures NaN (FerretDB reports none)", res, err)
	}
	// Stopped: the member no longer answers.
	if err := e.Down(ctx, local); err != nil {
		t.Fatal(err)
	}
	local = nil
	qctx, qcancel := context.WithTimeout(ctx, 20*time.Second)
	defer qcancel()
	if sts, _ := ext.Status(qctx, c); len(sts) != 1 || sts[0].State != "unreachable" {
		t.Errorf("status of a stopped member = %+v, want unreachable", sts)
	}
}
