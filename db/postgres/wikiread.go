package postgres

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"syscall"
	"time"
	"unsafe"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fieldbench/fieldbench/adapter/rawio"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

// pgNet is the connection every pool of the adapter dials: the raw socket
// (adapter/rawio) together with the buffered reader pgx reads it through
// (set by bufferedFrontend), so that the wiki read can send its request
// and take its reply on the socket itself and leave pgx in step.
type pgNet struct {
	net.Conn
	br *bufio.Reader // pgx's reader of this socket; nil under TLS
}

// SyscallConn is the socket's own, for runner/loop's Detach.
func (c *pgNet) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("postgres: %T is not a plain socket", c.Conn)
	}
	return sc.SyscallConn()
}

// wikiReadKey names the read's state in a connection's CustomData.
const wikiReadKey = "fieldbench.wikiread"

// wikiReadState is what a connection keeps for the direct read: the
// request being written and the reply being read, both reused.
type wikiReadState struct {
	req   []byte
	reply []byte
	param [][]byte // the id in binary, reused
}

// readDirect sends the wiki read's Bind/Execute/Sync on the pooled
// connection's socket and reads its reply, the messages pgx's
// ExecPrepared would send and read, without pgx's per-call machinery
// (its lock, context watcher, slow-write timer, ResultReader and two
// buffers): on the goroutine-per-client path that machinery was a quarter
// of the client's CPU per read beside pgbench's (docs/postgres.md, "Client
// efficiency"). The reply is read straight into the connection's reply
// buffer (pgx's buffered reader, empty, hands a large read through) and
// each column is copied once: into the Article's strings, or into dst
// when it is not nil (wiki.ReaderInto: the strings then share *dst).
//
// handled is false when the connection is not one it can use so (TLS, or
// pgx holds unread bytes of it): the caller reads through pgx instead. A
// connection left in an unknown state (an I/O error, a cancellation, bytes
// after the reply) is closed, so the pool drops it.
func readDirect(ctx context.Context, c *pgxpool.Conn, id int64, dst *[]byte) (a wiki.Article, handled bool, err error) {
	pc := c.Conn().PgConn()
	pn, ok := pc.Conn().(*pgNet)
	if !ok || pn.br == nil {
		return a, false, nil
	}
	if err := pc.SyncConn(ctx); err != nil || pn.br.Buffered() > 0 {
		return a, false, nil
	}
	st, _ := pc.CustomData()[wikiReadKey].(*wikiReadState)
	if st == nil {
		st = &wikiReadState{param: [][]byte{make([]byte, 8)}}
		pc.CustomData()[wikiReadKey] = st
	}
	st.req = appendWikiRead(st.req[:0], st.param, id)
	stop := rawio.Deadline(ctx, pn, 0)
	_, err = pn.Write(st.req)
	buf := st.reply[:0]
	var end int
	var title, body []byte
	var opErr error
	for err == nil {
		end, title, body, opErr, err = parseWikiRead(buf, id)
		if err != nil || end > 0 {
			break
		}
		if cap(buf)-len(buf) < readBufferSize {
			buf = slices.Grow(buf, readBufferSize) // room for a read bufio passes through
		}
		var n int
		n, err = pn.br.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if n > 0 && err != nil {
			err = nil // keep what came; the next read repeats the error
		}
	}
	st.reply = buf[:0]
	cancelled := !stop()
	if err != nil {
		pn.Close()
		c.Conn().Close(ctx) // marks it closed: Release destroys it
		// A deadline or cancellation of ctx ended it: say so, as pgx does
		// (the socket's deadline may fire before ctx's own timer).
		if cerr := ctx.Err(); cerr != nil {
			err = cerr
		} else if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
			err = context.DeadlineExceeded
		}
		return a, true, fmt.Errorf("postgres: read article: %w", err)
	}
	if cancelled || end != len(buf) {
		// The answer came whole, but the socket's deadline is spent, or
		// messages followed ReadyForQuery (a notification) that pgx will
		// never see: the connection goes, not the answer.
		pn.Close()
		c.Conn().Close(ctx)
	}
	if opErr != nil {
		return a, true, opErr
	}
	if dst == nil {
		return wiki.Article{ID: id, Title: string(title), Body: string(body)}, true, nil
	}
	b := append(append((*dst)[:0], title...), body...)
	*dst = b
	return wiki.Article{ID: id, Title: bytesString(b[:len(title)]), Body: bytesString(b[len(title):])}, true, nil
}

// bytesString is b as a string without a copy; b must not change while
// the string is in use.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// appendWikiRead appends one execution of the prepared read: Bind (the id
// in binary, binary results), Execute, Sync — what pgx's ExecPrepared
// sends apart from Describe (whose answer, the row's shape, the read knows)
// and what pgbench -M prepared sends. param holds one 8-byte slice, reused.
func appendWikiRead(dst []byte, param [][]byte, id int64) []byte {
	binary.BigEndian.PutUint64(param[0], uint64(id))
	b := pgproto3.Bind{PreparedStatement: wikiReadStmt, ParameterFormatCodes: wikiReadParamFormats, Parameters: param, ResultFormatCodes: wikiReadResultFormats}
	dst, _ = b.Encode(dst) // errors only on more than 65535 parameters
	dst, _ = (&pgproto3.Execute{}).Encode(dst)
	dst, _ = (&pgproto3.Sync{}).Encode(dst)
	return dst
}

// appendWikiUpdate appends one execution of the prepared update (the
// event loop's write-back of an update): Bind (body and id in binary),
// Execute, Sync. params holds two slices, the second of 8 bytes, reused.
func appendWikiUpdate(dst []byte, params [][]byte, body []byte, id int64) []byte {
	params[0] = body
	binary.BigEndian.PutUint64(params[1], uint64(id))
	b := pgproto3.Bind{PreparedStatement: wikiUpdateStmt, ParameterFormatCodes: wikiUpdateParamFormats, Parameters: params}
	dst, _ = b.Encode(dst)
	dst, _ = (&pgproto3.Execute{}).Encode(dst)
	dst, _ = (&pgproto3.Sync{}).Encode(dst)
	params[0] = nil // the body is the caller's
	return dst
}

// parseWikiUpdate looks for the whole reply to one appendWikiUpdate at the
// start of buf: BindComplete, CommandComplete "UPDATE n", ReadyForQuery,
// or an ErrorResponse. n must be 1; 0 is a missing article.
func parseWikiUpdate(buf []byte) (end int, opErr, err error) {
	if end, err = replyEnd(buf); end == 0 || err != nil {
		return 0, nil, err
	}
	tag := ""
	for off := 0; off < end; {
		typ, size := buf[off], int(binary.BigEndian.Uint32(buf[off+1:]))
		msg := buf[off+5 : off+1+size]
		off += 1 + size
		switch typ {
		case '2', 'Z', 'N', 'S', 'A':
		case 'C':
			tag = string(bytes.TrimRight(msg, "\x00"))
		case 'E':
			pe, err := errorReply(msg)
			if err != nil {
				return 0, nil, err
			}
			opErr = fmt.Errorf("postgres: update article: %w", pe)
		default:
			return 0, nil, fmt.Errorf("postgres: unexpected message %q in an update's reply", typ)
		}
	}
	switch {
	case opErr != nil:
	case tag == "UPDATE 0":
		opErr = fmt.Errorf("postgres: update: %w", wiki.ErrNotFound)
	case tag != "UPDATE 1":
		opErr = fmt.Errorf("postgres: update article: unexpected command tag %q", tag)
	}
	return end, opErr, nil
}

// parseWikiRead looks for the whole reply to one appendWikiRead at the
// start of buf: BindComplete, DataRow (at most one), CommandComplete, or an
// ErrorResponse (the read failed; the server then skips to Sync and still
// answers ReadyForQuery); notices and parameter reports may come in
// between. end is 0 while the reply is incomplete, else the length of the
// reply; title and body point into buf. opErr is the read's own failure
// (not found, an error answer, a row of the wrong shape); err means the
// stream cannot be trusted.
func parseWikiRead(buf []byte, id int64) (end int, title, body []byte, opErr, err error) {
	if end, err = replyEnd(buf); end == 0 || err != nil {
		return 0, nil, nil, nil, err
	}
	rows, bad := 0, false
	for off := 0; off < end; {
		typ, size := buf[off], int(binary.BigEndian.Uint32(buf[off+1:]))
		msg := buf[off+5 : off+1+size]
		off += 1 + size
		switch typ {
		case '2', 'C', 'Z', 'N', 'S', 'A': // BindComplete, CommandComplete, ReadyForQuery, notices
		case 'D':
			rows++
			var ok bool
			title, body, ok = twoColumns(msg)
			bad = bad || !ok
		case 'E':
			pe, err := errorReply(msg)
			if err != nil {
				return 0, nil, nil, nil, err
			}
			opErr = fmt.Errorf("postgres: read article: %w", pe)
		default:
			return 0, nil, nil, nil, fmt.Errorf("postgres: unexpected message %q in a read's reply", typ)
		}
	}
	switch {
	case opErr != nil:
	case bad || rows > 1:
		opErr = fmt.Errorf("postgres: read article %d: unexpected row shape (want one row of non-null title and body)", id)
	case rows == 0:
		opErr = fmt.Errorf("postgres: read: %w", wiki.ErrNotFound)
	}
	return end, title, body, opErr, nil
}

// errorReply decodes an ErrorResponse's body into the error pgx would
// return for it.
func errorReply(msg []byte) (*pgconn.PgError, error) {
	var e pgproto3.ErrorResponse
	if err := e.Decode(msg); err != nil {
		return nil, fmt.Errorf("postgres: malformed error reply: %w", err)
	}
	return pgconn.ErrorResponseToPgError(&e), nil
}

// replyEnd finds the end of the first whole reply in buf by the message
// headers alone: the offset after its ReadyForQuery, 0 while it is
// incomplete.
func replyEnd(buf []byte) (int, error) {
	for off := 0; ; {
		if len(buf)-off < 5 {
			return 0, nil
		}
		size := int(binary.BigEndian.Uint32(buf[off+1:]))
		if size < 4 {
			return 0, fmt.Errorf("postgres: malformed message (length %d)", size)
		}
		if len(buf)-off < 1+size {
			return 0, nil
		}
		typ := buf[off]
		off += 1 + size
		if typ == 'Z' {
			return off, nil
		}
	}
}

// twoColumns returns the two columns of a DataRow body; ok is false unless
// it has exactly two, both non-null and within the message.
func twoColumns(b []byte) (first, second []byte, ok bool) {
	if len(b) < 2 || binary.BigEndian.Uint16(b) != 2 {
		return nil, nil, false
	}
	b = b[2:]
	var cols [2][]byte
	for i := range cols {
		if len(b) < 4 {
			return nil, nil, false
		}
		n := int32(binary.BigEndian.Uint32(b))
		if n < 0 || int(n) > len(b)-4 {
			return nil, nil, false
		}
		cols[i], b = b[4:4+n], b[4+n:]
	}
	return cols[0], cols[1], len(b) == 0
}
