package experiment

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/result"
)

// expSession is the experiment's side of one workload run: the timeline and
// probes writing into the run's session, request-set stability tracking
// (wiki) and the ledger of posts (microblog audit).
type expSession struct {
	x      *expRun
	s      *job.Session
	tl     *Timeline
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// runCtx is the run's own context, cancelled by an interrupt: post-run
	// work that changes the cluster (the audit's restarts) asks it first.
	runCtx context.Context
	tlErr  error

	stop atomic.Bool // a stop action fired

	mu        sync.Mutex
	means     []float64 // request-set times, in order
	ends      []float64 // their end, seconds since the run started
	baseline  float64
	haveBase  bool
	joinAt    float64 // -1 until a join starts
	settledAt float64 // -1 until data stopped moving after the join
	stableIdx int     // -1 until stable again

	ledger *Ledger
	down   []string // nodes the timeline killed or stopped and did not restart (under mu)
}

// begin starts the timeline and probes of a run whose session just started.
// The caller must call end when the load has stopped.
func (x *expRun) begin(ctx context.Context, s *job.Session) *expSession {
	es := &expSession{x: x, s: s, runCtx: ctx, joinAt: -1, settledAt: -1, stableIdx: -1}
	x.runDirs = append(x.runDirs, s.Dir())
	if x.formation > 0 {
		s.SetExtra("cluster_formation_seconds", x.formation.Seconds())
	}
	if x.sc.Audit {
		es.ledger = NewLedger()
	}
	ctx, es.cancel = context.WithCancel(context.WithoutCancel(ctx))
	_ = s.Event("experiment", x.sc.Name)
	if x.cl != nil && x.sc.ProbeEvery > 0 && x.cl.OnHosts() {
		es.wg.Add(1)
		go func() {
			defer es.wg.Done()
			es.probeNet(ctx)
		}()
	}
	if x.cl != nil && x.sc.ProbeEvery > 0 {
		es.wg.Add(2)
		go func() {
			defer es.wg.Done()
			es.probe(ctx)
		}()
		go func() {
			defer es.wg.Done()
			es.probeRemote(ctx)
		}()
		if fromDB, unavailable, source := x.remoteProbes(); len(unavailable) > 0 || len(fromDB) > 0 {
			if source != "" {
				source = " (" + source + ")"
			}
			_ = s.Event("probes", fmt.Sprintf("nodes fieldbench did not start: %s as the database reports them%s; not available (no /proc of those nodes here): %s",
				orNone(fromDB), source, orNone(unavailable)))
		}
	}
	if len(x.sc.Timeline) > 0 {
		es.tl = NewTimeline(x.sc.Timeline, es.do)
		es.tl.Signal("start")
		es.wg.Add(1)
		go func() {
			defer es.wg.Done()
			err := es.tl.Run(ctx, s.Started())
			switch {
			case err != nil && ctx.Err() != nil:
				// The load ended while an action was under way.
				fmt.Fprintf(x.stderr, "\nfieldbench: warning: the load ended before the timeline finished: %v\n", firstLine(err.Error()))
				_ = s.Event("timeline-unfinished", err.Error())
			case err != nil:
				es.tlErr = err
				fmt.Fprintf(x.stderr, "\nfieldbench: %v\n", err)
				_ = s.Event("timeline-failed", err.Error())
				// The experiment asked for will not happen: the load stops
				// now rather than run to its end (a crash experiment runs
				// for a long duration and stops on "restarted").
				es.stop.Store(true)
				s.StopLoad()
			}
		}()
	}
	return es
}

// end stops the timeline and probes and reports a failed action. Actions
// that never fired (the load ended first) are recorded as such.
func (es *expSession) end() error {
	if es == nil {
		return nil
	}
	if es.tl != nil && es.tl.Pending() {
		fmt.Fprintln(es.x.stderr, "\nfieldbench: warning: the load ended before every timeline action fired (make the load longer)")
		_ = es.s.Event("timeline-unfinished", "the load ended before every action fired")
	}
	es.mu.Lock()
	neverStable := es.joinAt >= 0 && es.stableIdx < 0 && len(es.means) > 0
	es.mu.Unlock()
	if neverStable {
		_ = es.s.Event("never-stable", fmt.Sprintf("the %s detector found no stable window of %d request sets after the join, in %d request sets", es.x.sc.Stability.Detector, es.x.sc.Stability.Window, len(es.means)))
	}
	es.cancel()
	es.wg.Wait()
	if es.x.cl != nil {
		// What the timeline left broken is mended before the audit reads
		// back (and before the cluster stops): said as an event.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		did, err := es.x.undoFaults(ctx)
		cancel()
		if did != "" {
			_ = es.s.Event("faults-undone", did)
		}
		if err != nil {
			_ = es.s.Event("faults-undo-failed", err.Error())
		}
	}
	if es.x.cl != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		es.ownership(ctx)
		cancel()
	}
	if es.tlErr != nil {
		return es.tlErr
	}
	if es.tl != nil {
		// An action that never fired, or was cut short, is not a result
		// the scenario asked for: the experiment fails (exit 1) once what
		// was measured is saved.
		if err := es.tl.Unfinished(); err != nil {
			return fmt.Errorf("experiment %s: %w", es.x.sc.Name, err)
		}
	}
	return nil
}

// do performs one timeline action.
func (es *expSession) do(ctx context.Context, a Action) error {
	switch a.Do {
	case "mark":
		return es.s.Event("mark", a.Note)
	case "stop":
		es.stop.Store(true)
		es.s.StopLoad()
		return es.s.Event("stop-load", a.Note)
	case "add":
		return es.join(ctx, a)
	case "partition", "heal", "limit", "unlimit", "pause", "resume", "delay", "loss":
		return es.fault(ctx, a)
	case "kill", "stop-node", "restart", "remove":
		names, err := es.pick(a)
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := es.nodeAction(ctx, a.Do, n); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown action %q", a.Do)
}

// nodeAction kills, restarts or removes one node, with events around it.
func (es *expSession) nodeAction(ctx context.Context, do, node string) error {
	x := es.x
	fmt.Fprintf(x.stderr, "\n%s %s at %.1fs\n", do, node, es.s.Since())
	if err := es.s.Event(do, node); err != nil {
		return err
	}
	t0 := time.Now()
	x.mu.Lock()
	var err error
	switch do {
	case "kill", "restart":
		k, ok := x.eng.(cluster.Killer)
		if !ok {
			err = fmt.Errorf("%s cannot kill or restart nodes: %w", x.cl.Engine, cluster.ErrUnsupported)
		} else if do == "kill" {
			err = k.Kill(ctx, x.cl, node)
		} else {
			err = k.Restart(ctx, x.cl, node)
		}
	case "stop-node":
		if s, ok := x.eng.(cluster.NodeStopper); ok {
			err = s.StopNode(ctx, x.cl, node)
		} else {
			err = cluster.StopNode(x.cl, node, time.Minute)
		}
	case "remove":
		r, ok := x.eng.(cluster.Remover)
		if !ok {
			err = fmt.Errorf("%s cannot remove nodes: %w", x.cl.Engine, cluster.ErrUnsupported)
		} else {
			err = r.Remove(ctx, x.cl, node)
		}
	}
	if err == nil {
		err = x.cl.Save()
	}
	x.mu.Unlock()
	if err != nil {
		return err
	}
	es.mu.Lock()
	switch do {
	case "kill", "stop-node":
		if !slices.Contains(es.down, node) {
			es.down = append(es.down, node)
		}
	case "restart", "remove":
		es.down = slices.DeleteFunc(es.down, func(n string) bool { return n == node })
	}
	es.mu.Unlock()
	if do != "kill" {
		err := es.s.Event(do+"-done", fmt.Sprintf("%s in %.1fs", node, time.Since(t0).Seconds()))
		if do == "restart" {
			es.tl.Signal("restarted")
		}
		return err
	}
	return nil
}

// pick resolves an action's nodes: the names given, or Count nodes. Kill
// and remove take the last running nodes (never the first: it is the
// clients' contact point); restart takes the most recently stopped ones.
func (es *expSession) pick(a Action) ([]string, error) {
	x := es.x
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(a.Nodes) > 0 {
		for _, n := range a.Nodes {
			if _, err := x.cl.Node(n); err != nil {
				return nil, err
			}
		}
		return a.Nodes, nil
	}
	var cands []string
	nodes := x.cl.Nodes
	for i := len(nodes) - 1; i >= 0; i-- {
		n := nodes[i]
		running := n.Running()
		if n.Role == "decommissioned" {
			continue // removed from the cluster for good
		}
		switch {
		case a.Do == "restart" && !running:
			cands = append(cands, n.Name)
		case a.Do != "restart" && running && i > 0:
			cands = append(cands, n.Name)
		}
	}
	if len(cands) < a.Count {
		return nil, fmt.Errorf("%s %d node(s): only %d candidate(s) (%s)", a.Do, a.Count, len(cands), strings.Join(cands, ", "))
	}
	return cands[:a.Count], nil
}

// join adds a.Count nodes one after the other under load, then watches the
// database until it reports no data moving (the "settled" condition).
func (es *expSession) join(ctx context.Context, a Action) error {
	x := es.x
	g, ok := x.eng.(cluster.Grower)
	if !ok {
		return fmt.Errorf("%s cannot add nodes: %w", x.cl.Engine, cluster.ErrUnsupported)
	}
	es.mu.Lock()
	es.joinAt = es.s.Since()
	es.mu.Unlock()
	fmt.Fprintf(x.stderr, "\njoin: adding %d node(s) at %.1fs\n", a.Count, es.s.Since())
	if err := es.s.Event("join", fmt.Sprintf("+%d node(s)", a.Count)); err != nil {
		return err
	}
	for i := 0; i < a.Count; i++ {
		t0 := time.Now()
		x.mu.Lock()
		n, err := g.Add(ctx, x.cl)
		if err == nil {
			err = x.cl.Save()
		}
		x.mu.Unlock()
		if err != nil {
			return fmt.Errorf("add node %d of %d: %w", i+1, a.Count, err)
		}
		_ = es.s.Event("node-added", fmt.Sprintf("%s in %.1fs", n.Name, time.Since(t0).Seconds()))
	}
	_ = es.s.Event("joined", fmt.Sprintf("%d nodes", x.nodesUp()))
	es.tl.Signal("joined")
	es.wg.Add(1)
	go func() {
		defer es.wg.Done()
		es.watchSettle(ctx)
	}()
	return nil
}

// watchSettle polls the engine every second until no data moves, then
// records the "data-settled" moment. An engine that cannot tell is taken as
// settled when its nodes joined, and the event says so.
func (es *expSession) watchSettle(ctx context.Context) {
	x := es.x
	m, ok := x.eng.(cluster.Mover)
	detail := ""
	if !ok {
		detail = x.cl.Engine + " cannot report data movement: taken as settled when the nodes joined"
	}
	for ok {
		x.mu.Lock()
		moving, what, err := m.Moving(ctx, x.cl)
		x.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		if err == nil && !moving {
			break
		}
		_ = what
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	es.mu.Lock()
	es.settledAt = es.s.Since()
	es.mu.Unlock()
	fmt.Fprintf(x.stderr, "\ndata settled at %.1fs\n", es.s.Since())
	_ = es.s.Event("data-settled", detail)
	es.tl.Signal("settled")
}

// nodesUp is how many nodes ran after the last cluster change. The
// timeline holds x.mu for a whole join; this reads a count kept beside it
// instead of the nodes the engine is changing.
func (x *expRun) nodesUp() int {
	if x.mu.TryLock() {
		x.up.Store(int64(running(x.cl)))
		x.mu.Unlock()
	}
	return int(x.up.Load())
}

// firstLine is s up to its first newline (server log tails follow it).
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// observer is the experiment as a job sees it: a job.Observer, and the
// optional seams of the workloads an experiment knows (stability.go,
// postaudit.go).
var (
	_ job.Observer          = (*observer)(nil)
	_ job.RequestSetWatcher = (*observer)(nil)
	_ job.PostAuditor       = (*observer)(nil)
)

// observer is the experiment as a job sees it (job.Observer).
type observer struct {
	x  *expRun
	es *expSession
}

func (o *observer) Header(h *result.Header) {
	x := o.x
	if x.sc.traits().SetsOption != "" {
		for k, v := range x.sc.Stability.HeaderOptions() {
			h.Options[k] = v
		}
	}
	if x.cl != nil {
		probeSeries(h)
		if fromDB, unavailable, source := x.remoteProbes(); len(fromDB) > 0 || len(unavailable) > 0 {
			h.Options["probes_from_database"] = orNone(fromDB)
			h.Options["probes_unavailable"] = orNone(unavailable)
			if source != "" {
				h.Options["probes_database_source"] = source
			}
		}
		h.Options["experiment"] = x.sc.Name
		if x.cl.OnHosts() {
			h.Options["network"] = x.cl.Network
			netSeries(h)
		}
		if !x.cl.Budget.Empty() {
			budgetSeries(h, x.cl.Budget)
		}
		if m := x.sc.mechanisms(x.delays != nil); m != "" {
			h.Options["fault_mechanisms"] = m
		}
		if lh := x.loadHost; lh != nil {
			h.Machine.LoadHost = &result.LoadHost{Name: lh.Name, Addr: lh.Addr.String(), Netns: lh.NS}
		}
		if x.step > 0 {
			h.Options["step"] = x.step
		}
	}
}

func (o *observer) Started(ctx context.Context, s *job.Session) { o.es = o.x.begin(ctx, s) }

func (o *observer) Ended() error { return o.es.end() }

// orNone is the list comma-separated, or "none".
func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}
