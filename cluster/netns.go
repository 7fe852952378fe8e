package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fieldbench/fieldbench/cluster/vnet"
)

// A server that binds every address whatever it is told (CouchbaseMock's
// REST port) runs only inside a network namespace of its own, which holds
// nothing but a loopback interface: nothing outside the namespace, this
// machine included, can reach what it binds. fieldbench creates the
// namespace (`ip netns add`) before the server starts and deletes it in
// Down, and reaches the server through a forwarder: a fieldbench process
// in the machine's own namespace that listens on 127.0.0.1 only, on the
// same port numbers as the server inside, and for each connection opens
// one to 127.0.0.1:port inside the namespace (a socket created by a thread
// switched into it with setns). The forwarder is the fieldbench binary
// itself (os.Executable) started with ForwardEnv set, which this package's
// init recognises before main runs, so any binary that links the cluster
// package (fieldbench, a test binary) can serve as one and a forwarder
// outlives the `cluster up` that started it, as the servers do.

// ForwardEnv, when set in a process's environment, makes it a forwarder
// instead of the program it is: "NETNS PID PORT,PORT...", PID being the
// server's: the forwarder ends when the server has, so it never holds the
// server's ports on the host after it.
const ForwardEnv = "FIELDBENCH_NETNS_FORWARD"

func init() {
	if v := os.Getenv(ForwardEnv); v != "" {
		if err := runForwarder(v); err != nil {
			fmt.Fprintln(os.Stderr, "fieldbench forwarder:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// netnsDir is where `ip netns` keeps its namespaces' names.
const netnsDir = vnet.Dir

// NetnsName is the name of the network namespace of the cluster in dir:
// derived from the directory alone, so Down finds it even when the `cluster
// up` that created it was interrupted before it saved anything.
func NetnsName(prefix, dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	sum := sha256.Sum256([]byte(abs))
	return prefix + hex.EncodeToString(sum[:6])
}

// CheckNetns reports whether this process can create network namespaces:
// root (CAP_SYS_ADMIN) and the ip command.
func CheckNetns() error {
	if os.Geteuid() != 0 {
		return errors.New("a network namespace is needed (the server binds every address) and creating one needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return errors.New("ip not found in PATH: install the Debian package iproute2")
	}
	return nil
}

// CreateNetns creates the network namespace name with its loopback
// interface up (a new namespace's loopback is down). An existing one of
// that name (a cluster directory reused after a crash) is removed first.
func CreateNetns(ctx context.Context, name string) error {
	if err := CheckNetns(); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(netnsDir, name)); err == nil {
		if err := DeleteNetns(ctx, name); err != nil {
			return err
		}
	}
	if err := RunAs(ctx, "", "", "ip", "netns", "add", name); err != nil {
		return fmt.Errorf("create network namespace: %w", err)
	}
	if err := RunAs(ctx, "", "", "ip", "-n", name, "link", "set", "lo", "up"); err != nil {
		_ = DeleteNetns(ctx, name)
		return fmt.Errorf("network namespace %s: loopback up: %w", name, err)
	}
	return nil
}

// DeleteNetns removes the namespace's name; the kernel frees the namespace
// once no process runs in it. A namespace that does not exist is no error.
func DeleteNetns(ctx context.Context, name string) error {
	if _, err := os.Stat(filepath.Join(netnsDir, name)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := RunAs(ctx, "", "", "ip", "netns", "delete", name); err != nil {
		return fmt.Errorf("delete network namespace: %w", err)
	}
	return nil
}

// NetnsExists reports whether the namespace name exists.
func NetnsExists(name string) bool {
	_, err := os.Stat(filepath.Join(netnsDir, name))
	return err == nil
}

// DialNetns opens a TCP connection to addr inside the network namespace
// name (vnet.Dial: a thread switched into it with setns creates the
// socket).
func DialNetns(ctx context.Context, name, addr string) (net.Conn, error) {
	return vnet.Dial(ctx, name, addr)
}

// runForwarder is a forwarder's main: spec is "NETNS PID PORT,PORT...".
// It listens on 127.0.0.1:PORT for each port and joins every connection to
// 127.0.0.1:PORT inside NETNS, until it is signalled or process PID ends.
func runForwarder(spec string) error {
	f := strings.Fields(spec)
	if len(f) != 3 {
		return fmt.Errorf("%s=%q: want \"NETNS PID PORT,PORT...\"", ForwardEnv, spec)
	}
	name, list := f[0], f[2]
	server, err := strconv.Atoi(f[1])
	if err != nil || server <= 0 {
		return fmt.Errorf("%s: bad server pid %q", ForwardEnv, f[1])
	}
	var ls []net.Listener
	for _, p := range strings.Split(list, ",") {
		port, err := strconv.Atoi(p)
		if err != nil || port <= 0 || port > 65535 {
			return fmt.Errorf("%s: bad port %q", ForwardEnv, p)
		}
		l, err := net.Listen("tcp", net.JoinHostPort(Loopback, p))
		if err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		ls = append(ls, l)
	}
	fmt.Printf("forwarding 127.0.0.1:{%s} to the same ports in network namespace %s (server pid %d)\n", list, name, server)
	for _, l := range ls {
		go serveForward(l, name)
	}
	for Alive(server) {
		time.Sleep(500 * time.Millisecond)
	}
	fmt.Printf("server pid %d ended: forwarder exits\n", server)
	return nil
}

// serveForward accepts on l and forwards each connection into the
// namespace, to the same port.
func serveForward(l net.Listener, name string) {
	port := l.Addr().(*net.TCPAddr).Port
	target := net.JoinHostPort(Loopback, strconv.Itoa(port))
	for {
		c, err := l.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			fmt.Fprintf(os.Stderr, "accept on %d: %v\n", port, err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		go func() {
			defer c.Close()
			s, err := DialNetns(context.Background(), name, target)
			if err != nil {
				fmt.Fprintf(os.Stderr, "forward to %s in %s: %v\n", target, name, err)
				return
			}
			defer s.Close()
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetNoDelay(true)
			}
			if tc, ok := s.(*net.TCPConn); ok {
				_ = tc.SetNoDelay(true)
			}
			done := make(chan struct{}, 2)
			pipe := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				if cw, ok := dst.(interface{ CloseWrite() error }); ok {
					_ = cw.CloseWrite()
				}
				done <- struct{}{}
			}
			go pipe(s, c)
			go pipe(c, s)
			<-done
			<-done
		}()
	}
}
