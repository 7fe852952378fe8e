package cluster

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
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
