package experiment

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/fieldbench/fieldbench/adapter/netdial"
	"github.com/fieldbench/fieldbench/cluster/vnet"
	"github.com/fieldbench/fieldbench/job"
)

// loadHostName is the load host of an experiment on hosts: load1,
// 198.18.1.1, on the cluster's bridge.
const loadHostName = "load1"

// onLoadHost makes the experiment's load run from a load host of the
// cluster's virtual network: it adds the host, and until leave makes
// every connection the database drivers open by default (netdial) to an
// address of the network start inside the host's namespace, so the load
// reaches the nodes over the bridge, through the host's eth0, as from a
// machine of its own (its counters are the load's traffic). The workload
// still runs in this process, where the timeline, probes and audit watch
// it. Addresses outside the network are dialled as before: from the load
// host they would be unreachable. Where delay or loss is asked for, it
// also checks here, before any load, that the kernel has netem.
func (x *expRun) onLoadHost(ctx context.Context) (leave func(), err error) {
	vn := vnet.ForDir(x.cl.Dir)
	h, err := vn.AddHost(ctx, loadHostName, vnet.LoadAddr(1))
	if err != nil {
		return nil, fmt.Errorf("load host: %w", err)
	}
	remove := func() {
		rctx, cancel := job.Detached(ctx, 30*time.Second)
		defer cancel()
		if err := vn.RemoveHost(rctx, h.Name); err != nil {
			fmt.Fprintf(x.stderr, "fieldbench: remove load host %s: %v\n", h.Name, err)
		}
	}
	if x.sc.needsNetem() {
		err := vnet.Netem(ctx, h.NS, "delay", "1ms")
		if err == nil {
			err = vn.Unlimit(ctx, h.Name)
		}
		if err != nil {
			remove()
			return nil, fmt.Errorf("the timeline delays or drops packets: %w", err)
		}
	}
	x.loadHost = &h
	restore := netdial.Set(func(ctx context.Context, network, addr string) (net.Conn, error) {
		if ap, err := netip.ParseAddrPort(addr); err == nil && vnet.Block.Contains(ap.Addr()) {
			return vnet.Dial(ctx, h.NS, addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	})
	fmt.Fprintf(x.stderr, "load from load host %s (%s, network namespace %s)\n", h.Name, h.Addr, h.NS)
	return func() {
		restore()
		remove()
	}, nil
}
