package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// heldConns keeps the connections the wiki read used, acquired from the
// primary's pool, for the next read, instead of releasing each to the pool
// and acquiring one again. A client thread reads one article after
// another, so the connection it gives back is the one it wants next.
//
// Why: pgxpool's Acquire and Release (its resource bookkeeping, lifetime
// and idle checks, a clock read each way) measured about 1.1 µs of client
// CPU per read on the goroutine-per-thread path (16.1 against 15.0 µs per
// read, 300,000 reads, 4 threads, GOMAXPROCS=1): 7 % of the read, and the
// difference between that path and pgbench (docs/postgres.md, "Client
// efficiency").
//
// What keeps it from starving the pool's other users: it holds at most
// half the pool's connections (none when the pool has one), so the other
// half serves Counts, Reset and every other store; the wiki Update takes
// a held connection first too; and DB.Close gives them back before closing
// the pool, which waits for every acquired connection. It is not fair:
// when more threads read than half the pool, the reads that find no held
// connection wait in the pool's queue while held ones cycle among the
// others; and a held connection is not retired by the pool's lifetime
// limits while reads keep using it. A connection held longer than heldIdle gets a ping before
// the next read uses it, as the pool pings a connection idle
// that long before handing it out: so a read after a server restart gets
// a live connection, as it does from the pool.
type heldConns struct {
	mu     sync.Mutex
	max    int
	conns  []heldConn // a stack: the most recently used on top
	closed bool
}

type heldConn struct {
	c  *pgxpool.Conn
	at time.Time // when it was put back
}

// heldIdle is pgxpool's own idle time after which it pings a connection
// before handing it out (the check whose lack TestWikiHeldConns catches:
// a connection the server ended while held).
const heldIdle = time.Second

func newHeldConns(p *pgxpool.Pool) *heldConns {
	return &heldConns{max: int(p.Config().MaxConns) / 2}
}

// get pops the most recently held connection; nil when there is none.
// One held longer than heldIdle is pinged first, as the pool would before
// handing it out, and dropped when the ping fails.
func (h *heldConns) get(ctx context.Context) *pgxpool.Conn {
	for {
		h.mu.Lock()
		n := len(h.conns)
		if n == 0 {
			h.mu.Unlock()
			return nil
		}
		hc := h.conns[n-1]
		h.conns[n-1] = heldConn{}
		h.conns = h.conns[:n-1]
		h.mu.Unlock()
		if time.Since(hc.at) < heldIdle {
			return hc.c
		}
		if ctx.Err() != nil { // no ping can tell: leave it to the pool
			hc.c.Release()
			return nil
		}
		if err := hc.c.Ping(ctx); err == nil {
			return hc.c
		} else if ctx.Err() == nil {
			hc.c.Conn().Close(ctx) // the ping failed: marks it closed, the pool drops it
		}
		hc.c.Release()
	}
}

// put keeps c for the next read, or releases it to the pool when enough
// are held, when it was closed (the pool then drops it), or after close.
func (h *heldConns) put(c *pgxpool.Conn) {
	if c.Conn().IsClosed() {
		c.Release()
		return
	}
	h.mu.Lock()
	if h.closed || len(h.conns) >= h.max {
		h.mu.Unlock()
		c.Release()
		return
	}
	h.conns = append(h.conns, heldConn{c: c, at: time.Now()})
	h.mu.Unlock()
}

// close releases every held connection; later puts release theirs.
func (h *heldConns) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for _, hc := range h.conns {
		hc.c.Release()
	}
	h.conns = nil
}
