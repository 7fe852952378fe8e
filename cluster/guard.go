package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// CheckNodes refuses a node count that engine cannot sensibly start on
// one machine, saying why (`cluster up redis --nodes 1000` once started
// servers until it was killed); extra are the --opt options (Redis
// replicas multiply its servers). The engine sets its own limit
// (NodeLimiter); one without, or a name no engine is registered under,
// accepts any count its own options allow. HBase bounds its region
// servers in its options (hbaseMaxRegionServers).
func CheckNodes(engine string, nodes int, extra map[string]string) error {
	if nodes < 1 {
		return fmt.Errorf("--nodes must be at least 1 (got %d)", nodes)
	}
	e, err := Get(engine)
	if err != nil {
		return nil
	}
	if nl, ok := e.(NodeLimiter); ok {
		return nl.CheckNodes(nodes, extra)
	}
	return nil
}

// NodeLimit is a NodeLimiter's CheckNodes for an engine whose every node
// is one server: nodes above limit are refused, saying why.
func NodeLimit(engine string, nodes, limit int, reason string) error {
	if nodes > limit {
		return TooManyNodes(engine, fmt.Sprintf("%d node(s)", nodes), limit, reason)
	}
	return nil
}

// TooManyNodes is the refusal of a node count: what was asked (nodes, or
// servers they make), the limit and the engine's reason.
func TooManyNodes(engine, what string, limit int, reason string) error {
	return fmt.Errorf("%s: %s is more than the %d this machine can run: %s", engine, what, limit, reason)
}

// SpawnLog is the file, in a cluster's directory, that lists every server
// process started for the cluster, one tab-separated line each. Start
// appends (and syncs) "0 0 PATH DIR" before it forks, naming the program
// and the directory it runs in, then "PID STARTTIME PATH DIR" the moment
// the process exists. A `cluster up` interrupted or killed at any point,
// even between the fork and the second line, leaves no server that
// StopSpawned cannot find.
const SpawnLog = "spawned.pids"

// Prepare writes the initial state of a cluster about to be started in
// dir: cluster.json naming the engine with no node yet. From then on Start
// records each server it starts under dir in SpawnLog, and `cluster down`
// finds them even if `cluster up` never returns.
func Prepare(dir, engine string) (*Cluster, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster directory: %w", err)
	}
	c := &Cluster{Engine: engine, Dir: dir, Started: time.Now().UTC()}
	if err := c.Save(); err != nil {
		return nil, err
	}
	return c, nil
}

var spawnMu sync.Mutex

// spawnLogFor is the SpawnLog of the cluster a process started in dir
// belongs to: the nearest directory at or above dir (at most four levels)
// holding cluster.json, or "" when there is none (a server started outside
// any cluster, as some tests do).
func spawnLogFor(dir string) string {
	if dir == "" {
		return ""
	}
	d, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for i := 0; i < 5; i++ {
		if _, err := os.Stat(filepath.Join(d, StateFile)); err == nil {
			return filepath.Join(d, SpawnLog)
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	return ""
}

// recordSpawn appends a line to the SpawnLog of the cluster that dir
// belongs to, if any: pid 0 for a process about to start in dir.
func recordSpawn(dir string, pid int, path string) error {
	log := spawnLogFor(dir)
	if log == "" {
		return nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	spawnMu.Lock()
	defer spawnMu.Unlock()
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("record started server: %w", err)
	}
	var start uint64
	if pid > 0 {
		start = procStartTime(pid)
	}
	_, werr := fmt.Fprintf(f, "%d\t%d\t%s\t%s\n", pid, start, path, abs)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return fmt.Errorf("record started server in %s: %w", log, err)
	}
	return nil
}

// procStartTime is the start time of pid in clock ticks since boot
// (/proc/PID/stat field 22), which tells a server from a later process
// that reused its PID; 0 when unknown.
func procStartTime(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// Spawned lists the processes of dir's SpawnLog still running: each
// recorded PID that is still the process Start started (alive, same start
// time), and for each process announced but never recorded (fieldbench
// killed between the two lines), any running process of that program
// whose working directory is the one announced.
func Spawned(dir string) ([]int, error) {
	f, err := os.Open(filepath.Join(dir, SpawnLog))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var pids []int
	seen := map[int]bool{}
	add := func(pid int) {
		if !seen[pid] {
			seen[pid] = true
			pids = append(pids, pid)
		}
	}
	type place struct{ prog, dir string }
	announced := map[place]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) != 4 {
			continue
		}
		pid, err1 := strconv.Atoi(fields[0])
		start, err2 := strconv.ParseUint(fields[1], 10, 64)
		if err1 != nil || err2 != nil || pid < 0 {
			continue
		}
		if pid == 0 {
			announced[place{filepath.Base(fields[2]), fields[3]}] = true
			continue
		}
		if Alive(pid) && (start == 0 || procStartTime(pid) == start) {
			add(pid)
		}
	}
	if err := sc.Err(); err != nil {
		return pids, err
	}
	if len(announced) == 0 {
		return pids, nil
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil || seen[pid] || pid == os.Getpid() {
			continue
		}
		cwd, err := os.Readlink(filepath.Join(p, "cwd"))
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join(p, "exe"))
		if err != nil {
			continue
		}
		if announced[place{filepath.Base(exe), cwd}] && Alive(pid) {
			add(pid)
		}
	}
	return pids, nil
}

// StopSpawned stops every server still running that Start started for the
// cluster in dir (see SpawnLog), all at once (SIGTERM, SIGKILL after
// grace), and returns how many it stopped. `cluster up` calls it when
// interrupted and `cluster down` after the engine's Down, so nothing a
// cluster started outlives it.
func StopSpawned(dir string, grace time.Duration) (int, error) {
	pids, err := Spawned(dir)
	if err != nil {
		return 0, err
	}
	errs := make([]error, len(pids))
	var wg sync.WaitGroup
	for i, pid := range pids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = Stop(pid, grace)
		}()
	}
	wg.Wait()
	return len(pids), errors.Join(errs...)
}

// PortsFree reports whether every port can be bound on host right now (a
// restarted node takes its old ports back when they are).
func PortsFree(host string, ports []int) bool {
	for _, p := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}
