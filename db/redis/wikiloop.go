package redis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/fieldbench/fieldbench/runner/loop"
	"github.com/fieldbench/fieldbench/workload/wiki"
)

var _ loop.Opener = (*wikiStore)(nil)

// LoopConns implements loop.Opener: n connections to the server, opened
// and authenticated as wikiReader's, then handed to runner/loop, which
// sends the same MGET as Read on them.
//
// A cluster of more than one master is refused: each article's slot names
// the master to ask, and a redirection during a run would need go-redis;
// wikiReader does both, so such a run goes without --loop. A cluster of one
// master (what cluster up --nodes 1 starts) is one server.
func (s *wikiStore) LoopConns(ctx context.Context, n int) ([]loop.Conn, error) {
	addr, err := s.soleServer(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]loop.Conn, 0, n)
	for range n {
		rc, err := s.rd.dial(ctx, addr)
		var fd int
		if err == nil {
			fd, err = loop.Detach(rc.nc)
		}
		if err != nil {
			for _, c := range out {
				c.Close()
			}
			return nil, fmt.Errorf("redis: event-loop connection: %w", err)
		}
		out = append(out, &mgetConn{fd: fd})
	}
	return out, nil
}

// soleServer is the address of the one server holding every article: the
// DSN's, or a cluster's only master.
func (s *wikiStore) soleServer(ctx context.Context) (string, error) {
	if s.db.cc == nil {
		return s.db.cfg.Addrs[0], nil
	}
	// CLUSTER SLOTS, deprecated since Redis 7.0 for CLUSTER SHARDS, is what
	// every server version answers (a user's cluster may be older than 7).
	//lint:ignore SA1019 CLUSTER SHARDS needs Redis 7.0; CLUSTER SLOTS works on all.
	slots, err := s.db.cc.ClusterSlots(ctx).Result()
	if err != nil {
		return "", fmt.Errorf("redis: event loop: cluster slots: %w", err)
	}
	masters := map[string]bool{}
	var addr string
	for _, sl := range slots {
		if len(sl.Nodes) > 0 {
			addr = sl.Nodes[0].Addr
			masters[addr] = true
		}
	}
	if len(masters) != 1 {
		return "", fmt.Errorf("redis: the event loop drives one server, and this cluster has %d masters (each key's slot names its master); run without --loop", len(masters))
	}
	return addr, nil
}

// mgetConn is one event-loop connection. A read is the MGET of Read; an
// update is what wiki.Client.Do does through Read and Update: the MGET,
// then the body it returned with one byte appended written back with SET
// ... XX, as Update does (nil: the article is missing).
type mgetConn struct {
	fd    int
	op    int
	ids   [20]byte
	id    []byte // the request's id in decimal, in ids
	wrote bool   // the update's SET is the outstanding request
	body  []byte // the body to write back, reused
}

func (c *mgetConn) FD() int { return c.fd }

func (c *mgetConn) AppendRequest(dst []byte, op int, id int64) []byte {
	c.op, c.wrote = op, false
	c.id = strconv.AppendInt(c.ids[:0], id, 10)
	return appendMGET(dst, c.id)
}

// FollowUp is an update's SET after its MGET.
func (c *mgetConn) FollowUp(dst []byte) ([]byte, bool) {
	if c.op != wiki.OpUpdate || c.wrote {
		return dst, false
	}
	c.wrote = true
	dst = append(dst, "*4\r\n$3\r\nSET\r\n$"...)
	dst = strconv.AppendInt(dst, int64(len(c.id)+9), 10) // len("wiki:{" + id + "}:b")
	dst = append(dst, "\r\nwiki:{"...)
	dst = append(dst, c.id...)
	dst = append(dst, "}:b\r\n"...)
	dst = appendBulk(dst, c.body)
	return append(dst, "$2\r\nXX\r\n"...), true
}

// Reply checks the reply to the outstanding request: an MGET's as
// wikiReader does (two values, both present, else not found; or an error
// reply), keeping the body an update writes back; a SET's +OK, or nil for
// a missing article.
func (c *mgetConn) Reply(buf []byte) (int, error, error) {
	if c.wrote {
		return setReply(buf)
	}
	line, n, err := respLine(buf, 0)
	if n == 0 || err != nil {
		return 0, nil, err
	}
	if line[0] == '-' {
		return n, fmt.Errorf("redis: read article: %w", replyError(line[1:])), nil
	}
	if string(line) != "*2" {
		return 0, nil, fmt.Errorf("redis: MGET: unexpected reply %q", line)
	}
	found := true
	for v := range 2 {
		l, m, err := respLine(buf, n)
		if m == 0 || err != nil {
			return 0, nil, err
		}
		size, err := strconv.Atoi(string(l[1:]))
		switch {
		case l[0] != '$' || err != nil || size < -1:
			return 0, nil, fmt.Errorf("redis: MGET: unexpected value %q", l)
		case size == -1:
			found = false
			n = m
			continue
		case len(buf) < m+size+2:
			return 0, nil, nil
		case buf[m+size] != '\r' || buf[m+size+1] != '\n':
			return 0, nil, errors.New("redis: MGET: value not followed by CRLF")
		case v == 1 && c.op == wiki.OpUpdate:
			c.body = append(append(c.body[:0], buf[m:m+size]...), '1')
		}
		n = m + size + 2
	}
	if !found {
		return n, fmt.Errorf("redis: read: %w", wiki.ErrNotFound), nil
	}
	return n, nil, nil
}

// setReply checks a whole reply to SET ... XX: +OK, or nil when the key
// is missing (the update's article is not found).
func setReply(buf []byte) (int, error, error) {
	line, n, err := respLine(buf, 0)
	switch {
	case n == 0 || err != nil:
		return 0, nil, err
	case line[0] == '-':
		return n, fmt.Errorf("redis: update article: %s", line[1:]), nil // as Update's go-redis error reads
	case string(line) == "$-1":
		return n, fmt.Errorf("redis: update: %w", wiki.ErrNotFound), nil
	case string(line) != "+OK":
		return 0, nil, fmt.Errorf("redis: SET: unexpected reply %q", line)
	}
	return n, nil, nil
}

// respLine finds the CRLF-terminated line starting at off: the line without
// CRLF and the offset after it; 0 while it is incomplete.
func respLine(buf []byte, off int) ([]byte, int, error) {
	i := bytes.IndexByte(buf[off:], '\n')
	if i < 0 {
		return nil, 0, nil
	}
	l := buf[off : off+i+1]
	if len(l) < 3 || l[len(l)-2] != '\r' {
		return nil, 0, fmt.Errorf("redis: malformed reply line %q", l)
	}
	return l[:len(l)-2], off + i + 1, nil
}

func (c *mgetConn) Close() error { return unix.Close(c.fd) }
