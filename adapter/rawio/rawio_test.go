package rawio_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/adapter/rawio"
)

// echoServer echoes every connection on a loopback port until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// TestWrappedConn: through a real loopback socket, a payload far larger
// than the socket buffers comes back whole (writes that find the buffer
// full wait for room, reads that find nothing wait for data), a read past
// its deadline fails as a timeout, and a closed peer reads as io.EOF.
func TestWrappedConn(t *testing.T) {
	t.Parallel()
	addr := echoServer(t)
	for _, tc := range []struct {
		name string
		size int
	}{{"small", 100}, {"larger than the socket buffers", 8 << 20}} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := rawio.Dial(nil)(context.Background(), "tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, plain := c.(*net.TCPConn); plain && runtime.GOOS == "linux" {
				t.Fatal("Dial returned the plain connection on Linux")
			}
			want := bytes.Repeat([]byte("fieldbench"), tc.size/10+1)[:tc.size]
			errc := make(chan error, 1)
			go func() {
				_, err := c.Write(want)
				errc <- err
			}()
			got := make([]byte, len(want))
			if _, err := io.ReadFull(c, got); err != nil {
				t.Fatal(err)
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatal("the echo differs from what was written")
			}
		})
	}
	t.Run("deadline and EOF", func(t *testing.T) {
		c, err := rawio.Dial(nil)(context.Background(), "tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		var ne net.Error
		if _, err := c.Read(make([]byte, 10)); !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("read past the deadline: %v, want a timeout", err)
		}
		c.Close()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			if s, err := ln.Accept(); err == nil {
				s.Close()
			}
		}()
		c, err = rawio.Dial(nil)(context.Background(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Read(make([]byte, 10)); err != io.EOF {
			t.Fatalf("read from a closed peer: %v, want io.EOF", err)
		}
	})
}

// TestDeadline: an exchange bounded by its context's deadline leaves no
// deadline behind once stopped (the connection's next user reads long
// after it), and a cancellation ends a blocked read at once, after which
// stop reports it.
func TestDeadline(t *testing.T) {
	addr := echoServer(t)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := rawio.Wrap(nc)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	stop := rawio.Deadline(ctx, c, 0)
	if !stop() {
		t.Fatal("stop reported a cancellation that did not happen")
	}
	cancel()
	time.Sleep(100 * time.Millisecond) // past the deadline the exchange had
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("read after the exchange's deadline passed: %v (a deadline was left behind)", err)
	}

	ctx, cancel = context.WithCancel(context.Background())
	stop = rawio.Deadline(ctx, c, time.Minute)
	time.AfterFunc(50*time.Millisecond, cancel)
	var ne net.Error
	if _, err := c.Read(b); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read blocked when the context was cancelled = %v; want a timeout", err)
	}
	if stop() {
		t.Fatal("stop did not report the cancellation")
	}
}

// TestWrappedConnAllocs: a request written and its echo read back allocate
// nothing (the state of a raw read or write lives in the connection, not
// in a closure per call).
func TestWrappedConnAllocs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("raw reads and writes are Linux-only")
	}
	c, err := rawio.Dial(nil)(context.Background(), "tcp", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req, reply := []byte("one request"), make([]byte, 64)
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, reply[:len(req)]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%.1f allocations per write and read, want 0", allocs)
	}
}

// TestWrappedConnConcurrent: two goroutines reading and one writing on one
// connection at once (as net.Conn allows) get every byte exactly once;
// under -race this also checks the state the raw calls share.
func TestWrappedConnConcurrent(t *testing.T) {
	t.Parallel()
	c, err := rawio.Dial(nil)(context.Background(), "tcp", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const total = 1 << 20
	var got [2]int
	done := make(chan error, 2)
	var left = make(chan int, 1)
	left <- total
	for i := range got {
		go func() {
			buf := make([]byte, 4096)
			for {
				n, err := c.Read(buf)
				if err != nil {
					done <- err
					return
				}
				got[i] += n
				rest := <-left - n
				left <- rest
				if rest <= 0 {
					c.SetReadDeadline(time.Now()) // wakes the other reader
					done <- nil
					return
				}
			}
		}()
	}
	chunk := bytes.Repeat([]byte{'x'}, 1000)
	for sent := 0; sent < total; sent += len(chunk) {
		if _, err := c.Write(chunk[:min(len(chunk), total-sent)]); err != nil {
			t.Fatal(err)
		}
	}
	for range got {
		err := <-done
		var ne net.Error
		if err != nil && !(errors.As(err, &ne) && ne.Timeout()) {
			t.Fatal(err)
		}
	}
	if got[0]+got[1] != total {
		t.Errorf("read %d + %d bytes, want %d in all", got[0], got[1], total)
	}
}
