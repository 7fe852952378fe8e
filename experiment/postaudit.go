package experiment

import (
	"context"
	"fmt"
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
}

// auditSettleLimit bounds the wait for replication before the audit: long
// enough for a replica that was down for the run's second half to catch up
// here (pouchdb-server took about 20 s after a restart), short enough to
// leave the audit most of the 5 minutes the job gives its after-load work.
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
