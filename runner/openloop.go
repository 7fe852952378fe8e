package runner

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fieldbench/fieldbench/recorder"
)

// openPool runs Run's open loop on a schedule (see schedule): each
// executor claims the next intended start, takes an idle client, asks it
// for its operation, sleeps until the start on its own alarm and runs the
// operation. A client that waits for its next operation is its state alone
// (its Worker and recording shard in the idle list), not a parked
// goroutine: executors are started as operations overlap and reused, so
// there are as many goroutines as operations ever in flight at once, plus
// the one asleep for the next start (at most one per client). With 100,000
// clients of which a handful are busy at any moment, the garbage collector
// does not scan 100,000 stacks.
//
// When every client is busy, no executor claims the next start until one
// finishes: the starts it then finds are overdue, and the backlog shows as
// latency from the intended start (coordinated omission avoided).
type openPool struct {
	ctx   context.Context
	sched *schedule
	idle  chan *openClient // the clients not running an operation
	stop  <-chan struct{}
	wg    *sync.WaitGroup

	clients int
	spawned atomic.Int64 // executors started
	busy    atomic.Int64 // executors inside an operation
	started atomic.Int64
}

type openClient struct {
	w Worker
	h *recorder.Handle
}

func newOpenPool(ctx context.Context, rec *recorder.Recorder, workers []Worker, stop <-chan struct{}, wg *sync.WaitGroup, sched *schedule) *openPool {
	p := &openPool{ctx: ctx, sched: sched, idle: make(chan *openClient, len(workers)), stop: stop, wg: wg, clients: len(workers)}
	for _, w := range workers {
		p.idle <- &openClient{w: w, h: rec.Handle()}
	}
	p.spawned.Store(1)
	p.wg.Add(1)
	go p.execute()
	return p
}

// execute claims starts and runs their operations until the schedule ends
// or the run stops.
func (p *openPool) execute() {
	defer p.wg.Done()
	a := p.sched.alarm()
	for !stopped(p.stop) {
		free := mono()
		at, ok := p.sched.claim()
		if !ok {
			return
		}
		// An idle client always exists: executors never outnumber clients,
		// and this one is not running an operation.
		c := <-p.idle
		op := c.w.Next()
		if !a.sleepUntil(at) {
			p.idle <- c
			return
		}
		p.started.Add(1)
		// Another executor is started when every other one is busy, so
		// that someone sleeps for the next start while this one works; not
		// one for each overdue start of a backlog (a process descheduled
		// for 100 ms owes 10,000 operations at 100,000/s), which would
		// start a goroutine per client.
		if b := p.busy.Add(1); b >= p.spawned.Load() {
			p.spawn()
		}
		c.h.Late(lateness(at, free))
		do(p.ctx, c.w, c.h, op, at)
		p.busy.Add(-1)
		p.idle <- c // room for every client: never blocks
	}
}

// lateness is the generator's own error in starting an operation due at
// at by an executor free since free: the time from the later of the two
// to now. A start that was overdue because every client was busy (the
// database's backlog) is not the generator's error: that wait is in the
// operation's latency, measured from at, and the busy-client warning
// names it; counted here too, it made an overloaded database look like
// a late generator (a Cassandra run whose backlog reached 24 s warned
// that the generator was 24 s late).
func lateness(at, free time.Duration) time.Duration {
	return mono() - max(at, free)
}

// spawn starts one more executor unless there is one per client.
func (p *openPool) spawn() {
	for {
		n := p.spawned.Load()
		if n >= int64(p.clients) {
			return
		}
		if p.spawned.CompareAndSwap(n, n+1) {
			p.wg.Add(1)
			go p.execute()
			return
		}
	}
}

func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}
