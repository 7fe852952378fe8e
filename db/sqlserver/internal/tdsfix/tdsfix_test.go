package tdsfix

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
)

// packet is one TDS packet of type typ with payload and the status byte.
func packet(typ, status byte, id int, payload []byte) []byte {
	p := make([]byte, headerLen, headerLen+len(payload))
	p[0], p[1] = typ, status
	binary.BigEndian.PutUint16(p[2:4], uint16(headerLen+len(payload)))
	p[6] = byte(id)
	return append(p, payload...)
}

// envChange is an ENVCHANGE token of type typ with B_VARBYTE new and old
// values.
func envChange(typ byte, newV, old []byte) []byte {
	body := []byte{typ, byte(len(newV))}
	body = append(body, newV...)
	body = append(body, byte(len(old)))
	body = append(body, old...)
	t := []byte{tokEnvChange, 0, 0}
	binary.LittleEndian.PutUint16(t[1:], uint16(len(body)))
	return append(t, body...)
}

func ucs2(s string) []byte {
	var b []byte
	for _, r := range utf16.Encode([]rune(s)) {
		b = binary.LittleEndian.AppendUint16(b, r)
	}
	return b
}

// withLen is a token of type tok whose 2-byte length prefixes body.
func withLen(tok byte, body []byte) []byte {
	t := []byte{tok, 0, 0}
	binary.LittleEndian.PutUint16(t[1:], uint16(len(body)))
	return append(t, body...)
}

var collation = []byte{0x09, 0x04, 0x00, 0x00, 0x00}

// iridiumLogin is a login response as Iridium SQL 0.1.13 writes it
// (session/handshake.rs): packet size, database, language and collation
// changes (the collation with oldCollation as its old value), LOGINACK,
// an INFO and DONE.
func iridiumLogin(oldCollation []byte) []byte {
	var s []byte
	s = append(s, envChange(4, ucs2("4096"), ucs2("4096"))...)
	s = append(s, envChange(1, ucs2("fieldbench"), ucs2("master"))...)
	s = append(s, envChange(2, ucs2("us_english"), nil)...)
	s = append(s, envChange(envSQLCollation, collation, oldCollation)...)
	s = append(s, withLen(tokLoginAck, append([]byte{1, 0x74, 0, 0, 4, 4}, ucs2("ab")...))...)
	s = append(s, withLen(tokInfo, []byte("an info message body"))...)
	done := make([]byte, 1+doneLen)
	done[0] = tokDone
	return append(s, done...)
}

func TestFixLoginResponse(t *testing.T) {
	t.Parallel()
	right := envChange(envSQLCollation, collation, nil)
	wrong := envChange(envSQLCollation, collation, collation)
	if len(wrong)-len(right) != 5 {
		t.Fatalf("the defect is 5 extra bytes: %x vs %x", wrong, right)
	}
	iridium := iridiumLogin(collation)
	sqlServer := iridiumLogin(nil)
	for _, tc := range []struct {
		name  string
		in    []byte
		want  []byte
		fixed int
	}{
		{"iridium's login response", iridium, sqlServer, 1},
		{"a right response is left alone", sqlServer, sqlServer, 0},
		{"feature ext ack before the collation", append([]byte{tokFeatureExtAck, 0x0a, 1, 0, 0, 0, 7, 0xFF}, wrong...),
			append([]byte{tokFeatureExtAck, 0x0a, 1, 0, 0, 0, 7, 0xFF}, right...), 1},
		{"an unknown token stops the rewriting", append([]byte{0x81, 1, 2, 3}, wrong...), append([]byte{0x81, 1, 2, 3}, wrong...), 0},
		{"a cut token passes as it is", wrong[:6], wrong[:6], 0},
		{"empty", nil, []byte{}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n := FixLoginResponse(tc.in)
			if !bytes.Equal(got, tc.want) || n != tc.fixed {
				t.Errorf("FixLoginResponse(%x) = %x, %d; want %x, %d", tc.in, got, n, tc.want, tc.fixed)
			}
		})
	}
}

// TestConn serves a connection as Iridium writes it (a pre-login response
// of type 0x12, a login response over two packets with the long collation
// change, then a later message of type 0x12 and a reply) and checks what
// the wrapped client reads, and that the client's bytes reach the server
// unchanged; then the same with a server that writes TDS right, whose
// bytes must all pass unchanged.
func TestConn(t *testing.T) {
	t.Parallel()
	prelogin := []byte{0, 0, 6, 0, 6, 0xff, 16, 0, 0, 0, 0, 0}
	later := packet(typeReply, statusEOM, 1, []byte("rows and more rows"))
	stray := packet(typePrelogin, statusEOM, 1, []byte("not a pre-login response"))
	fromClient := []byte("PRELOGIN request, LOGIN7, SQL batch: any bytes")
	for _, tc := range []struct {
		name    string
		preType byte
		old     []byte
		want    Counts
	}{
		{"iridium", typePrelogin, collation, Counts{PreloginPackets: 1, Collations: 1}},
		{"right TDS passes unchanged", typeReply, nil, Counts{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client, server := net.Pipe()
			defer server.Close()
			login := iridiumLogin(tc.old)
			got := make(chan []byte, 1)
			go func() {
				buf := make([]byte, len(fromClient))
				if _, err := io.ReadFull(server, buf); err != nil {
					buf = nil
				}
				got <- buf
				for _, p := range [][]byte{
					packet(tc.preType, statusEOM, 1, prelogin),
					packet(typeReply, 0, 1, login[:20]),
					packet(typeReply, statusEOM, 2, login[20:]),
					later, stray,
				} {
					if _, err := server.Write(p); err != nil {
						return
					}
				}
			}()
			var n Counter
			c := Wrap(client, &n)
			defer c.Close()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err := c.Write(fromClient); err != nil {
				t.Fatal(err)
			}
			if b := <-got; !bytes.Equal(b, fromClient) {
				t.Errorf("server read %q, want %q", b, fromClient)
			}
			pre, err := readMessage(c)
			if err != nil {
				t.Fatal(err)
			}
			if len(pre) != 1 || pre[0][0] != typeReply || !bytes.Equal(pre[0][headerLen:], prelogin) {
				t.Errorf("pre-login response %x: want type 4 with the same payload", pre)
			}
			lr, err := readMessage(c)
			if err != nil {
				t.Fatal(err)
			}
			if p, want := joinPayload(lr), iridiumLogin(nil); !bytes.Equal(p, want) {
				t.Errorf("login response\n%x\nwant\n%x", p, want)
			}
			for i, p := range lr {
				if p[0] != typeReply || int(p[6]) != i+1 || (p[1]&statusEOM != 0) != (i == len(lr)-1) {
					t.Errorf("login packet %d header %x", i, p[:headerLen])
				}
			}
			if tc.old == nil && len(lr) != 2 {
				t.Errorf("a right login response was packetized again: %d packets", len(lr))
			}
			rest := make([]byte, len(later)+len(stray))
			if _, err := io.ReadFull(c, rest); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(rest, append(append([]byte{}, later...), stray...)) {
				t.Errorf("later messages changed: %x", rest)
			}
			if got := n.Counts(); got != tc.want {
				t.Errorf("counts %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestConnCutResponse: a server that closes in the middle of its
// pre-login response gives an error that says where, on every later read.
func TestConnCutResponse(t *testing.T) {
	t.Parallel()
	client, server := net.Pipe()
	go func() {
		server.Write(packet(typePrelogin, statusEOM, 1, []byte{1, 2, 3, 4})[:10])
		server.Close()
	}()
	c := Wrap(client, nil)
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	for range 2 {
		if _, err := c.Read(make([]byte, 64)); err == nil || !strings.Contains(err.Error(), "pre-login response") {
			t.Fatalf("read error %v, want one about the pre-login response", err)
		}
	}
}
