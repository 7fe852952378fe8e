package experiment

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/cluster/vnet"
)

// TestSharedLinkFault: the limit action with link: shared, on a real
// network of hosts (no servers: the fault acts on hosts alone), puts the
// hosts of nodes behind one shared link and says so in its event's
// detail (the hosts in neither group named on from's side); a limit of
// one of its hosts between other groups, and a second shared link of
// other groups, are refused; the same groups per host
// replace the link by htb; an unlimit of one host undoes the whole link.
// Nothing is left at the end.
func TestSharedLinkFault(t *testing.T) {
	if err := vnet.Check(); err != nil {
		t.Skipf("needs network namespaces: %v", err)
	}
	if _, err := exec.LookPath("tc"); err != nil {
		t.Skipf("tc not installed: %v", err)
	}
	ctx := context.Background()
	dir := t.TempDir()
	vn := vnet.ForDir(dir)
	if err := vn.Create(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = vnet.ForDir(dir).Destroy(context.Background()) })
	cl := &cluster.Cluster{Dir: dir}
	for i, name := range []string{"n1", "n2", "n3", "n4"} {
		h, err := vn.AddHost(ctx, name, vnet.NodeAddr(i+1))
		if err != nil {
			t.Fatal(err)
		}
		cl.Nodes = append(cl.Nodes, &cluster.Node{Name: name, Host: h.Addr.String(), Netns: h.NS})
	}
	lh, err := vn.AddHost(ctx, "load1", vnet.LoadAddr(1))
	if err != nil {
		t.Fatal(err)
	}
	x := &expRun{cl: cl, loadHost: &lh, faults: newFaultState()}
	apply := func(a Action) (string, error) {
		t.Helper()
		var nodes []*cluster.Node
		names := a.Nodes
		if a.Do == "unlimit" {
			names = x.faults.withLinks(names)
		}
		for _, name := range names {
			n, err := x.faultHost(name, a)
			if err != nil {
				t.Fatal(err)
			}
			nodes = append(nodes, n)
		}
		return x.applyFault(ctx, a, nodes)
	}
	ports := func() string {
		t.Helper()
		p, ok, err := vn.SitePorts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return "(no link)"
		}
		return strings.Join(p, ",")
	}
	shared := Action{Do: "limit", Nodes: []string{"n1", "load1"}, From: []string{"n2"}, Rate: "10mbit", Link: LinkShared}
	detail, err := apply(shared)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ONE shared link", "n3, n4, in neither group, on the side of n2", "veth pair"} {
		if !strings.Contains(detail, want) {
			t.Errorf("detail %q lacks %q", detail, want)
		}
	}
	if got := ports(); got != "vload1,vn1" {
		t.Errorf("behind the link: %s, want vload1,vn1", got)
	}
	if _, err := apply(Action{Do: "limit", Nodes: []string{"n3"}, From: []string{"n2"}, Rate: "1mbit", Link: LinkShared}); err == nil || !strings.Contains(err.Error(), "unlimit it first") {
		t.Errorf("a limit of n2, held by the link, between other groups: %v", err)
	}
	if _, err := apply(Action{Do: "limit", Nodes: []string{"n3"}, From: []string{"n4"}, Rate: "1mbit", Link: LinkShared}); err == nil || !strings.Contains(err.Error(), "one per network") {
		t.Errorf("a second shared link, of other groups: %v", err)
	}
	perHost := shared
	perHost.Link = ""
	if detail, err := apply(perHost); err != nil || !strings.Contains(detail, "per host") {
		t.Fatalf("the same groups per host: %q, %v", detail, err)
	}
	if got := ports(); got != "(no link)" {
		t.Errorf("per host, the shared link is still there: %s", got)
	}
	if _, err := apply(shared); err != nil {
		t.Fatal(err)
	}
	if out, _ := exec.Command("tc", "-n", lh.NS, "qdisc", "show", "dev", vnet.HostIf).CombinedOutput(); strings.Contains(string(out), "htb") {
		t.Errorf("the per-host htb is left under the shared link:\n%s", out)
	}
	detail, err = apply(Action{Do: "unlimit", Nodes: []string{"n2"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(detail, "shared link undone") || !strings.Contains(detail, "load1, n1, n2") {
		t.Errorf("unlimit's detail: %q", detail)
	}
	if got := ports(); got != "(no link)" {
		t.Errorf("after unlimit: %s", got)
	}
	if x.faults.sharedLink != nil || len(x.faults.limited) > 0 || len(x.faults.between) > 0 {
		t.Errorf("fault state left: %+v", x.faults)
	}
}
