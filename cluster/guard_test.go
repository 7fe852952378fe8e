package cluster

import (
	"context"
	"errors"
	"os"
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
	if err := (redisEngine{}).Check(); err != nil {
		if testing.Short() {
			t.Skip(err)
		}
		t.Fatal(err)
	}
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
	if n < len(during) {
		t.Errorf("StopSpawned stopped %d server(s); %d were running when Up was interrupted", n, len(during))
	}
	if left, err := Spawned(dir); err != nil || len(left) != 0 {
		t.Errorf("servers still running after StopSpawned: %v (%v)", left, err)
	}
	t.Logf("interrupted after %d server(s) started (%d recorded); StopSpawned stopped %d", len(during), recorded, n)
}
