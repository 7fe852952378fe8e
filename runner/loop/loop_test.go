//go:build linux

package loop

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fieldbench/fieldbench/recorder"
)

// The test server speaks a line protocol: a request is "KEY\n" or
// "KEY PADDING\n"; the reply is "KEY:SIZE\n" and SIZE bytes, or "E\n" for
// keys divisible by 13 and negative keys divisible by 7 (a failed
// operation). Key 7 answers 300 kB, more than a connection's first buffer;
// a negative key, an empty value, after secondDelay before the server reads
// the request. behave can make it close a connection or fall silent.
type behaviour int

// secondDelay is how long the server waits before it reads a request of a
// negative key (an operation's second exchange).
const secondDelay = 5 * time.Millisecond

// bigPadding pads the second request of key 7: more than the socket
// buffers of both ends hold, so the loop must wait for room to send it.
const bigPadding = 32 << 20

const (
	answer behaviour = iota
	closeAfter3
	silent
)

func replySize(key int64) int {
	switch {
	case key < 0:
		return 0
	case key == 7:
		return 300 << 10
	}
	return int(key%5) * 1000
}

func serve(t *testing.T, b behaviour) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer nc.Close()
				br := bufio.NewReader(nc)
				for n := 0; ; n++ {
					if p, err := br.Peek(1); err == nil && p[0] == '-' {
						time.Sleep(secondDelay) // before reading: a large request fills the buffers
					}
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					switch {
					case b == closeAfter3 && n == 3:
						return
					case b == silent:
						continue
					}
					k, _, _ := strings.Cut(strings.TrimSpace(line), " ")
					key, _ := strconv.ParseInt(k, 10, 64)
					if key%13 == 0 || key < 0 && key%7 == 0 {
						nc.Write([]byte("E\n"))
						continue
					}
					size := replySize(key)
					nc.Write(append(fmt.Appendf(nil, "%d:%d\n", key, size), bytes.Repeat([]byte{'x'}, size)...))
				}
			})
		}
	})
	return ln.Addr().String()
}

// lineConn is the test protocol's Conn; it checks that each reply answers
// the key it asked for. Operation 1 takes two exchanges: the key, then its
// negation (the server answers -KEY with an empty value).
type lineConn struct {
	fd        int
	op        int
	asked     int64
	followUps int // second exchanges sent
	closed    bool
}

func (c *lineConn) FD() int { return c.fd }

func (c *lineConn) AppendRequest(dst []byte, op int, key int64) []byte {
	c.op, c.asked = op, key
	return append(strconv.AppendInt(dst, key, 10), '\n')
}

func (c *lineConn) FollowUp(dst []byte) ([]byte, bool) {
	if c.op != 1 || c.asked < 0 {
		return dst, false
	}
	c.asked = -c.asked
	c.followUps++
	dst = strconv.AppendInt(dst, c.asked, 10)
	if c.asked == -7 {
		dst = append(append(dst, ' '), bytes.Repeat([]byte{'p'}, bigPadding)...)
	}
	return append(dst, '\n'), true
}

func (c *lineConn) Reply(buf []byte) (int, error, error) {
	i := bytes.IndexByte(buf, '\n')
	if i < 0 {
		return 0, nil, nil
	}
	if string(buf[:i]) == "E" {
		return i + 1, fmt.Errorf("key %d refused", c.asked), nil
	}
	k, s, ok := strings.Cut(string(buf[:i]), ":")
	key, err1 := strconv.ParseInt(k, 10, 64)
	size, err2 := strconv.Atoi(s)
	switch {
	case !ok || err1 != nil || err2 != nil:
		return 0, nil, fmt.Errorf("malformed header %q", buf[:i])
	case key != c.asked:
		return 0, nil, fmt.Errorf("reply for key %d, asked %d", key, c.asked)
	case len(buf) < i+1+size:
		return 0, nil, nil
	}
	return i + 1 + size, nil, nil
}

func (c *lineConn) Close() error { c.closed = true; return unix.Close(c.fd) }

// counter's requests are 1, 2, 3, ... from its own start; mixed, the odd
// ones are operation 1 (two exchanges), the even ones operation 0.
type counter struct {
	from, n int64
	mixed   bool
	acked   [2]int64
}

func (c *counter) Next() int {
	c.n++
	if c.mixed {
		return int(c.n % 2)
	}
	return 0
}
func (c *counter) ID() int64           { return c.from + c.n }
func (c *counter) Acknowledged(op int) { c.acked[op]++ }

// dialLines opens n detached connections to the test server at addr, each
// with a counter client (client i asks from i*100+1; mixed: see counter)
// and a handle of rec; they are closed when the test ends.
func dialLines(t *testing.T, addr string, n int, mixed bool, rec *recorder.Recorder) ([]Conn, []Client, []*recorder.Handle, []*lineConn) {
	t.Helper()
	conns := make([]Conn, n)
	clients := make([]Client, n)
	handles := make([]*recorder.Handle, n)
	lcs := make([]*lineConn, n)
	for i := range conns {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fd, err := Detach(nc)
		if err != nil {
			t.Fatal(err)
		}
		lcs[i] = &lineConn{fd: fd}
		t.Cleanup(func() { lcs[i].Close() })
		conns[i], clients[i], handles[i] = lcs[i], &counter{from: int64(i) * 100, mixed: mixed}, rec.Handle()
	}
	return conns, clients, handles, lcs
}

func TestRun(t *testing.T) {
	tests := []struct {
		name      string
		behave    behaviour
		clients   int
		per       int64
		cancel    bool // ctx ends before the run
		timeout   time.Duration
		wantOK    int64
		wantErrs  int64
		wantFatal error  // errors.Is
		fatalText string // or a substring of the error
		wantStop  bool
	}{
		// Client i asks from i*100+1: over 1..60, 101..160, 201..260 the
		// multiples of 13 are 4+5+5 = 14 refused keys; key 7 is big.
		{name: "answers", clients: 3, per: 60, wantOK: 180 - 14, wantErrs: 14},
		{name: "one client", clients: 1, per: 12, wantOK: 12},
		{name: "no requests", clients: 2, per: 0},
		{name: "cancelled: nothing new is sent, what was sent is answered", clients: 2, per: 50, cancel: true, wantOK: 2, wantStop: true},
		{name: "server closes", behave: closeAfter3, clients: 2, per: 10, wantFatal: ErrClosed},
		{name: "server silent", behave: silent, clients: 1, per: 5, timeout: 300 * time.Millisecond, fatalText: "no reply from the server in 300ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := serve(t, tc.behave)
			rec := recorder.New([]string{"get"}, time.Now())
			conns, clients, handles, _ := dialLines(t, addr, tc.clients, false, rec)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				cancel()
			}
			stopped, err := Run(ctx, conns, clients, handles, tc.per, tc.timeout)
			switch {
			case tc.wantFatal != nil:
				if !errors.Is(err, tc.wantFatal) {
					t.Fatalf("Run error = %v; want %v", err, tc.wantFatal)
				}
				return
			case tc.fatalText != "":
				if err == nil || !strings.Contains(err.Error(), tc.fatalText) {
					t.Fatalf("Run error = %v; want one saying %q", err, tc.fatalText)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if stopped != tc.wantStop {
				t.Errorf("interrupted = %v; want %v", stopped, tc.wantStop)
			}
			s := rec.Tick(time.Now())
			var errs int64
			for _, n := range s.Errors[0] {
				errs += n
			}
			if got := s.Hists[0].TotalCount(); got != tc.wantOK || errs != tc.wantErrs {
				t.Errorf("recorded %d answers and %d errors; want %d and %d", got, errs, tc.wantOK, tc.wantErrs)
			}
			for i, c := range clients {
				if want := min(tc.per, 1); tc.cancel && c.(*counter).n != want {
					t.Errorf("client %d sent %d requests after the cancel; want %d", i, c.(*counter).n, want)
				} else if !tc.cancel && c.(*counter).n != tc.per {
					t.Errorf("client %d sent %d requests; want %d", i, c.(*counter).n, tc.per)
				}
			}
		})
	}
}

func TestRunLengthMismatch(t *testing.T) {
	_, err := Run(context.Background(), []Conn{&lineConn{}}, nil, nil, 1, 0)
	if err == nil || !strings.Contains(err.Error(), "1 connections for 0 clients") {
		t.Fatalf("Run error = %v; want the mismatch named", err)
	}
}

func TestDetachRefusesNonSockets(t *testing.T) {
	a, b := net.Pipe()
	defer b.Close()
	if _, err := Detach(a); err == nil || !strings.Contains(err.Error(), "not a plain socket") {
		t.Fatalf("Detach(net.Pipe) error = %v; want a refusal", err)
	}
}

// TestRunFollowUp: an operation of two exchanges sends its second request
// when the first reply is whole, is recorded once (from its first request
// to its last reply, so never shorter than the server's delay before the
// second) and acknowledged once; one refused on either exchange counts as
// its operation's error, and one refused on its first sends no second. A
// second request larger than the socket buffers (key 7's) is sent in
// parts as room appears.
func TestRunFollowUp(t *testing.T) {
	addr := serve(t, answer)
	rec := recorder.New([]string{"get", "update"}, time.Now())
	const clients, per = 2, 20
	conns, cs, handles, lcs := dialLines(t, addr, clients, true, rec)
	if _, err := Run(context.Background(), conns, cs, handles, per, 0); err != nil {
		t.Fatal(err)
	}
	// Keys 1..20 and 101..120; odd ones are operation 1. Refused on the
	// first exchange (multiples of 13): 13 and 117 (operation 1), 104
	// (operation 0); on the second (multiples of 7): 7, 105, 119.
	s := rec.Tick(time.Now())
	if low := s.Hists[1].Min(); low < secondDelay.Microseconds()*99/100 { // HDR keeps 3 digits
		t.Errorf("an operation of two exchanges took %d µs; the server alone waited %v", low, secondDelay)
	}
	for op, want := range [2]struct{ ok, errs int64 }{{19, 1}, {15, 5}} {
		var errs int64
		for _, n := range s.Errors[op] {
			errs += n
		}
		if got := s.Hists[op].TotalCount(); got != want.ok || errs != want.errs {
			t.Errorf("operation %d: recorded %d answers and %d errors; want %d and %d", op, got, errs, want.ok, want.errs)
		}
	}
	var acked [2]int64
	followUps := 0
	for i, c := range cs {
		acked[0] += c.(*counter).acked[0]
		acked[1] += c.(*counter).acked[1]
		followUps += lcs[i].followUps
	}
	if acked != [2]int64{19, 15} || followUps != 18 {
		t.Errorf("acknowledged %v, %d second exchanges; want [19 15] and 18", acked, followUps)
	}
}
