package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStartWaitStop(t *testing.T) {
	t.Parallel()
	port, err := FreePort(Loopback)
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "srv.log")
	script := "import socket,time\ns=socket.socket()\ns.bind(('127.0.0.1'," + strconv.Itoa(port) + "))\ns.listen()\nprint('listening',flush=True)\ntime.sleep(60)"
	pid, err := Start(Proc{Path: "python3", Args: []string{"-c", script}, LogFile: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := WaitPort(ctx, Loopback, port, pid, log); err != nil {
		t.Fatal(err)
	}
	if !Alive(pid) {
		t.Fatal("server not alive after it listened")
	}
	if err := Stop(pid, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if Alive(pid) {
		t.Fatal("server alive after Stop")
	}
}

func TestWaitPortReportsEarlyExit(t *testing.T) {
	t.Parallel()
	port, _ := FreePort(Loopback)
	log := filepath.Join(t.TempDir(), "srv.log")
	pid, err := Start(Proc{Path: "sh", Args: []string{"-c", "echo cannot bind: address in use; exit 3"}, LogFile: log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = WaitPort(ctx, Loopback, port, pid, log)
	if err == nil || !strings.Contains(err.Error(), "address in use") {
		t.Fatalf("want an error quoting the log, got %v", err)
	}
}

func TestFreePortsDistinct(t *testing.T) {
	t.Parallel()
	ps, err := FreePorts(Loopback, 20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ps {
		if seen[p] || p >= 55000 || p <= 0 {
			t.Fatalf("bad or repeated port %d in %v", p, ps)
		}
		seen[p] = true
	}
}

// TestFreePortBelowEphemeral: a port handed to a server lies below the
// ephemeral range, where no outgoing connection can take it while the
// server is down between a crash and its restart.
func TestFreePortBelowEphemeral(t *testing.T) {
	t.Parallel()
	lo, hi := listenPortRange()
	if hi <= lo {
		t.Skipf("no room below the ephemeral range here (%d-%d)", lo, hi)
	}
	for i := 0; i < 50; i++ {
		p, err := FreePort(Loopback)
		if err != nil {
			t.Fatal(err)
		}
		if p < lo || p >= hi {
			t.Fatalf("port %d outside [%d, %d)", p, lo, hi)
		}
	}
}

func TestStopNode(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name   string
		script string
	}{
		{"exits on SIGTERM", "echo > ready; exec sleep 60"},
		{"ignores SIGTERM: killed after grace", "trap '' TERM; echo > ready; sleep 60 & wait"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wd := filepath.Join(dir, strconv.Itoa(i))
			if err := os.Mkdir(wd, 0o755); err != nil {
				t.Fatal(err)
			}
			pid, err := Start(Proc{Path: "/bin/sh", Args: []string{"-c", tc.script}, Dir: wd, LogFile: filepath.Join(wd, "log")})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) }) // the shell's group, sleep included
			// The shell says when its trap is set (a fixed sleep was
			// too short on a loaded machine).
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if _, err := os.Stat(filepath.Join(wd, "ready")); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the shell never started")
				}
			}
			c := &Cluster{Engine: "test", Nodes: []*Node{{Name: "n1", PID: pid}}}
			t0 := time.Now()
			if err := StopNode(c, "n1", 500*time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if Alive(pid) || c.Nodes[0].PID != 0 || !c.Nodes[0].Stopped {
				t.Fatalf("after StopNode: alive %v, node %+v", Alive(pid), c.Nodes[0])
			}
			if time.Since(t0) > 30*time.Second { // a hang, not a slow machine
				t.Errorf("StopNode took %v", time.Since(t0))
			}
			if err := StopNode(c, "nope", time.Second); err == nil {
				t.Error("StopNode of an unknown node must fail")
			}
		})
	}
}

// TestRetry: a start that failed fast (a port lost to a race) is tried
// again; one that ran out of time is not (starting a slow server again does
// not make it faster, and a joining node would stream its data anew).
func TestRetry(t *testing.T) {
	raced := errors.New("server exited before listening: Address already in use")
	slow := fmt.Errorf("server did not listen on 127.0.0.1:1: %w", context.DeadlineExceeded)
	cases := []struct {
		name      string
		errs      []error // what each attempt returns; nil ends the list
		wantCalls int
		wantErr   bool
	}{
		{"first attempt works", []error{nil}, 1, false},
		{"race then success", []error{raced, nil}, 2, false},
		{"every attempt races", []error{raced, raced, raced}, 3, true},
		{"deadline stops at once", []error{slow, nil}, 1, true},
		{"race then deadline", []error{raced, slow, nil}, 2, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			err := Retry(3, func(int) error {
				calls++
				return c.errs[calls-1]
			})
			if calls != c.wantCalls || (err != nil) != c.wantErr {
				t.Fatalf("calls %d, err %v; want %d calls, error %v", calls, err, c.wantCalls, c.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "gave up after") {
				t.Errorf("error %q does not say it gave up", err)
			}
		})
	}
}

// TestPortHolder names the process that listens on a port, as a refused
// restart does; a port nobody listens on names none.
func TestPortHolder(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	want := fmt.Sprintf(" by pid %d (", os.Getpid())
	if got := portHolder(port); !strings.HasPrefix(got, want) {
		t.Errorf("portHolder(%d) = %q, want %q…", port, got, want)
	}

	// A child that holds the listener too, as a fork does until its exec
	// (here for good, passed to sleep): the holder named is still this
	// process, the one whose parent does not hold it (issue 43: CI named
	// a forked child of the test, pid order having wrapped).
	f, err := l.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sleep", "30")
	child.ExtraFiles = []*os.File{f}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	if got := portHolder(port); !strings.HasPrefix(got, want) {
		t.Errorf("portHolder(%d) with a child holding it too = %q, want %q…", port, got, want)
	}
	if got := parentPID(child.Process.Pid); got != os.Getpid() {
		t.Errorf("parentPID(child) = %d, want %d", got, os.Getpid())
	}
	child.Process.Kill()
	child.Wait()
	l.Close()
	if got := portHolder(port); got != "" {
		t.Errorf("portHolder(%d) of a closed listener = %q, want none", port, got)
	}
}

// TestPortOwner names the process that holds a socket of its own, not a
// child that inherited it, whatever the pids' order.
func TestPortOwner(t *testing.T) {
	t.Parallel()
	parents := map[int]int{100: 1, 90: 100, 95: 90, 200: 1, 300: 1}
	parent := func(pid int) int { return parents[pid] }
	for _, c := range []struct {
		name    string
		holders []int
		want    int
	}{
		{"none", nil, 0},
		{"alone", []int{100}, 100},
		{"child with a lower pid (wrapped)", []int{90, 100}, 100},
		{"grandchild", []int{95, 90, 100}, 100},
		{"two owners: the lower", []int{300, 200}, 200},
		{"child whose parent let go", []int{90}, 90},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := map[int]bool{}
			for _, p := range c.holders {
				h[p] = true
			}
			if got := portOwner(h, parent); got != c.want {
				t.Errorf("portOwner(%v) = %d, want %d", c.holders, got, c.want)
			}
		})
	}
}
