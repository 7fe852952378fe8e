// Package tdsfix rewrites the two defects of Iridium SQL 0.1.13's TDS (the
// SQL Server stand-in that runs on this machine) that stop the official
// driver, go-mssqldb, from connecting. The sqlserver adapter wraps its
// connections with it when the DSN says standin=iridium; every other byte
// passes unchanged, both ways.
//
//  1. Iridium answers the PRELOGIN request with a packet of type 0x12
//     (PRELOGIN) where TDS requires 0x04 (tabular result); go-mssqldb
//     refuses it ("expected packet type 4"). The packets of the server's
//     first message are retyped to 0x04.
//  2. In its login response, Iridium's ENVCHANGE token for the SQL
//     collation (type 7) carries an old value of 5 bytes (the collation
//     again) where TDS sends none at login; go-mssqldb reads the old value
//     as an empty string's length and then 10 bytes of UTF-16, runs past
//     the token and drops the connection. The old value is emptied (5
//     bytes fewer) and the token's length shortened to match.
//
// It is a stand-in's workaround: a real SQL Server needs none of it. It
// does not speak TLS: the client must connect with encrypt=disable
// (Iridium offers no encryption either), so that the login response can
// be read.
package tdsfix

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
)

// TDS packet types and header layout (MS-TDS 2.2.3.1).
const (
	typeReply    = 0x04
	typePrelogin = 0x12
	headerLen    = 8
	statusEOM    = 0x01
)

// Token types in a login response (MS-TDS 2.2.7).
const (
	tokEnvChange     = 0xE3
	tokInfo          = 0xAB
	tokError         = 0xAA
	tokLoginAck      = 0xAD
	tokFeatureExtAck = 0xAE
	tokDone          = 0xFD
	tokDoneProc      = 0xFE
	tokDoneInProc    = 0xFF
	envSQLCollation  = 7
	doneLen          = 12 // status, curcmd (2 each), row count (8), TDS 7.2+
)

// Counts are the rewrites made.
type Counts struct {
	PreloginPackets int64 // packets retyped from 0x12 to 0x04
	Collations      int64 // collation ENVCHANGE tokens whose old value was dropped
}

// Counter adds up the rewrites of every connection wrapped with it, safe
// for concurrent connections; the tests read it to check that the
// rewrites were made.
type Counter struct {
	prelogin, collations atomic.Int64
}

// Counts returns the rewrites made so far.
func (c *Counter) Counts() Counts {
	return Counts{PreloginPackets: c.prelogin.Load(), Collations: c.collations.Load()}
}

// Wrap returns conn with the server's first two messages (the pre-login
// response, then the login response) rewritten as they are read, counted
// into n (nil: not counted). Writes and every later byte pass unchanged.
func Wrap(conn net.Conn, n *Counter) net.Conn {
	if n == nil {
		n = new(Counter)
	}
	return &Conn{Conn: conn, n: n}
}

// Conn is a connection to Iridium SQL whose first two server messages are
// rewritten (see Wrap).
type Conn struct {
	net.Conn
	n       *Counter
	stage   int    // messages rewritten so far (0, 1, 2: then pass-through)
	pending []byte // rewritten bytes not yet read
	err     error  // a failed rewrite: the connection is unusable
}

// Read implements net.Conn: the rewritten messages first, then the
// connection's own bytes.
func (c *Conn) Read(p []byte) (int, error) {
	for len(c.pending) == 0 && c.stage < 2 && c.err == nil {
		c.err = c.next()
	}
	if len(c.pending) > 0 {
		k := copy(p, c.pending)
		c.pending = c.pending[k:]
		return k, nil
	}
	if c.err != nil {
		return 0, c.err
	}
	return c.Conn.Read(p)
}

// next reads the server's next message whole and queues it rewritten.
func (c *Conn) next() error {
	msg, err := readMessage(c.Conn)
	if err != nil {
		what := "pre-login response"
		if c.stage == 1 {
			what = "login response"
		}
		return fmt.Errorf("tdsfix: %s: %w", what, err)
	}
	var out [][]byte
	if c.stage == 0 {
		out = c.fixPrelogin(msg)
	} else {
		out = c.fixLogin(msg)
	}
	c.stage++
	for _, p := range out {
		c.pending = append(c.pending, p...)
	}
	return nil
}

// fixPrelogin retypes the pre-login response's packets to 0x04.
func (c *Conn) fixPrelogin(pkts [][]byte) [][]byte {
	for _, p := range pkts {
		if p[0] == typePrelogin {
			p[0] = typeReply
			c.n.prelogin.Add(1)
		}
	}
	return pkts
}

// fixLogin empties the collation change's old value in the login
// response and packetizes it again: packets no larger than the server's,
// with the first one's header.
func (c *Conn) fixLogin(pkts [][]byte) [][]byte {
	payload, fixed := FixLoginResponse(joinPayload(pkts))
	if fixed == 0 {
		return pkts
	}
	c.n.collations.Add(int64(fixed))
	return split(pkts[0][:headerLen], payload, maxPacket(pkts))
}

// readMessage reads the packets of one TDS message (to the packet whose
// status has the end-of-message bit).
func readMessage(r io.Reader) ([][]byte, error) {
	var out [][]byte
	for {
		h := make([]byte, headerLen)
		if _, err := io.ReadFull(r, h); err != nil {
			return nil, err
		}
		size := int(binary.BigEndian.Uint16(h[2:4]))
		if size < headerLen {
			return nil, fmt.Errorf("packet length %d is shorter than its header", size)
		}
		p := make([]byte, size)
		copy(p, h)
		if _, err := io.ReadFull(r, p[headerLen:]); err != nil {
			return nil, err
		}
		out = append(out, p)
		if h[1]&statusEOM != 0 {
			return out, nil
		}
	}
}

func joinPayload(pkts [][]byte) []byte {
	var b []byte
	for _, p := range pkts {
		b = append(b, p[headerLen:]...)
	}
	return b
}

// maxPacket is the largest packet of a message: the rewritten packets are no
// larger than the server's.
func maxPacket(pkts [][]byte) int {
	m := 0
	for _, p := range pkts {
		m = max(m, len(p))
	}
	return m
}

// split cuts payload into packets of at most size bytes with the header
// template's type, status and SPID, numbering them from 1 and marking the
// last one end-of-message.
func split(tmpl, payload []byte, size int) [][]byte {
	room := max(size-headerLen, 1)
	var out [][]byte
	for id := 1; ; id++ {
		k := min(room, len(payload))
		p := make([]byte, headerLen+k)
		copy(p, tmpl)
		p[1] = tmpl[1] &^ statusEOM
		if k == len(payload) {
			p[1] |= statusEOM
		}
		binary.BigEndian.PutUint16(p[2:4], uint16(headerLen+k))
		p[6] = byte(id)
		copy(p[headerLen:], payload[:k])
		out = append(out, p)
		payload = payload[k:]
		if len(payload) == 0 {
			return out
		}
	}
}

// errStop ends the walk over tokens at a token not known here: the
// rest of the message passes unchanged.
var errStop = errors.New("unknown token")

// FixLoginResponse rewrites every collation ENVCHANGE of a login
// response's token stream that carries an old value, and
// returns the new stream and how many it rewrote. It walks the tokens a
// login response holds (ENVCHANGE, INFO, ERROR, LOGINACK, FEATUREEXTACK,
// DONE); at any other token, or a stream it cannot parse, it leaves the
// rest as it is.
func FixLoginResponse(b []byte) ([]byte, int) {
	out := make([]byte, 0, len(b))
	fixed := 0
	i := 0
	for i < len(b) {
		tok := b[i]
		var end int
		switch tok {
		case tokEnvChange, tokInfo, tokError, tokLoginAck:
			if i+3 > len(b) {
				return append(out, b[i:]...), fixed
			}
			end = i + 3 + int(binary.LittleEndian.Uint16(b[i+1:]))
			if end > len(b) {
				return append(out, b[i:]...), fixed
			}
			if tok == tokEnvChange {
				if t, ok := fixCollation(b[i:end]); ok {
					out = append(out, t...)
					fixed++
					i = end
					continue
				}
			}
		case tokFeatureExtAck:
			e, err := featureExtAckEnd(b, i+1)
			if err != nil {
				return append(out, b[i:]...), fixed
			}
			end = e
		case tokDone, tokDoneProc, tokDoneInProc:
			end = min(i+1+doneLen, len(b))
		default:
			return append(out, b[i:]...), fixed
		}
		out = append(out, b[i:end]...)
		i = end
	}
	return out, fixed
}

// fixCollation returns the ENVCHANGE token t with the old value of a
// collation change emptied (ok), or ok false when t is another change or
// already right. t is the whole token: type byte, 2-byte length, body
// (change type, new value and old value, each a length byte and bytes).
func fixCollation(t []byte) ([]byte, bool) {
	body := t[3:]
	if len(body) < 2 || body[0] != envSQLCollation {
		return nil, false
	}
	newLen := int(body[1])
	if 2+newLen >= len(body) || body[2+newLen] == 0 {
		return nil, false
	}
	out := make([]byte, 0, 3+2+newLen+1)
	out = append(out, tokEnvChange, 0, 0)
	out = append(out, body[:2+newLen]...)
	out = append(out, 0) // no old value
	binary.LittleEndian.PutUint16(out[1:], uint16(len(out)-3))
	return out, true
}

// featureExtAckEnd is where a FEATUREEXTACK token whose body starts at i
// ends: feature id, 4-byte length and data, repeated until the 0xFF
// terminator.
func featureExtAckEnd(b []byte, i int) (int, error) {
	for {
		if i >= len(b) {
			return 0, errStop
		}
		if b[i] == 0xFF {
			return i + 1, nil
		}
		if i+5 > len(b) {
			return 0, errStop
		}
		i += 5 + int(binary.LittleEndian.Uint32(b[i+1:]))
	}
}
