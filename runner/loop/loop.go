// Package loop drives the requests of many closed-loop clients from one
// goroutine over connections it polls with epoll, as pgbench and
// redis-benchmark do, instead of one goroutine per client.
//
// Why it exists: with a goroutine per client, each request costs the Go
// runtime a park, a netpoller wake-up and often a hand-off of the
// processor to another OS thread while a socket write is in the kernel
// (measured: 1.1 context switches per read against pgbench's 0.5, and
// about 1.7x pgbench's client CPU per read, see docs/postgres.md, "Client
// efficiency"). On a small machine where the client shares the cores with
// the server, that CPU is taken from the server and the figures measure
// the client. Here one goroutine owns every connection: it writes a
// request, polls, reads the reply, and every operation sends the same
// requests as the store's own (one, or an update's read and then its
// write-back), one at a time on its connection: nothing is pipelined or
// batched.
//
// An adapter offers it through a Conn: a socket already connected and
// authenticated, and the framing of the requests it sends and of their
// replies.
package loop

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Conn is one database connection the loop drives.
type Conn interface {
	// FD is the connected socket. The loop makes it non-blocking and only
	// reads, writes and polls it; Close closes it.
	FD() int
	// AppendRequest appends the first (often the only) request of
	// operation op (the client's Next) on key to dst.
	AppendRequest(dst []byte, op int, key int64) []byte
	// Reply looks at every byte received since the request was sent. It
	// returns n == 0 while the reply is incomplete, else the reply's length;
	// opErr is an operation that failed (an error reply, a missing row: the
	// connection stays usable); err is a connection that cannot go on (a
	// malformed reply), which ends the run.
	Reply(buf []byte) (n int, opErr, err error)
	// FollowUp is asked after each reply without opErr: it appends the
	// operation's next request to dst and reports true, or reports false
	// when the operation is done. An operation of several exchanges (a
	// wiki update: the read, then the article written back) is timed and
	// recorded once, from its first request to its last reply.
	FollowUp(dst []byte) ([]byte, bool)
	// Close ends the session politely where the protocol has a way to.
	Close() error
}

// Opener is a store that offers event-loop connections for its
// operations (a wiki store's read and update: fieldbench run wiki --loop).
// LoopConns opens n, each sending the same requests as the store's own
// operations, one request and one reply at a time, each reply checked as
// the store checks it. The caller
// closes them. It lives here, not in the workload, so that workloads keep
// depending on no database or runner package.
type Opener interface {
	LoopConns(ctx context.Context, n int) ([]Conn, error)
}

// Client draws one closed-loop client's requests: Next the operation (the
// recorder's index), ID its key; Acknowledged is told of each operation
// that succeeded (a wiki client counts its updates, which tell lost ones
// apart). wiki.Client is one.
type Client interface {
	Next() int
	ID() int64
	Acknowledged(op int)
}

// DefaultTimeout is how long the loop waits for a server that sends
// nothing while requests are outstanding before it gives up.
const DefaultTimeout = 30 * time.Second

// ErrClosed is a server that closed a connection during the run.
var ErrClosed = errors.New("the server closed the connection")

func closedErr(i int) error { return fmt.Errorf("loop: connection %d: %w", i, ErrClosed) }
