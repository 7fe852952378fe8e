package experiment

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fieldbench/fieldbench/cluster"
	"github.com/fieldbench/fieldbench/job"
	"github.com/fieldbench/fieldbench/workload/microblog"
)

// The microblog's seam (job.PostAuditor): the posts go to the ledger while
// the load runs and are read back once it stopped.

func (o *observer) PostAcked(t microblog.Tweet) {
	if o.es != nil && o.es.ledger != nil {
		o.es.ledger.Acked(t)
	}
}

func (o *observer) PostFailed(t microblog.Tweet, err error) {
	if o.es != nil && o.es.ledger != nil {
		o.es.ledger.Failed(t, err)
	}
}

// Audit is the durability audit of a microblog run (job.PostAuditor).
func (o *observer) Audit(ctx context.Context, _ *job.Session, store microblog.Store, ds *microblog.Dataset) {
	o.es.audit(ctx, store, ds)
}

// audit reads back every post of the run and adds the audit_* figures.
func (es *expSession) audit(ctx context.Context, store microblog.Store, ds *microblog.Dataset) {
	if es == nil || es.ledger == nil {
		return
	}
	x := es.x
	es.settleForAudit(ctx)
	fmt.Fprintln(x.stderr, "durability audit: reading back every post of the run...")
	a, err := AuditMicroblog(ctx, store, ds, es.ledger)
	if err != nil {
		fmt.Fprintf(x.stderr, "fieldbench: %v\n", err)
		es.s.SetExtra("audit_failed", 1)
		_ = es.s.Event("audit-failed", err.Error())
		return
	}
	for k, v := range a.Extra() {
		es.s.SetExtra(k, v)
	}
	detail := fmt.Sprintf("%d acknowledged: %d ok, %d lost, %d stale; %d failed posts present, %d absent",
		a.Acknowledged, a.OK, a.Lost, a.Stale, a.NeverAckPresent, a.NeverAckAbsent)
	if len(a.LostIDs) > 0 {
		detail += fmt.Sprintf("; lost ids %v", a.LostIDs)
	}
	if len(a.StaleIDs) > 0 {
		detail += fmt.Sprintf("; stale ids %v", a.StaleIDs)
	}
	_ = es.s.Event("audit", detail)
	fmt.Fprintf(x.stderr, "durability audit: %s\n", detail)
	es.reread(ctx, store, ds, a)
}

// reread reads the posts the audit found lost or stale again, through the
// store's view that asks every replica (microblog.StrongReader: Cassandra
// at ALL), after restarting the nodes the timeline left down (killed or
// stopped and not restarted) and waiting for the data to settle: as
// Jepsen's final reads come once every fault is healed. A post found then
// was on some replica the run's level did not ask (or on a node that was
// down); one missing still is on no replica. The first audit's figures
// stay as they were: the re-read adds its own (audit_reread_*).
func (es *expSession) reread(ctx context.Context, store microblog.Store, ds *microblog.Dataset, a Audit) {
	sr, ok := store.(microblog.StrongReader)
	if !ok || a.Lost+a.Stale == 0 {
		return
	}
	x := es.x
	strong, level := sr.Strong()
	fail := func(err error) {
		fmt.Fprintf(x.stderr, "fieldbench: durability audit: the re-read at %s: %v\n", level, err)
		es.s.SetExtra("audit_reread_failed", 1)
		_ = es.s.Event("audit-reread-failed", err.Error())
	}
	if down := es.leftDown(); len(down) > 0 {
		if es.runCtx.Err() != nil {
			fail(fmt.Errorf("not done: the run was interrupted, and it would first restart %s", strings.Join(down, ", ")))
			return
		}
		fmt.Fprintf(x.stderr, "durability audit: restarting %s, left down by the timeline, to read every replica at %s...\n", strings.Join(down, ", "), level)
		for _, n := range down {
			if err := es.nodeAction(ctx, "restart", n); err != nil {
				fail(fmt.Errorf("restart %s: %w", n, err))
				return
			}
		}
		es.s.SetExtra("audit_reread_restarted", float64(len(down)))
		es.settleForAudit(ctx)
	}
	fmt.Fprintf(x.stderr, "durability audit: reading the %d lost and %d stale posts again at %s...\n", a.Lost, a.Stale, level)
	r, err := RereadMicroblog(ctx, strong, level, ds, es.ledger, a)
	if err != nil {
		fail(err)
		return
	}
	for k, v := range r.Extra() {
		es.s.SetExtra(k, v)
	}
	detail := fmt.Sprintf("at %s: of %d lost, %d found, %d on no replica; of %d stale, %d complete, %d still stale",
		level, a.Lost, r.LostFound, r.LostNowhere, a.Stale, r.StaleComplete, r.StaleStill)
	_ = es.s.Event("audit-reread", detail)
	fmt.Fprintf(x.stderr, "durability audit: %s\n", detail)
}

// leftDown names the nodes the timeline killed or stopped and did not
// restart, in the order they went down.
func (es *expSession) leftDown() []string {
	es.mu.Lock()
	defer es.mu.Unlock()
	return slices.Clone(es.down)
}

// auditSettleLimit bounds the wait for replication before the audit: long
// enough for a replica that was down for the run's second half to catch up
// here (pouchdb-server took about 20 s after a restart), short enough to
// leave the audit and its re-read most of the 10 minutes the job gives its
// after-load work.
const auditSettleLimit = 2 * time.Minute

// settleForAudit waits, before the audit reads the posts back, until the
// database reports no data moving between its running nodes (cluster.Mover:
// replicas catching up, streams, slot moves), at most auditSettleLimit. The
// audit reads through one node: a post acknowledged by another node and
// not yet replicated to it is late, not lost, and a replicated database is
// judged, as Jepsen's final reads are, once it has quiesced. An engine that
// cannot tell is audited at once; one still moving at the limit is audited
// anyway, and the result says so (audit_unsettled = 1) so that its "lost"
// figure is read as an upper bound.
func (es *expSession) settleForAudit(ctx context.Context) {
	x := es.x
	m, ok := x.eng.(cluster.Mover)
	if !ok || x.cl == nil {
		return
	}
	t0 := time.Now()
	wctx, cancel := context.WithTimeout(ctx, auditSettleLimit)
	defer cancel()
	said := false
	err := quiesce(wctx, time.Second, func(ctx context.Context) (bool, string, error) {
		x.mu.Lock()
		defer x.mu.Unlock()
		return m.Moving(ctx, x.cl)
	}, func(what string) {
		if !said {
			fmt.Fprintf(x.stderr, "durability audit: waiting for the replicas to agree (%s)...\n", what)
			said = true
		}
	})
	waited := time.Since(t0).Seconds()
	es.s.SetExtra("audit_settle_seconds", waited)
	if err != nil {
		detail := fmt.Sprintf("%v: auditing anyway; posts reported lost may be late ones", err)
		fmt.Fprintf(x.stderr, "durability audit: %s\n", detail)
		es.s.SetExtra("audit_unsettled", 1)
		_ = es.s.Event("audit-unsettled", detail)
		return
	}
	if said {
		fmt.Fprintf(x.stderr, "durability audit: replicas agree after %.1fs\n", waited)
		_ = es.s.Event("audit-settled", fmt.Sprintf("no data moving after %.1fs", waited))
	}
}
