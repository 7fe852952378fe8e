package cassandra

import (
	"context"
	"errors"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/fieldbench/fieldbench/adapter"
)

// errNoConnection is what the gate records for a request that found no
// connection to try.
var errNoConnection = errors.New("cassandra: no connection to any host")

// gatedPolicy is a host selection policy that makes a request finding no
// connection to any host wait out a shared backoff before it fails. gocql
// fails such a request at once ("no hosts available in the pool"), without
// dialling, so the dial backoff never slowed it: with its single node
// killed, 4 clients made about 20,000 failed requests a second for 45 s
// and kept the CPU the restarting node needed (issue 13, finding 6). With
// the gate each client fails about once per backoff step (10 ms doubling to
// 1 s); a request that reached a host resets it. Every request still gets
// its error, and the waiting is counted (DB.Reconnects).
type gatedPolicy struct {
	gocql.HostSelectionPolicy
	b *adapter.Backoff
}

// Pick implements gocql.HostSelectionPolicy: the wrapped policy's hosts;
// when they run out before any was tried (Mark is called after every
// attempt), the gate's wait.
func (p gatedPolicy) Pick(st gocql.ExecutableStatement) gocql.NextHost {
	next := p.HostSelectionPolicy.Pick(st)
	tried := false
	return func() gocql.SelectedHost {
		h := next()
		if h != nil {
			return markedHost{SelectedHost: h, tried: &tried, b: p.b}
		}
		if !tried {
			ctx := context.Background()
			if c, ok := st.(interface{ Context() context.Context }); ok && c.Context() != nil {
				ctx = c.Context()
			}
			if p.b.Wait(ctx) == nil {
				p.b.Done(errNoConnection)
			}
		}
		return nil
	}
}

// markedHost notes that a request was tried on a host.
type markedHost struct {
	gocql.SelectedHost
	tried *bool
	b     *adapter.Backoff
}

// Mark implements gocql.SelectedHost.
func (h markedHost) Mark(err error) {
	if !*h.tried {
		*h.tried = true
		h.b.Done(nil)
	}
	h.SelectedHost.Mark(err)
}
