package experiment

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/rs/zerolog"

	"github.com/fieldbench/fieldbench/cluster/vnet"
)

// linkDelays is the fallback for the delay action where the kernel has no
// netem: every connection the load opens to a node's address runs through
// toxiproxy's toxic machinery (one toxiproxy.Proxy per node, used only for
// its ToxicCollection), and a delay adds toxiproxy's latency toxic to the
// node's collection, which toxiproxy applies to the connections already
// open as well as to new ones.
//
// Why not a toxiproxy.Proxy as toxiproxy runs it: its listener dials the
// upstream itself with net.Dial, in this process's (root) namespace, where
// the nodes' 198.18.x.x addresses are unreachable. So the connection pair
// is built here: the upstream end dialled inside the load host's namespace
// (vnet.Dial), the driver's end one side of a net.Pipe, and
// ToxicCollection.StartLink joins them in both directions, as
// toxiproxy's own listener does after its accept.
//
// Only the load generator's connections to the nodes pass here: traffic
// between nodes (replication, cluster bus) is not delayed, unlike netem on
// the node's eth0. The latency is added in this process, before the
// driver reads a reply, so it is counted in the measured latency exactly
// as a slow link's would be.
type linkDelays struct {
	server  *toxiproxy.ApiServer
	mu      sync.Mutex
	proxies map[netip.Addr]*toxiproxy.Proxy // by the node's address
	names   map[string]netip.Addr           // node name -> address
	seq     atomic.Uint64
}

// delayToxic is the name of the latency toxic in each node's collection.
const delayToxic = "fieldbench_delay"

// newLinkDelays makes an empty toxic collection for each node, by name
// and host address (nodes whose address is not an IP are skipped: they
// are not on the virtual network and the load does not reach them here).
func newLinkDelays(nodes map[string]string) *linkDelays {
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	d := &linkDelays{server: srv, proxies: map[netip.Addr]*toxiproxy.Proxy{}, names: map[string]netip.Addr{}}
	for name, host := range nodes {
		ad, err := netip.ParseAddr(host)
		if err != nil {
			continue
		}
		if _, ok := d.proxies[ad]; !ok {
			d.proxies[ad] = toxiproxy.NewProxy(srv, name, "", host)
		}
		d.names[name] = ad
	}
	return d
}

// dial opens a TCP connection to addr from namespace ns; to a node's
// address it returns the driver's end of a pipe whose other end toxiproxy
// links to the real connection, through the node's toxics.
func (d *linkDelays) dial(ctx context.Context, ns, addr string) (net.Conn, error) {
	up, err := vnet.Dial(ctx, ns, addr)
	if err != nil {
		return nil, err
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return up, nil
	}
	d.mu.Lock()
	p := d.proxies[ap.Addr()]
	d.mu.Unlock()
	if p == nil {
		return up, nil
	}
	client, inner := net.Pipe()
	name := fmt.Sprintf("c%d", d.seq.Add(1))
	p.Toxics.StartLink(d.server, name+"upstream", inner, up, stream.Upstream)
	p.Toxics.StartLink(d.server, name+"downstream", up, inner, stream.Downstream)
	return &pipeConn{Conn: client, local: up.LocalAddr(), remote: up.RemoteAddr()}, nil
}

// pipeConn reports the real connection's addresses, not net.Pipe's.
type pipeConn struct {
	net.Conn
	local, remote net.Addr
}

func (c *pipeConn) LocalAddr() net.Addr  { return c.local }
func (c *pipeConn) RemoteAddr() net.Addr { return c.remote }

// delay puts a latency toxic of lat on what node sends to the load
// generator (toxiproxy's downstream): each reply waits lat, one added lat
// per round trip, as netem delay on the node's eth0 adds. A delay already
// in force is replaced.
func (d *linkDelays) delay(node string, lat time.Duration) error {
	p, err := d.proxy(node)
	if err != nil {
		return err
	}
	if lat < time.Millisecond {
		return fmt.Errorf("delay %s: toxiproxy's latency toxic counts whole milliseconds, at least 1ms", lat)
	}
	if p.Toxics.GetToxic(delayToxic) != nil {
		if err := p.Toxics.RemoveToxic(context.Background(), delayToxic); err != nil {
			return fmt.Errorf("delay %s: remove the previous latency toxic: %w", node, err)
		}
	}
	body := fmt.Sprintf(`{"name":%q,"type":"latency","stream":"downstream","toxicity":1,"attributes":{"latency":%d}}`,
		delayToxic, lat.Milliseconds())
	if _, err := p.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
		return fmt.Errorf("delay %s: add toxiproxy's latency toxic: %w", node, err)
	}
	return nil
}

// undelay removes node's latency toxic, if it has one.
func (d *linkDelays) undelay(node string) error {
	p, err := d.proxy(node)
	if err != nil {
		return err
	}
	if p.Toxics.GetToxic(delayToxic) == nil {
		return nil
	}
	if err := p.Toxics.RemoveToxic(context.Background(), delayToxic); err != nil && !errors.Is(err, toxiproxy.ErrToxicNotFound) {
		return fmt.Errorf("undelay %s: %w", node, err)
	}
	return nil
}

func (d *linkDelays) proxy(node string) (*toxiproxy.Proxy, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ad, ok := d.names[node]
	if !ok {
		return nil, fmt.Errorf("%s: not a node on the virtual network, the load generator's connections to it do not pass through a delaying proxy", node)
	}
	return d.proxies[ad], nil
}

// proxyMechanism is the delay mechanism recorded without netem.
const proxyMechanism = "toxiproxy latency toxic on what the node sends to the load host, in the load generator (the load's connections only; node-to-node traffic not delayed; netem absent from this kernel)"
