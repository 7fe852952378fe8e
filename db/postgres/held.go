package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fieldbench/fieldbench/internal/idle"
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
	conns *idle.Stacks[struct{}, *pgxpool.Conn] // the most recently used on top
}

// heldIdle is pgxpool's own idle time after which it pings a connection
// before handing it out (the check whose lack TestWikiHeldConns catches:
// a connection the server ended while held).
const heldIdle = time.Second

func newHeldConns(p *pgxpool.Pool) *heldConns {
	return &heldConns{conns: idle.New[struct{}](int(p.Config().MaxConns)/2, (*pgxpool.Conn).Release)}
}

// get pops the most recently held connection; nil when there is none.
// One held longer than heldIdle is pinged first, as the pool would before
// handing it out, and dropped when the ping fails.
func (h *heldConns) get(ctx context.Context) *pgxpool.Conn {
	for {
		c, at, ok, _ := h.conns.Get(struct{}{}) // after close: none
		if !ok {
			return nil
		}
		if time.Since(at) < heldIdle {
			return c
		}
		if ctx.Err() != nil { // no ping can tell: leave it to the pool
			c.Release()
			return nil
		}
		if err := c.Ping(ctx); err == nil {
			return c
		} else if ctx.Err() == nil {
			c.Conn().Close(ctx) // the ping failed: marks it closed, the pool drops it
		}
		c.Release()
	}
}

// put keeps c for the next read, or releases it to the pool when enough
// are held, when it was closed (the pool then drops it), or after close.
func (h *heldConns) put(c *pgxpool.Conn) {
	if c.Conn().IsClosed() {
		c.Release()
		return
	}
	h.conns.Put(struct{}{}, c)
}

// close releases every held connection; later puts release theirs.
func (h *heldConns) close() { h.conns.Close() }
