package cluster

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Finding 2 of issue 13: `cluster up redis --nodes 1000` had no limit.
func TestCheckNodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		engine string
		nodes  int
		extra  map[string]string
		want   string // "" = accepted, else a part of the error
	}{
		{"redis", 1000, nil, "more than the 64"},
		{"redis", 64, nil, ""},
		{"redis", 17, map[string]string{"replicas": "3"}, "17 master(s) × (1 + 3 replicas) = 68 servers"},
		{"redis", 16, map[string]string{"replicas": "3"}, ""},
		{"postgres", 17, nil, "more than the 16"},
		{"mariadb", 10, nil, "buffer pool"},
		{"cassandra", 8, nil, ""},
		{"cassandra", 9, nil, "JVM"},
		{"postgres", 0, nil, "at least 1"},
		{"hbase", 3, nil, ""},
	} {
		err := CheckNodes(tc.engine, tc.nodes, tc.extra)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s --nodes %d: %v", tc.engine, tc.nodes, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s --nodes %d: error %v, want one saying %q", tc.engine, tc.nodes, err, tc.want)
		}
	}
}

// Finding 2 of issue 13: an interrupted `cluster up` left its servers
// running and no state to find them by. With the state prepared before the
// first start, every server is in the SpawnLog as soon as it exists, so
// even a `cluster up` killed before Up returned (nothing but the directory
// to go by) is cleaned up by StopSpawned. Against real redis-servers.
func TestInterruptedUpStopsEveryServer(t *testing.T) {
	needRedis(t)
	dir := t.TempDir()
	prep, err := Prepare(dir, "redis")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := Load(dir); err != nil || st.Engine != "redis" || len(st.Nodes) != 0 || prep.Dir != dir {
		t.Fatalf("prepared state: %+v, %v", st, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Interrupt once two servers run: Up is then starting the third of six.
	seen := make(chan []int, 1)
	go func() {
		for ctx.Err() == nil {
			if pids, _ := Spawned(dir); len(pids) >= 2 {
				seen <- pids
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		close(seen)
	}()
	_, upErr := redisEngine{}.Up(ctx, dir, Options{Nodes: 6})
	during, ok := <-seen
	if !ok {
		t.Fatalf("the SpawnLog never listed two running servers while Up ran (Up: %v)", upErr)
	}
	if upErr == nil || !errors.Is(upErr, context.Canceled) {
		t.Fatalf("Up after cancel: %v, want context.Canceled", upErr)
	}
	b, err := os.ReadFile(dir + "/" + SpawnLog)
	if err != nil {
		t.Fatal(err)
	}
	recorded := strings.Count(string(b), "\n")
	n, err := StopSpawned(dir, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Up itself kills the server it was waiting for when cancelled; the
	// others are left to StopSpawned.
	if n < 1 {
		t.Errorf("StopSpawned stopped %d server(s); %d were running when Up was interrupted", n, len(during))
	}
	if left, err := Spawned(dir); err != nil || len(left) != 0 {
		t.Errorf("servers still running after StopSpawned: %v (%v)", left, err)
	}
	t.Logf("interrupted after %d server(s) started (%d lines in the SpawnLog); StopSpawned stopped %d", len(during), recorded, n)
}

// A process announced in the SpawnLog but never recorded (fieldbench
// SIGKILLed between the fork and the second line, which happened once in
// a manual trial and left one redis-server behind) is found by program and
// working directory, and stopped.
func TestStopSpawnedFindsAnnouncedProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := Prepare(dir, "redis"); err != nil {
		t.Fatal(err)
	}
	cmd, done := announcedSleep(t, dir, false)
	pids, err := Spawned(dir)
	if err != nil || len(pids) != 1 || pids[0] != cmd.Process.Pid {
		t.Fatalf("Spawned = %v, %v; want [%d]", pids, err, cmd.Process.Pid)
	}
	if n, err := StopSpawned(dir, 5*time.Second); err != nil || n != 1 {
		t.Fatalf("StopSpawned = %d, %v", n, err)
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the announced process still runs after StopSpawned")
	}
}

// needRedis skips a test with -short where redis-server is not installed
// (and fails it without -short: the servers are part of the test setup).
func needRedis(t *testing.T) {
	t.Helper()
	if err := (redisEngine{}).Check(); err != nil {
		if testing.Short() {
			t.Skip(err)
		}
		t.Fatal(err)
	}
}

// announcedSleep starts `sleep 300` in dir/node1 of the cluster prepared
// in dir, announced in its SpawnLog as Start announces a server before
// the fork, and recorded with its PID too when record is set (a server
// that started but never became a node). done receives its Wait.
func announcedSleep(t *testing.T, dir string, record bool) (*exec.Cmd, <-chan error) {
	t.Helper()
	node := filepath.Join(dir, "node1")
	if err := os.MkdirAll(node, 0o755); err != nil {
		t.Fatal(err)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip(err)
	}
	if err := recordSpawn(node, 0, sleep); err != nil { // the announcement
		t.Fatal(err)
	}
	cmd := exec.Command(sleep, "300")
	cmd.Dir = node
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	if record {
		if err := recordSpawn(node, cmd.Process.Pid, sleep); err != nil {
			t.Fatal(err)
		}
	}
	return cmd, done
}
