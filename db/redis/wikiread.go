package redis

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"time"
	"unsafe"

	"github.com/fieldbench/fieldbench/adapter/netdial"
	"github.com/fieldbench/fieldbench/adapter/rawio"
	"github.com/fieldbench/fieldbench/internal/idle"
)

// wikiReader sends the wiki read — the workload's hot path, one MGET of an
// article's title and body — over plain connections of its own, speaking
// RESP2 directly, and falls back to go-redis for anything it does not
// handle itself.
//
// Why: against redis-benchmark on the same server, go-redis's generic path
// cost about twice the client CPU per read (measured, see docs/redis.md,
// "Client efficiency"): a pool Get that makes a recvfrom health check on
// every call, hooks, cluster routing per command, arguments and replies as
// []any. Here a read is one write and the reads of its reply; the reply's
// two values are the only allocations of any size, and nothing is
// pipelined, batched or cached: every Read is one request and one reply.
//
// What it leaves to go-redis: which master holds the article's slot (its
// cluster state, refreshed as go-redis refreshes it), and every read that
// does not succeed here: a MOVED/ASK/TRYAGAIN/CLUSTERDOWN answer (a slot
// moving while nodes join) or a connection that fails (a killed node, a
// connection the server closed). Such a read is done again by go-redis,
// which follows redirections, reloads the slots and retries as it does for
// every other command; its error, if it fails too, is the read's error.
type wikiReader struct {
	db      *DB
	timeout time.Duration

	idle *idle.Stacks[string, *respConn] // by node address
}

// respConn is one connection of wikiReader; a goroutine holds it for one
// read at a time.
type respConn struct {
	nc  net.Conn
	br  *bufio.Reader
	buf []byte // the request being written, reused
	// spent is set when the context of an exchange was cancelled as it
	// ended: the answer is good, the connection is not (rawio.Deadline).
	spent bool
}

func newWikiReader(db *DB) *wikiReader {
	return &wikiReader{db: db, timeout: db.cfg.Timeout,
		idle: idle.New[string](idle.NoLimit, func(c *respConn) { c.nc.Close() })}
}

// errRedirect marks an answer go-redis must handle (a cluster redirection
// or a transient cluster state).
var errRedirect = errors.New("redis: redirected")

// read returns the title and body of article id; ok is false when either
// key is missing. With dst they are read into *dst (wiki.ReaderInto) and
// share its memory; through go-redis they are strings of their own.
func (r *wikiReader) read(ctx context.Context, id int64, dst *[]byte) (title, body string, ok bool, err error) {
	if err := ctx.Err(); err != nil {
		return "", "", false, err
	}
	var idb [20]byte
	ids := strconv.AppendInt(idb[:0], id, 10)
	addr, err := r.addrFor(ctx, ids)
	if err == nil {
		var c *respConn
		if c, err = r.get(ctx, addr); err == nil {
			title, body, ok, err = c.mget(ctx, ids, r.timeout, dst)
			switch {
			case err == nil && c.spent:
				c.nc.Close()
				return title, body, ok, nil
			case err == nil:
				r.put(addr, c)
				return title, body, ok, nil
			case errors.Is(err, errRedirect) && !c.spent:
				r.put(addr, c) // the answer was read whole: the connection is fine
			default:
				c.nc.Close()
			}
		}
	}
	// Not done here: go-redis does it (redirections, slot reload, retries).
	return r.db.mgetArticle(ctx, id)
}

// addrFor is the address of the master holding the article's hash slot.
func (r *wikiReader) addrFor(ctx context.Context, ids []byte) (string, error) {
	if r.db.cc == nil {
		return r.db.cfg.Addrs[0], nil
	}
	// The key's hash tag is the id, so any key of the article names its slot.
	n, err := r.db.cc.MasterForKey(ctx, "{"+string(ids)+"}")
	if err != nil {
		return "", err
	}
	return n.Options().Addr, nil
}

func (r *wikiReader) get(ctx context.Context, addr string) (*respConn, error) {
	if c, _, ok, err := r.idle.Get(addr); err != nil {
		return nil, errors.New("redis: wiki store closed")
	} else if ok {
		return c, nil
	}
	return r.dial(ctx, addr)
}

func (r *wikiReader) put(addr string, c *respConn) { r.idle.Put(addr, c) }

// dial opens a connection and authenticates as go-redis would (RESP2, so
// no HELLO).
func (r *wikiReader) dial(ctx context.Context, addr string) (*respConn, error) {
	dctx, cancel := ctx, context.CancelFunc(func() {})
	if r.timeout > 0 {
		dctx, cancel = context.WithTimeout(ctx, r.timeout)
	}
	nc, err := netdial.Default()(dctx, "tcp", addr) // from the load host, when there is one
	cancel()
	if err != nil {
		return nil, err
	}
	nc = rawio.Wrap(nc) // see adapter/rawio
	c := &respConn{nc: nc, br: bufio.NewReaderSize(nc, 16<<10), buf: make([]byte, 0, 128)}
	if pw := r.db.cfg.Password; pw != "" {
		args := []string{"AUTH", pw}
		if u := r.db.cfg.Username; u != "" {
			args = []string{"AUTH", u, pw}
		}
		if err := c.auth(ctx, r.timeout, args); err != nil {
			nc.Close()
			return nil, err
		}
	}
	return c, nil
}

func (c *respConn) auth(ctx context.Context, timeout time.Duration, args []string) (err error) {
	stop := rawio.Deadline(ctx, c.nc, timeout)
	defer func() {
		if !stop() && err == nil {
			err = ctx.Err()
		}
	}()
	c.buf = append(c.buf[:0], '*')
	c.buf = strconv.AppendInt(c.buf, int64(len(args)), 10)
	c.buf = append(c.buf, "\r\n"...)
	for _, a := range args {
		c.buf = appendBulk(c.buf, []byte(a))
	}
	if _, err := c.nc.Write(c.buf); err != nil {
		return err
	}
	line, err := c.line()
	if err != nil {
		return err
	}
	if string(line) != "+OK" {
		return fmt.Errorf("redis: AUTH: %s", line)
	}
	return nil
}

// mget sends MGET wiki:{id}:t wiki:{id}:b and reads the two values, into
// *dst when it is not nil.
func (c *respConn) mget(ctx context.Context, ids []byte, timeout time.Duration, dst *[]byte) (title, body string, ok bool, err error) {
	stop := rawio.Deadline(ctx, c.nc, timeout)
	defer func() {
		if !stop() {
			c.spent = true // its deadline may be set in the past any moment
		}
	}()
	b := appendMGET(c.buf[:0], ids)
	c.buf = b
	if _, err := c.nc.Write(b); err != nil {
		return "", "", false, err
	}
	line, err := c.line()
	if err != nil {
		return "", "", false, err
	}
	if len(line) > 0 && line[0] == '-' {
		return "", "", false, replyError(line[1:])
	}
	if string(line) != "*2" {
		return "", "", false, fmt.Errorf("redis: MGET: unexpected reply %q", line)
	}
	var buf []byte
	if dst != nil {
		buf = (*dst)[:0]
	}
	t, okT, buf, err := c.bulk(buf, dst != nil)
	if err != nil {
		return "", "", false, err
	}
	bd, okB, buf, err := c.bulk(buf, dst != nil)
	if err != nil {
		return "", "", false, err
	}
	if dst != nil {
		*dst = buf
		// The title's string was made before the body was appended, which
		// may have moved buf: point both into where they are now.
		t, bd = unsafe.String(unsafe.SliceData(buf), len(t)), unsafe.String(unsafe.SliceData(buf[len(t):]), len(bd))
	}
	return t, bd, okT && okB, nil
}

// appendMGET appends MGET wiki:{id}:t wiki:{id}:b, ids being the id in
// decimal.
func appendMGET(b, ids []byte) []byte {
	b = append(b, "*3\r\n$4\r\nMGET\r\n$"...)
	b = strconv.AppendInt(b, int64(len(ids)+9), 10) // len("wiki:{" + id + "}:t")
	b = append(b, "\r\nwiki:{"...)
	b = append(b, ids...)
	b = append(b, "}:t\r\n$"...)
	b = strconv.AppendInt(b, int64(len(ids)+9), 10)
	b = append(b, "\r\nwiki:{"...)
	b = append(b, ids...)
	return append(b, "}:b\r\n"...)
}

// replyError is a RESP error; the answers go-redis must handle wrap
// errRedirect.
func replyError(msg []byte) error {
	for _, p := range []string{"MOVED ", "ASK ", "TRYAGAIN ", "CLUSTERDOWN ", "LOADING ", "READONLY "} {
		if bytes.HasPrefix(msg, []byte(p)) {
			return fmt.Errorf("%w: %s", errRedirect, msg)
		}
	}
	return fmt.Errorf("redis: MGET: %s", msg)
}

// line reads one CRLF-terminated line (without the CRLF); it is valid until
// the next read.
func (c *respConn) line() ([]byte, error) {
	l, err := c.br.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(l) < 2 || l[len(l)-2] != '\r' {
		return nil, fmt.Errorf("redis: malformed reply line %q", l)
	}
	return l[:len(l)-2], nil
}

// bulk reads one bulk string: its value, or ok false for a nil. Without
// into, the value is read into its own allocation, which the returned
// string then shares (nothing writes to it again), so it is copied once,
// from the socket. With into, it is appended to buf (returned, maybe
// moved), and the string is only a length for mget to place.
func (c *respConn) bulk(buf []byte, into bool) (string, bool, []byte, error) {
	l, err := c.line()
	if err != nil {
		return "", false, buf, err
	}
	if len(l) < 2 || l[0] != '$' {
		return "", false, buf, fmt.Errorf("redis: MGET: unexpected value %q", l)
	}
	n, err := strconv.Atoi(string(l[1:]))
	switch {
	case err != nil:
		return "", false, buf, fmt.Errorf("redis: MGET: bad length %q", l)
	case n == -1:
		return "", false, buf, nil
	case n < 0:
		return "", false, buf, fmt.Errorf("redis: MGET: bad length %q", l)
	}
	var v []byte
	if into {
		start := len(buf)
		buf = slices.Grow(buf, n+2)[:start+n+2]
		v = buf[start:]
	} else {
		v = make([]byte, n+2)
	}
	if _, err := io.ReadFull(c.br, v); err != nil {
		return "", false, buf, err
	}
	if v[n] != '\r' || v[n+1] != '\n' {
		return "", false, buf, errors.New("redis: MGET: value not followed by CRLF")
	}
	if into {
		buf = buf[:len(buf)-2] // the CRLF goes
		return unsafe.String(unsafe.SliceData(v), n), true, buf, nil
	}
	if n == 0 {
		return "", true, buf, nil
	}
	return unsafe.String(&v[0], n), true, buf, nil
}

func appendBulk(b, v []byte) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(v)), 10)
	b = append(b, "\r\n"...)
	b = append(b, v...)
	return append(b, "\r\n"...)
}

// close closes every idle connection; connections in use are closed when
// they are given back.
func (r *wikiReader) close() { r.idle.Close() }
