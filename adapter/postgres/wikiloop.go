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
)

var _ loop.Opener = (*wikiStore)(nil)

// LoopConns implements loop.Opener: n connections to the primary, each
// set up by pgconn (authentication, the read's statement prepared under
// wikiReadStmt) and then taken from it, so that runner/loop sends the
// extended-protocol messages of one execution itself: Bind (the id in
// binary, binary results), Execute, Sync — what pgx sends for Read, and
// what pgbench -M prepared sends.
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
		if _, err := pc.Prepare(ctx, wikiReadStmt, wikiReadSQL, nil); err != nil {
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
		out = append(out, &readConn{fd: fd, params: [][]byte{make([]byte, 8)}})
	}
	return out, nil
}

// readConn is one event-loop connection: it frames the wiki read and
// checks its reply as Read does (one row of two non-null columns, or none:
// not found).
type readConn struct {
	fd     int
	id     int64
	params [][]byte // the id, reused
}

func (c *readConn) FD() int { return c.fd }

func (c *readConn) AppendRequest(dst []byte, id int64) []byte {
	c.id = id
	return appendWikiRead(dst, c.params, id)
}

// Reply checks one execution's reply as Read does (parseWikiRead).
func (c *readConn) Reply(buf []byte) (int, error, error) {
	end, _, _, opErr, err := parseWikiRead(buf, c.id)
	return end, opErr, err
}

// Close sends Terminate and closes the socket.
func (c *readConn) Close() error {
	t, _ := (&pgproto3.Terminate{}).Encode(nil)
	unix.Write(c.fd, t) // best effort: the server also ends a session whose socket closed
	return unix.Close(c.fd)
}
