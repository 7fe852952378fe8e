package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"golang.org/x/sys/unix"

	"github.com/fieldbench/fieldbench/runner/loop"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

var _ loop.Opener = (*wikiStore)(nil)

// LoopConns implements loop.Opener: n connections to the primary, each
// set up by pgconn (authentication, the read's and the update's statements
// prepared under wikiReadStmt and wikiUpdateStmt) and then taken from it,
// so that runner/loop sends the extended-protocol messages of one
// execution itself: Bind (parameters in binary, binary results), Execute,
// Sync. The statements are Read's and Update's; pgx's Exec of the update
// also sends a Describe of the portal, which the loop, knowing the
// reply's shape, leaves out.
func (s *wikiStore) LoopConns(ctx context.Context, n int) ([]loop.Conn, error) {
	if s.db.ReadsFromReplicas() {
		return nil, errors.New("postgres: the event loop reads from the primary; drop read_from=replicas from the DSN, or run without --loop")
	}
	out := make([]loop.Conn, 0, n)
	fail := func(err error) ([]loop.Conn, error) {
		for _, c := range out {
			c.Close()
		}
		return nil, fmt.Errorf("postgres: event-loop connection: %w", err)
	}
	for range n {
		cfg := s.db.w.Config().ConnConfig.Config.Copy()
		// pgx's own frontend: Hijack sees every byte it buffered.
		cfg.BuildFrontend = func(r io.Reader, w io.Writer) *pgproto3.Frontend { return pgproto3.NewFrontend(r, w) }
		pc, err := pgconn.ConnectConfig(ctx, cfg)
		if err != nil {
			return fail(err)
		}
		if err := prepareAll(ctx, pc, [][2]string{{wikiReadStmt, wikiReadSQL}, {wikiUpdateStmt, wikiUpdateSQL}}); err != nil {
			pc.Close(ctx)
			return fail(err)
		}
		if err := pc.SyncConn(ctx); err != nil {
			pc.Close(ctx)
			return fail(err)
		}
		hc, err := pc.Hijack()
		if err != nil {
			pc.Close(ctx)
			return fail(err)
		}
		fd, err := loop.Detach(hc.Conn)
		if err != nil {
			return fail(err)
		}
		out = append(out, &wikiConn{fd: fd, params: [][]byte{make([]byte, 8)}, upd: [][]byte{nil, make([]byte, 8)}})
	}
	return out, nil
}

// prepareAll prepares each statement (name, SQL) on pc.
func prepareAll(ctx context.Context, pc *pgconn.PgConn, stmts [][2]string) error {
	for _, st := range stmts {
		if _, err := pc.Prepare(ctx, st[0], st[1], nil); err != nil {
			return err
		}
	}
	return nil
}

// wikiConn is one event-loop connection. A read is one execution of the
// read statement, its reply checked as Read checks it (one row of two
// non-null columns, or none: not found). An update is what wiki.Client.Do
// does through Read and Update: the read, then the body it returned with
// one byte appended written back by the update statement, whose reply must
// say one row was changed (none: not found).
type wikiConn struct {
	fd     int
	op     int
	id     int64
	wrote  bool     // the update's write-back is the outstanding request
	params [][]byte // the read's id, reused
	upd    [][]byte // the update's body and id, reused
	body   []byte   // the body to write back, reused
}

func (c *wikiConn) FD() int { return c.fd }

func (c *wikiConn) AppendRequest(dst []byte, op int, id int64) []byte {
	c.op, c.id, c.wrote = op, id, false
	return appendWikiRead(dst, c.params, id)
}

// Reply checks the reply to the outstanding request; the read of an update
// keeps the body to write back.
func (c *wikiConn) Reply(buf []byte) (int, error, error) {
	if c.wrote {
		return parseWikiUpdate(buf)
	}
	end, _, body, opErr, err := parseWikiRead(buf, c.id)
	if end > 0 && opErr == nil && c.op == wiki.OpUpdate {
		c.body = append(append(c.body[:0], body...), '1')
	}
	return end, opErr, err
}

// FollowUp is an update's write-back after its read.
func (c *wikiConn) FollowUp(dst []byte) ([]byte, bool) {
	if c.op != wiki.OpUpdate || c.wrote {
		return dst, false
	}
	c.wrote = true
	return appendWikiUpdate(dst, c.upd, c.body, c.id), true
}

// Close sends Terminate and closes the socket.
func (c *wikiConn) Close() error {
	t, _ := (&pgproto3.Terminate{}).Encode(nil)
	unix.Write(c.fd, t) // best effort: the server also ends a session whose socket closed
	return unix.Close(c.fd)
}
