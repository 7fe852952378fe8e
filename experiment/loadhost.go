package experiment

import (
	"context"
	"errors"
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
// also checks here, before any load, that the kernel has netem; where it
// has not, a delay runs through toxiproxy in the dial (linkDelays), put
// in place before the first connection so that a delay later in the
// timeline reaches the drivers' pooled connections too.
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
		delays, err := x.netemOrProxy(ctx, vn, h)
		if err != nil {
			remove()
			return nil, fmt.Errorf("the timeline delays or drops packets: %w", err)
		}
		x.delays = delays
	}
	x.loadHost = &h
	restore := netdial.Set(func(ctx context.Context, network, addr string) (net.Conn, error) {
		if ap, err := netip.ParseAddrPort(addr); err == nil && vnet.Block.Contains(ap.Addr()) {
			if d := x.delays; d != nil {
				return d.dial(ctx, h.NS, addr)
			}
			return vnet.Dial(ctx, h.NS, addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	})
	fmt.Fprintf(x.stderr, "load from load host %s (%s, network namespace %s)\n", h.Name, h.Addr, h.NS)
	return func() {
		restore()
		remove()
		// A limit on the load host went with its namespace: the undo
		// of what is left must not look for it (its partners' are
		// still undone).
		x.mu.Lock()
		delete(x.faults.limited, h.Name)
		delete(x.faults.between, h.Name)
		x.mu.Unlock()
	}, nil
}

// netemOrProxy checks that the kernel has netem (a 1 ms netem qdisc on the
// load host's eth0, removed at once) and returns nil where it has; where
// it has not, the linkDelays the delay actions will use, or, if the
// timeline also drops packets, an error: loss has no proxy fallback.
//
// Why loss has none: a proxy sits in the TCP byte stream, after the
// kernel has retransmitted what the network lost, so it cannot drop a
// packet; toxiproxy's toxics that look nearest (timeout: a connection
// stalls then closes; reset_peer: it is reset; slicer: writes split) are
// other faults, and recording one of them as "loss" would be a lie.
func (x *expRun) netemOrProxy(ctx context.Context, vn vnet.Net, h vnet.Host) (*linkDelays, error) {
	err := vnet.Netem(ctx, h.NS, "delay", "1ms")
	if err == nil {
		return nil, vn.Unlimit(ctx, h.Name)
	}
	if !errors.Is(err, vnet.ErrNoNetem) {
		return nil, err
	}
	for _, a := range x.sc.Timeline {
		if a.Do == "loss" {
			return nil, fmt.Errorf("loss: %w; loss has no fallback (a proxy in the TCP stream cannot drop packets: TCP has already retransmitted them), see docs/faults.md", err)
		}
	}
	nodes := map[string]string{}
	for _, n := range x.cl.Nodes {
		if n.Netns != "" {
			nodes[n.Name] = n.Host
		}
	}
	fmt.Fprintf(x.stderr, "no netem in this kernel: delay runs as toxiproxy's latency toxic on the load's connections to the nodes\n")
	return newLinkDelays(nodes), nil
}
