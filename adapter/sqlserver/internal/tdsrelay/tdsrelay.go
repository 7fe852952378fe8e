// Package tdsrelay is a TDS relay used only by the sqlserver adapter's
// tests: it stands between go-mssqldb and Iridium SQL 0.1.13 (the SQL
// Server stand-in that runs on this machine) and rewrites exactly the two
// defects of Iridium's protocol that stop the official driver from
// connecting; every other byte passes unchanged, both ways.
//
//  1. Iridium answers the PRELOGIN request with a packet of type 0x12
//     (PRELOGIN) where TDS requires 0x04 (tabular result); go-mssqldb
//     refuses it ("expected packet type 4"). The relay retypes the packets
//     of the first server message to 0x04.
//  2. In its login response, Iridium's ENVCHANGE token for the SQL
//     collation (type 7) carries an old value of 5 bytes (the collation
//     again) where TDS sends none at login; go-mssqldb reads the old value
//     as an empty string's length and then 10 bytes of UTF-16, runs past
//     the token and drops the connection. The relay empties the old value
//     (5 bytes fewer) and shortens the token's length to match.
//
// It is a stand-in's workaround, not part of fieldbench: a real SQL Server
// needs none of it, and nothing outside the tests uses it. It does not
// speak TLS: the client must connect with encrypt=disable (Iridium offers
// no encryption either).
package tdsrelay

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
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

// Relay accepts TDS clients on a loopback port and forwards each to the
// upstream server, fixing the server's first two messages.
type Relay struct {
	ln       net.Listener
	upstream string
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	closed   bool
	// Fixed counts the rewrites made, for the tests to check that the
	// relay did something and no more than it says.
	fixed Counts
}

// Counts are the rewrites a relay made.
type Counts struct {
	PreloginPackets int // packets retyped from 0x12 to 0x04
	Collations      int // collation ENVCHANGE tokens whose old value was dropped
}

// Start listens on a free port of 127.0.0.1 and relays to upstream
// (host:port).
func Start(upstream string) (*Relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("tdsrelay: listen: %w", err)
	}
	r := &Relay{ln: ln, upstream: upstream, conns: map[net.Conn]struct{}{}}
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

// Addr is the relay's host:port.
func (r *Relay) Addr() string { return r.ln.Addr().String() }

// Counts returns the rewrites made so far.
func (r *Relay) Counts() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fixed
}

// Close stops listening, closes every relayed connection and waits for
// their goroutines.
func (r *Relay) Close() error {
	r.mu.Lock()
	r.closed = true
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	err := r.ln.Close()
	r.wg.Wait()
	return err
}

// track registers c to be closed by Close; false when the relay is closed.
func (r *Relay) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *Relay) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
	c.Close()
}

func (r *Relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.serve(c)
		}()
	}
}

// serve relays one client connection until either side closes.
func (r *Relay) serve(client net.Conn) {
	if !r.track(client) {
		client.Close()
		return
	}
	defer r.untrack(client)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	d := net.Dialer{}
	server, err := d.DialContext(ctx, "tcp", r.upstream)
	cancel()
	if err != nil {
		return
	}
	if !r.track(server) {
		server.Close()
		return
	}
	defer r.untrack(server)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(server, client)
		server.Close()
	}()
	var n Counts
	if err := Fix(client, server, &n); err == nil {
		r.mu.Lock()
		r.fixed.PreloginPackets += n.PreloginPackets
		r.fixed.Collations += n.Collations
		r.mu.Unlock()
		_, _ = io.Copy(client, server)
	}
	client.Close()
	<-done
}

// Fix copies the server's first two messages from server to client with
// the defects rewritten (the pre-login response, then the login
// response), counting what it changed into n. The caller copies the rest.
func Fix(client io.Writer, server io.Reader, n *Counts) error {
	pre, err := readMessage(server)
	if err != nil {
		return fmt.Errorf("tdsrelay: pre-login response: %w", err)
	}
	for _, p := range pre {
		if p[0] == typePrelogin {
			p[0] = typeReply
			n.PreloginPackets++
		}
		if _, err := client.Write(p); err != nil {
			return err
		}
	}
	login, err := readMessage(server)
	if err != nil {
		return fmt.Errorf("tdsrelay: login response: %w", err)
	}
	payload, fixed := FixLoginResponse(joinPayload(login))
	n.Collations += fixed
	for _, p := range split(login[0][:headerLen], payload, maxPacket(login)) {
		if _, err := client.Write(p); err != nil {
			return err
		}
	}
	return nil
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

// maxPacket is the largest packet of a message: the relay's packets are no
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

// errStop ends the walk over tokens at one the relay does not know: the
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
