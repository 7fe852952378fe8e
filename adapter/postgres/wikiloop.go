package postgres

import (
	"context"
	"encoding/binary"
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
	binary.BigEndian.PutUint64(c.params[0], uint64(id))
	b := pgproto3.Bind{PreparedStatement: wikiReadStmt, ParameterFormatCodes: wikiReadParamFormats, Parameters: c.params, ResultFormatCodes: wikiReadResultFormats}
	dst, _ = b.Encode(dst) // errors only on more than 65535 parameters
	dst, _ = (&pgproto3.Execute{}).Encode(dst)
	dst, _ = (&pgproto3.Sync{}).Encode(dst)
	return dst
}

// Reply reads the messages of one execution up to ReadyForQuery:
// BindComplete, DataRow (at most one), CommandComplete, or an ErrorResponse
// (the read failed; the server then skips to Sync and still answers
// ReadyForQuery). Notices and parameter reports may come in between.
func (c *readConn) Reply(buf []byte) (int, error, error) {
	// Whole messages only: find ReadyForQuery by the headers first.
	end := 0
	for off := 0; ; {
		if len(buf)-off < 5 {
			return 0, nil, nil
		}
		size := int(binary.BigEndian.Uint32(buf[off+1:]))
		if size < 4 {
			return 0, nil, fmt.Errorf("postgres: malformed message (length %d)", size)
		}
		if len(buf)-off < 1+size {
			return 0, nil, nil
		}
		typ := buf[off]
		off += 1 + size
		if typ == 'Z' {
			end = off
			break
		}
	}
	var opErr error
	rows, bad := 0, false
	for off := 0; off < end; {
		typ, size := buf[off], int(binary.BigEndian.Uint32(buf[off+1:]))
		body := buf[off+5 : off+1+size]
		off += 1 + size
		switch typ {
		case '2', 'C', 'Z', 'N', 'S', 'A': // BindComplete, CommandComplete, ReadyForQuery, notices
		case 'D':
			rows++
			bad = bad || !twoNonNull(body)
		case 'E':
			var e pgproto3.ErrorResponse
			if err := e.Decode(body); err != nil {
				return 0, nil, fmt.Errorf("postgres: malformed error reply: %w", err)
			}
			opErr = fmt.Errorf("postgres: read article: %w", pgconn.ErrorResponseToPgError(&e))
		default:
			return 0, nil, fmt.Errorf("postgres: unexpected message %q in a read's reply", typ)
		}
	}
	switch {
	case opErr != nil:
	case bad || rows > 1:
		opErr = fmt.Errorf("postgres: read article %d: unexpected row shape (want one row of non-null title and body)", c.id)
	case rows == 0:
		opErr = fmt.Errorf("postgres: read: %w", wiki.ErrNotFound)
	}
	return end, opErr, nil
}

// twoNonNull reports whether a DataRow body has two columns, both non-null
// and within the message.
func twoNonNull(b []byte) bool {
	if len(b) < 2 || binary.BigEndian.Uint16(b) != 2 {
		return false
	}
	b = b[2:]
	for range 2 {
		if len(b) < 4 {
			return false
		}
		n := int32(binary.BigEndian.Uint32(b))
		if n < 0 || int(n) > len(b)-4 {
			return false
		}
		b = b[4+n:]
	}
	return len(b) == 0
}

// Close sends Terminate and closes the socket.
func (c *readConn) Close() error {
	t, _ := (&pgproto3.Terminate{}).Encode(nil)
	unix.Write(c.fd, t) // best effort: the server also ends a session whose socket closed
	return unix.Close(c.fd)
}
