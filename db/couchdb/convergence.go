package couchdb

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/fieldbench/fieldbench/adapter/netdial"
	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/convergence"
	"github.com/fieldbench/fieldbench/db/couchdb/couchapi"
)

func init() {
	convergence.Register(Name, func(ctx context.Context, c *cluster.Cluster, _ convergence.Options) (convergence.Prober, error) {
		return openCouchDB(ctx, c)
	})
}

// couchProber writes a document through the first running node of a
// couchdb cluster (pouchdb-server nodes, each pulling every other's
// databases through continuous replication) and GETs it from every node
// directly. Replication is asynchronous and multi-master: a write is
// acknowledged by one node, and each other node's pull brings it over.
type couchProber struct {
	writer   string
	names    []string
	clients  map[string]*couchapi.Client
	settings map[string]string
}

// couchDB is the database the prober writes to (replicated like the
// adapter's, under the same _replicator scheme).
const couchDB = convergence.Table

func openCouchDB(ctx context.Context, c *cluster.Cluster) (convergence.Prober, error) {
	nodes, err := convergence.Running(c)
	if err != nil {
		return nil, err
	}
	// The requests dial through fieldbench's default dial: during an
	// experiment on hosts, from its load host, the only place the nodes'
	// addresses are reachable from.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = netdial.Default()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: tr}
	p := &couchProber{clients: map[string]*couchapi.Client{}, settings: map[string]string{"engine": "couchdb"}}
	var all []*couchapi.Client
	for _, n := range nodes {
		cl := &couchapi.Client{Base: "http://" + n.Addr(), HTTP: hc}
		p.clients[n.Name] = cl
		p.names = append(p.names, n.Name)
		all = append(all, cl)
	}
	p.writer = nodes[0].Name
	w, err := all[0].Welcome(ctx)
	if err != nil {
		return nil, fmt.Errorf("convergence: couchdb %s: %w", p.writer, err)
	}
	p.settings["server"] = w.Server + " " + w.Version
	p.settings["replication"] = "continuous pull by every node from every other (_replicator), asynchronous, multi-master"
	p.settings["writer"] = p.writer
	if err := couchapi.CreateReplicated(ctx, all, couchDB, false); err != nil {
		return nil, fmt.Errorf("convergence: couchdb: %w", err)
	}
	return p, nil
}

// Nodes implements Prober.
func (p *couchProber) Nodes() []string { return p.names }

// Write implements Prober: one PUT of a new document on the writer.
func (p *couchProber) Write(ctx context.Context, key, value string) (string, error) {
	err := p.clients[p.writer].Do(ctx, http.MethodPut, couchapi.Path(couchDB, key), nil, map[string]string{"v": value}, nil)
	if err != nil {
		return p.writer, fmt.Errorf("convergence: couchdb write: %w", err)
	}
	return p.writer, nil
}

// Read implements Prober: GET from node alone; 404 is "not yet".
func (p *couchProber) Read(ctx context.Context, node, key string) (string, bool, error) {
	cl, ok := p.clients[node]
	if !ok {
		return "", false, fmt.Errorf("convergence: couchdb: no node %q", node)
	}
	var d struct {
		V string `json:"v"`
	}
	err := cl.Do(ctx, http.MethodGet, couchapi.Path(couchDB, key), nil, nil, &d)
	if couchapi.IsNotFound(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return d.V, true, nil
}

// Settings implements Prober.
func (p *couchProber) Settings() map[string]string { return p.settings }

// Close implements Prober.
func (p *couchProber) Close() error {
	for _, c := range p.clients {
		c.HTTP.CloseIdleConnections()
		break // one shared http.Client
	}
	return nil
}
