package cassandra

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"time"

	"github.com/fieldbench/fieldbench/adapter/rawio"
	"github.com/fieldbench/fieldbench/internal/idle"
	"github.com/fieldbench/fieldbench/workload/ingest"
)

// insertPipes sends ingest's single-row INSERTs (insert=single) over
// connections of its own, speaking the CQL native protocol (v4, as the
// gocql session) directly: each connection keeps up to concurrency
// EXECUTEs of the prepared INSERT in flight, writes every request it can
// send in one system call, and reads every reply that has come in one
// more. One goroutine drives a connection; no goroutine, channel or
// allocation per insert.
//
// Why not gocql: against latte on the same rows (scripts/compare-latte.sh)
// gocql's per-request machinery — a goroutine per request waiting on a
// channel, a select per reply, its query objects, routing key and
// metrics — took most of fieldbench's client CPU per insert (CPU profile:
// a quarter in allocation, a sixth in select), where latte's driver
// multiplexes a connection without them. Everything else (schema,
// counts, batches, the other families) stays with gocql.
//
// What it does not do, and how that shows: it sends each request to a
// contact point of the DSN, in turn per connection (the coordinator
// forwards it to the replicas; gocql would pick a replica by token), and
// does not retry a request: a failed one (an error answer, a statement
// the node no longer knows after a restart, a broken or silent connection)
// fails the InsertBatch and the connection is closed; the next InsertBatch
// dials and prepares again. Only when a connection that was idle fails
// before any acknowledgement (a node restarted meanwhile) is the batch
// sent again, on another connection (each idle one is tried at most once,
// then a new one). Without authentication and TLS, as the
// adapter (the DSN refuses a user).
type insertPipes struct {
	db    *DB
	query string

	idle *idle.Stacks[struct{}, *pipeConn]

	mu   sync.Mutex
	next int // the contact point the next dial tries first
}

// pipeConn is one connection of insertPipes, used by one InsertBatch at a
// time.
type pipeConn struct {
	nc   net.Conn
	id   []byte // the prepared INSERT's id
	rbuf []byte // read but not yet parsed: rbuf[r:]
	r    int
	wbuf []byte
	// pending[s] is the record whose EXECUTE went out on stream s, -1 when
	// s is free; free lists the free streams.
	pending []int
	free    []int16
}

// CQL native protocol v4 (native_protocol_v4.spec in Cassandra's sources).
const (
	cqlV4Request   = 0x04
	cqlV4Response  = 0x84
	cqlHeaderLen   = 9
	opError        = 0x00
	opStartup      = 0x01
	opReady        = 0x02
	opAuthenticate = 0x03
	opResult       = 0x08
	opPrepare      = 0x09
	opExecute      = 0x0A
	resultVoid     = 0x0001
	resultPrepared = 0x0004
	// maxFrame bounds a reply's body: an insert's replies are a few
	// bytes; a larger length means the stream is not what it should be.
	maxFrame = 1 << 20
	// maxStreams is how many requests a v4 connection can have in flight.
	maxStreams = 32768
)

// ingestColumns are the INSERT's bind variables in order, with the CQL
// type each must have (option ids: int 0x0009, bigint 0x0002, varchar
// 0x000D, double 0x0007); appendExecute encodes them so.
var ingestColumns = []struct {
	name string
	typ  uint16
}{
	{"source", 0x0009}, {"bucket", 0x0009}, {"seq", 0x0009}, {"id", 0x000D}, {"channel", 0x0009},
	{"measured_us", 0x0002}, {"tag", 0x000D}, {"quality", 0x0009}, {"value", 0x0007}, {"recorded_us", 0x0002},
}

func newInsertPipes(db *DB, query string) *insertPipes {
	return &insertPipes{db: db, query: query,
		idle: idle.New[struct{}](idle.NoLimit, func(c *pipeConn) { c.nc.Close() })}
}

// insert sends every record as its own EXECUTE, at most window in flight,
// and returns once each was acknowledged, or at the first failure.
//
// A connection that was idle may have been ended meanwhile (a node
// restarted): when one fails before any insert on it was acknowledged, the
// records go again, once, on a new connection. Sending them twice is
// harmless: an INSERT of the same key writes the same row.
func (p *insertPipes) insert(ctx context.Context, recs []ingest.Record, window int) error {
	for {
		c, reused, err := p.get(ctx)
		if err != nil {
			return err
		}
		stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Unix(1, 0)) })
		acked, err := c.run(ctx, recs, window, uint16(p.db.cfg.Consistency), p.db.cfg.Timeout)
		if stop() && err == nil {
			p.put(c)
			return nil
		}
		c.nc.Close() // cancelled (its deadline spent), or in an unknown state
		if err == nil || !reused || acked > 0 || ctx.Err() != nil {
			return err
		}
	}
}

// get returns an idle connection (reused) or dials one, trying each
// contact point once, starting with the one after the last dialled.
func (p *insertPipes) get(ctx context.Context) (c *pipeConn, reused bool, err error) {
	if c, _, ok, err := p.idle.Get(struct{}{}); err != nil {
		return nil, false, errors.New("cassandra: ingest store closed")
	} else if ok {
		return c, true, nil
	}
	p.mu.Lock()
	hosts := p.db.cfg.Hosts
	first := p.next
	p.next = (p.next + 1) % len(hosts)
	p.mu.Unlock()
	var errs []error
	for i := range hosts {
		c, err := p.dial(ctx, hosts[(first+i)%len(hosts)])
		if err == nil {
			return c, false, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, false, errors.Join(errs...)
}

func (p *insertPipes) put(c *pipeConn) { p.idle.Put(struct{}{}, c) }

// close closes the idle connections; those in use close when returned.
func (p *insertPipes) close() { p.idle.Close() }

// dial connects to host (through the adapter's per-node backoff), starts
// a v4 session and prepares the INSERT, checking its bind variables.
func (p *insertPipes) dial(ctx context.Context, host string) (*pipeConn, error) {
	nc, err := p.db.dials.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, fmt.Errorf("cassandra: connect to %s: %w", host, err)
	}
	c := &pipeConn{nc: rawio.Wrap(nc), rbuf: make([]byte, 0, 64<<10)}
	stop := rawio.Deadline(ctx, c.nc, p.db.cfg.Timeout)
	err = c.handshake(p.query)
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		c.nc.Close()
		return nil, fmt.Errorf("cassandra: connect to %s: %w", host, err)
	}
	return c, nil
}

// handshake sends STARTUP and PREPARE, one at a time on stream 0.
func (c *pipeConn) handshake(query string) error {
	body := binary.BigEndian.AppendUint16(nil, 1)
	body = appendString(appendString(body, "CQL_VERSION"), "3.0.0")
	op, _, err := c.roundTrip(opStartup, body)
	switch {
	case err != nil:
		return fmt.Errorf("startup: %w", err)
	case op == opAuthenticate:
		return errors.New("the node asks for authentication, which the adapter does not support")
	case op != opReady:
		return fmt.Errorf("startup: unexpected reply opcode 0x%02x", op)
	}
	body = binary.BigEndian.AppendUint32(nil, uint32(len(query)))
	body = append(body, query...)
	op, reply, err := c.roundTrip(opPrepare, body)
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	if op != opResult {
		return fmt.Errorf("prepare: unexpected reply opcode 0x%02x", op)
	}
	id, err := preparedID(reply)
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	c.id = id
	return nil
}

// roundTrip sends one request on stream 0 and reads its reply; an ERROR
// reply is returned as an error.
func (c *pipeConn) roundTrip(op byte, body []byte) (byte, []byte, error) {
	f := appendHeader(nil, 0, op)
	f = append(f, body...)
	binary.BigEndian.PutUint32(f[5:], uint32(len(body)))
	if _, err := c.nc.Write(f); err != nil {
		return 0, nil, err
	}
	for {
		stream, rop, reply, ok, err := c.frame()
		if err != nil {
			return 0, nil, err
		}
		if !ok {
			if err := c.fill(); err != nil {
				return 0, nil, err
			}
			continue
		}
		if stream != 0 {
			return 0, nil, fmt.Errorf("reply on stream %d to a request on stream 0", stream)
		}
		if rop == opError {
			return 0, nil, serverError(reply)
		}
		return rop, append([]byte(nil), reply...), nil
	}
}

// preparedID reads a RESULT Prepared reply: the statement's id, and its
// bind variables, which must be ingestColumns (a table of another shape
// would store other values than the records').
func preparedID(b []byte) ([]byte, error) {
	r := reader{b: b}
	if kind := r.u32(); kind != resultPrepared {
		return nil, fmt.Errorf("result kind %d, want Prepared (4)", kind)
	}
	id := append([]byte(nil), r.bytes16()...)
	flags := r.u32()
	cols := int(r.u32())
	pks := int(r.u32())
	if pks < 0 || pks > len(r.b)/2 {
		return nil, fmt.Errorf("malformed Prepared result: %d partition key indexes", pks)
	}
	for range pks {
		r.u16()
	}
	global := flags&0x0001 != 0
	if global {
		r.str()
		r.str()
	}
	if r.err == nil && cols != len(ingestColumns) {
		return nil, fmt.Errorf("%d bind variables, want %d", cols, len(ingestColumns))
	}
	for i := 0; i < cols && r.err == nil; i++ {
		if !global {
			r.str()
			r.str()
		}
		name, typ := r.str(), r.u16()
		if r.err == nil && (name != ingestColumns[i].name || typ != ingestColumns[i].typ) {
			return nil, fmt.Errorf("bind variable %d is %s of type 0x%04x, want %s of type 0x%04x (a table of another shape?)",
				i, name, typ, ingestColumns[i].name, ingestColumns[i].typ)
		}
	}
	if r.err != nil {
		return nil, fmt.Errorf("malformed Prepared result: %w", r.err)
	}
	return id, nil
}

// run is the pipeline: send what the free streams allow in one write, read
// what came in one read, repeat until every record is acknowledged. Each
// round must make progress (its write done and a reply read) within
// timeout; the caller ends the wait at once when ctx is cancelled.
func (c *pipeConn) run(ctx context.Context, recs []ingest.Record, window int, consistency uint16, timeout time.Duration) (acked int, err error) {
	window = min(window, len(recs), maxStreams)
	c.pending = c.pending[:0]
	c.free = c.free[:0]
	for s := range window {
		c.pending = append(c.pending, -1)
		c.free = append(c.free, int16(window-1-s))
	}
	next, done := 0, 0
	fail := func(err error) (int, error) {
		if cerr := ctx.Err(); cerr != nil {
			err = cerr
		}
		return done, fmt.Errorf("cassandra: insert: %w", err)
	}
	for done < len(recs) {
		c.wbuf = c.wbuf[:0]
		for len(c.free) > 0 && next < len(recs) {
			s := c.free[len(c.free)-1]
			c.free = c.free[:len(c.free)-1]
			c.wbuf = c.appendExecute(c.wbuf, s, &recs[next], consistency)
			c.pending[s] = next
			next++
		}
		if timeout > 0 {
			c.nc.SetDeadline(time.Now().Add(timeout))
		}
		// After the deadline is set: a cancellation from before it would
		// otherwise be overwritten (one from after it sets its own).
		if ctx.Err() != nil {
			return fail(ctx.Err())
		}
		if len(c.wbuf) > 0 {
			if _, err := c.nc.Write(c.wbuf); err != nil {
				return fail(err)
			}
		}
		for got := 0; ; {
			stream, op, body, ok, err := c.frame()
			if err != nil {
				return fail(err)
			}
			if !ok {
				if got > 0 {
					break
				}
				if err := c.fill(); err != nil {
					return fail(err)
				}
				continue
			}
			if stream < 0 || int(stream) >= len(c.pending) || c.pending[stream] < 0 {
				return fail(fmt.Errorf("reply on stream %d, which has no request", stream))
			}
			i := c.pending[stream]
			switch {
			case op == opError:
				return fail(fmt.Errorf("record %d (source %d, seq %d): %w", i, recs[i].Source, recs[i].Seq, serverError(body)))
			case op != opResult:
				return fail(fmt.Errorf("unexpected reply opcode 0x%02x", op))
			case len(body) < 4 || binary.BigEndian.Uint32(body) != resultVoid:
				return fail(errors.New("an INSERT's result is not Void"))
			}
			c.pending[stream] = -1
			c.free = append(c.free, stream)
			done++
			got++
		}
	}
	if timeout > 0 {
		c.nc.SetDeadline(time.Time{})
	}
	return done, nil
}

// appendExecute appends the EXECUTE of the prepared INSERT for r on stream
// s, its values in ingestColumns' order and types.
func (c *pipeConn) appendExecute(b []byte, s int16, r *ingest.Record, consistency uint16) []byte {
	start := len(b)
	b = appendHeader(b, s, opExecute)
	b = binary.BigEndian.AppendUint16(b, uint16(len(c.id)))
	b = append(b, c.id...)
	b = binary.BigEndian.AppendUint16(b, consistency)
	b = append(b, 0x01) // flags: values
	b = binary.BigEndian.AppendUint16(b, uint16(len(ingestColumns)))
	b = appendInt(b, r.Source)
	b = appendInt(b, r.Seq>>ingestBucketBits)
	b = appendInt(b, r.Seq)
	b = appendText(b, r.ID)
	b = appendInt(b, r.Channel)
	b = appendBigint(b, r.MeasuredAt.UnixMicro())
	b = appendText(b, r.Tag)
	b = appendInt(b, r.Quality)
	b = appendBigint(b, int64(math.Float64bits(r.Value)))
	b = appendBigint(b, r.RecordedAt.UnixMicro())
	binary.BigEndian.PutUint32(b[start+5:], uint32(len(b)-start-cqlHeaderLen))
	return b
}

func appendHeader(b []byte, stream int16, op byte) []byte {
	b = append(b, cqlV4Request, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(stream))
	b = append(b, op)
	return append(b, 0, 0, 0, 0) // body length, filled in by the caller
}

func appendInt(b []byte, v int32) []byte {
	b = binary.BigEndian.AppendUint32(b, 4)
	return binary.BigEndian.AppendUint32(b, uint32(v))
}

func appendBigint(b []byte, v int64) []byte {
	b = binary.BigEndian.AppendUint32(b, 8)
	return binary.BigEndian.AppendUint64(b, uint64(v))
}

func appendText(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// appendString appends a protocol [string]: a short length and the bytes.
func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// frame takes the next whole reply frame from what was read; ok is false
// when none is whole yet. body is valid until the next fill.
func (c *pipeConn) frame() (stream int16, op byte, body []byte, ok bool, err error) {
	b := c.rbuf[c.r:]
	if len(b) < cqlHeaderLen {
		return 0, 0, nil, false, nil
	}
	if b[0] != cqlV4Response {
		return 0, 0, nil, false, fmt.Errorf("reply of protocol version byte 0x%02x, want 0x%02x", b[0], cqlV4Response)
	}
	if b[1]&^0x08 != 0 { // only the warning flag is expected: no compression, tracing or payload was asked for
		return 0, 0, nil, false, fmt.Errorf("reply with frame flags 0x%02x", b[1])
	}
	n := binary.BigEndian.Uint32(b[5:])
	if n > maxFrame {
		return 0, 0, nil, false, fmt.Errorf("reply of %d bytes", n)
	}
	if len(b) < cqlHeaderLen+int(n) {
		return 0, 0, nil, false, nil
	}
	body = b[cqlHeaderLen : cqlHeaderLen+int(n)]
	if b[1]&0x08 != 0 { // warnings: a [string list] before the body
		r := reader{b: body}
		for range r.u16() {
			r.str()
		}
		if r.err != nil {
			return 0, 0, nil, false, fmt.Errorf("malformed warnings: %w", r.err)
		}
		body = r.b
	}
	c.r += cqlHeaderLen + int(n)
	return int16(binary.BigEndian.Uint16(b[2:])), b[4], body, true, nil
}

// fill reads what the socket holds (waiting for it), after moving the
// unparsed rest to the front of the buffer, or growing it for a frame
// larger than the buffer.
func (c *pipeConn) fill() error {
	rest := copy(c.rbuf[:cap(c.rbuf)], c.rbuf[c.r:])
	c.rbuf, c.r = c.rbuf[:rest], 0
	if rest == cap(c.rbuf) {
		c.rbuf = append(c.rbuf, 0)[:rest] // grow
	}
	n, err := c.nc.Read(c.rbuf[rest:cap(c.rbuf)])
	c.rbuf = c.rbuf[:rest+n]
	if n > 0 {
		return nil
	}
	return err
}

// cqlError is an ERROR reply: its code and the node's message.
type cqlError struct {
	code uint32
	msg  string
}

func (e *cqlError) Error() string { return fmt.Sprintf("%s (error 0x%04x)", e.msg, e.code) }

func serverError(b []byte) error {
	r := reader{b: b}
	code, msg := r.u32(), r.str()
	if r.err != nil {
		return fmt.Errorf("malformed ERROR reply: %w", r.err)
	}
	return &cqlError{code: code, msg: msg}
}

// reader reads protocol notations from b; the first shortfall sets err
// and makes every later read return zero values.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil || n < 0 || len(r.b) < n {
		if r.err == nil {
			r.err = errors.New("message ends early")
		}
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u16() uint16 {
	if b := r.take(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (r *reader) bytes16() []byte { return r.take(int(r.u16())) }

func (r *reader) str() string { return string(r.bytes16()) }
