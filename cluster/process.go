package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Loopback is where every server binds: servers started by fieldbench are
// never reachable from outside this machine.
const Loopback = "127.0.0.1"

// FreePort returns a port that is free on host right now, chosen below
// the kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range).
// Why not port 0: the kernel answers with an ephemeral port, the kind it
// also hands to every outgoing connection, so a node stopped and
// restarted on its ports (a crash scenario) could find one taken by some
// client's connection in between ("Address already in use", seen with
// HBase). Ports below the range are only ever taken by a listener. The
// port can still be lost to a race before the server binds it: engines
// retry Start with a new port when the server fails to bind (see Retry).
func FreePort(host string) (int, error) {
	lo, hi := listenPortRange()
	for i := 0; i < 200 && hi > lo; i++ {
		p := lo + rand.IntN(hi-lo)
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			continue
		}
		l.Close()
		return p, nil
	}
	// Nothing free below the ephemeral range (or no such range): let
	// the kernel choose.
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", host, err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// listenPortRange is where FreePort looks: from 10000 (above the ports
// of well-known services) to the start of the ephemeral range, capped at
// 55000 since Redis Cluster listens on port+10000 for its bus too.
func listenPortRange() (lo, hi int) {
	lo, hi = 10000, 32768 // Linux's default ephemeral range starts at 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				hi = n
			}
		}
	}
	return lo, min(hi, 55000)
}

// PortLinger bounds how long a restart waits for a killed node's ports to
// be free: the kernel closes a dead process's sockets a moment after it
// is gone (seen here: an HBase region server's listener still bound right
// after its JVM was reaped, free a moment later), longer on a loaded
// machine. Exported for the engines' tests in their database folders
// (db/hbase), which wait as long for a killed JVM's port.
const PortLinger = 30 * time.Second

// AwaitPorts waits, before n starts again on its ports, until every one
// of them is free on its address, and returns those still taken: at once
// a port some live process listens on (another program took it while the
// node was down), after PortLinger one that no process holds but the
// kernel has not let go. A node on a host of its own has its address to
// itself, standard ports included: nothing to wait for.
func AwaitPorts(ctx context.Context, n *Node) []int {
	if n.Netns != "" {
		return nil
	}
	ports := []int{}
	for _, p := range append([]int{n.Port}, n.Ports...) {
		if p > 0 {
			ports = append(ports, p)
		}
	}
	deadline := time.Now().Add(PortLinger)
	for {
		var taken []int
		held := false
		for _, p := range ports {
			if !PortsFree(n.Host, []int{p}) {
				taken = append(taken, p)
				held = held || portHolder(p) != ""
			}
		}
		if len(taken) == 0 || held || time.Now().After(deadline) || ctx.Err() != nil {
			return taken
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ReadyToRestart is every engine's check before a stopped or killed node
// starts again on its ports, configuration and data: it is not running,
// and its ports are free (AwaitPorts); a port another program holds is
// refused at once, naming it, rather than left to fail the server's start
// — the DSN and the other nodes know the node by its ports, so they do
// not move under them (an engine that can move a port checks AwaitPorts
// itself: hbase, mariadb).
func ReadyToRestart(ctx context.Context, engine string, n *Node) error {
	if n.PID > 0 && Alive(n.PID) {
		return fmt.Errorf("%s: %s is running (pid %d): kill it first", engine, n.Name, n.PID)
	}
	if taken := AwaitPorts(ctx, n); len(taken) > 0 {
		return fmt.Errorf("%s: %s cannot restart: %s", engine, n.Name, PortsTaken(n.Host, taken))
	}
	return nil
}

// PortsTaken says which of ports on host are taken and by what.
func PortsTaken(host string, ports []int) string {
	var b strings.Builder
	for i, p := range ports {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "port %s:%d is taken%s", host, p, portHolder(p))
	}
	b.WriteString("; stop what holds it, or start the cluster anew")
	return b.String()
}

// portHolder names the process that listens on TCP port (" by pid N
// (COMM)"), read from /proc as ss does, or "" when none is found (another
// network namespace, no permission): for a message that says what took a
// node's port.
func portHolder(port int) string {
	var inode string
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			f := strings.Fields(line)
			// local_address is ADDR:PORT in hex, st 0A is LISTEN.
			if len(f) < 10 || f[3] != "0A" {
				continue
			}
			if _, hex, ok := strings.Cut(f[1], ":"); ok {
				if p, err := strconv.ParseInt(hex, 16, 32); err == nil && int(p) == port {
					inode = f[9]
				}
			}
		}
	}
	if inode == "" {
		return ""
	}
	want := "socket:[" + inode + "]"
	holders := map[int]bool{}
	procs, _ := os.ReadDir("/proc")
	for _, d := range procs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		for _, fd := range fds {
			if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && l == want {
				holders[pid] = true
				break
			}
		}
	}
	// A process that forks holds every descriptor in its child until the
	// child's exec closes them, so a scan can meet the listener in a child
	// too (and /proc lists a child first once pids wrap): the holder named
	// is the one whose parent does not hold it.
	owner := portOwner(holders, parentPID)
	if owner == 0 {
		return ""
	}
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", owner))
	return fmt.Sprintf(" by pid %d (%s)", owner, strings.TrimSpace(string(comm)))
}

// portOwner picks, of the pids that hold a socket, the lowest whose parent
// does not hold it; 0 when there is none.
func portOwner(holders map[int]bool, parent func(int) int) int {
	owner := 0
	for pid := range holders {
		if !holders[parent(pid)] && (owner == 0 || pid < owner) {
			owner = pid
		}
	}
	return owner
}

// parentPID reads pid's parent from /proc/PID/stat, 0 when it cannot.
func parentPID(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid …: comm may hold spaces and parentheses, so
	// the fields start after the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// FreePorts returns n distinct free ports on host.
func FreePorts(host string, n int) ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for len(out) < n {
		p, err := FreePort(host)
		if err != nil {
			return nil, err
		}
		// Redis Cluster needs port+10000 for its bus: keep ports low enough.
		if !seen[p] && p < 55000 {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// Retry runs start up to attempts times; start gets a fresh attempt number
// and should pick new ports each time. It is for the race between FreePort
// and the server's bind, which shows as a server exiting at once: a start
// that ran out of time (an error wrapping context.DeadlineExceeded or
// Canceled) is not retried, since a slow server is not made faster by
// starting it again, and a retried bootstrap would stream its data anew.
func Retry(attempts int, start func(attempt int) error) error {
	var errs []error
	for i := 0; i < attempts; i++ {
		err := start(i)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return fmt.Errorf("gave up after %d attempt(s): %w", i+1, errors.Join(errs...))
		}
	}
	return fmt.Errorf("gave up after %d attempts: %w", attempts, errors.Join(errs...))
}

// Proc describes a server process to start.
type Proc struct {
	Path    string
	Args    []string
	Dir     string
	LogFile string // stdout and stderr go here (appended)
	// User runs the process as that user (postgres refuses to run as
	// root); "" runs as the current user.
	User string
	Env  []string
	// Cluster and Node are the node p is the server of: with a budget
	// (Cluster.Budget), p runs in the node's control group from its first
	// instruction (budget.Group.Join), made at the node's first start and
	// recorded in Node.Cgroup. Nil for a process of no node's.
	Cluster *Cluster
	Node    *Node
}

// Start starts p in its own process group, detached from fieldbench's
// terminal (Ctrl-C of a run must not kill the cluster), and returns its PID.
func Start(p Proc) (int, error) {
	logf, err := os.OpenFile(p.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, fmt.Errorf("open log %s: %w", p.LogFile, err)
	}
	defer logf.Close()
	argv, asUser, err := p.inBudget()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = p.Dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if asUser {
		cred, err := UserCredential(p.User)
		if err != nil {
			return 0, err
		}
		cmd.SysProcAttr.Credential = cred
	}
	dir := p.Dir
	if dir == "" {
		dir = filepath.Dir(p.LogFile)
	}
	// Announced before the fork and recorded right after (SpawnLog): an
	// interrupted `cluster up` or a later `cluster down` finds it.
	if err := recordSpawn(dir, 0, spawnProgram(p)); err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", p.Path, err)
	}
	pid := cmd.Process.Pid
	go cmd.Wait() // reap it if it dies while we run; the PID stays ours
	if err := recordSpawn(dir, pid, spawnProgram(p)); err != nil {
		_ = Kill(pid)
		return 0, err
	}
	return pid, nil
}

// spawnProgram is the program p runs, as SpawnLog names it: for `ip netns
// exec NS PROG ...`, PROG, which ip execs in place (same PID), so a process
// announced but never recorded is still found by its executable; for
// `ip netns exec NS setpriv OPTIONS -- PROG ...` (a server that drops root
// inside its host), PROG, which setpriv execs in place too.
func spawnProgram(p Proc) string {
	if filepath.Base(p.Path) != "ip" || len(p.Args) < 4 || p.Args[0] != "netns" || p.Args[1] != "exec" {
		return p.Path
	}
	prog := p.Args[3:]
	if filepath.Base(prog[0]) == "setpriv" {
		for i, a := range prog {
			if a == "--" && i+1 < len(prog) {
				return prog[i+1]
			}
		}
	}
	return prog[0]
}

// AsUser is argv run as usr through setpriv, which execs it in place (the
// PID stays argv's): for a server that must drop root after something only
// root may do first (enter a host's namespace, join a control group).
func AsUser(usr string, argv ...string) []string {
	return append([]string{"setpriv", "--reuid=" + usr, "--regid=" + usr, "--init-groups", "--"}, argv...)
}

// RunAs runs a short command (initdb, pg_basebackup...) to completion as
// user ("" = current), returning its combined output in the error.
func RunAs(ctx context.Context, usr, dir string, path string, args ...string) error {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir = dir
	if usr != "" {
		cred, err := UserCredential(usr)
		if err != nil {
			return err
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", path, strings.Join(args, " "), err, Tail(string(out), 2000))
	}
	return nil
}

// Chown gives path (recursively) to usr, so a server running as usr can
// write its data directory.
func Chown(path, usr string) error {
	u, err := user.Lookup(usr)
	if err != nil {
		return fmt.Errorf("user %s: %w", usr, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return filepathWalkChown(path, uid, gid)
}

func UserCredential(usr string) (*syscall.Credential, error) {
	u, err := user.Lookup(usr)
	if err != nil {
		return nil, fmt.Errorf("user %s (needed to run the server): %w", usr, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// Alive reports whether pid is a running process (not a zombie).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		// A process in the middle of its exit can fail the read for a
		// moment (seen under load: Alive false, then true, then false):
		// whether the PID still exists decides, so that Alive never
		// says "gone" of a process that is not.
		return !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	}
	// state is the field after the ")" that closes the command name:
	// Z (zombie) and X (dead) have ended.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

// Stop sends SIGTERM to pid and waits up to grace for it to exit, then
// sends SIGKILL. It only ever signals the PID fieldbench started.
func Stop(pid int, grace time.Duration) error {
	return StopWith(pid, syscall.SIGTERM, grace)
}

// StopWith sends sig to pid, waits up to grace for it to end, then kills
// it (Kill).
func StopWith(pid int, sig syscall.Signal, grace time.Duration) error {
	if !Alive(pid) {
		return nil
	}
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop pid %d: %w", pid, err)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !Alive(pid) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return Kill(pid)
}

// killWait bounds how long Kill waits for a killed process to be gone: a
// SIGKILL takes effect within milliseconds, but on a loaded 2-core machine
// (load average 15, seen in CI) the exit of a big process took over 2 s.
const killWait = 30 * time.Second

// Kill sends SIGKILL to pid and waits for it to be gone (a zombie counts
// as gone); one still alive after killWait is an error, never a silent
// success.
func Kill(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill pid %d: %w", pid, err)
	}
	deadline := time.Now().Add(killWait)
	for Alive(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("kill pid %d: still alive %s after SIGKILL", pid, killWait)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// WaitPort waits until host:port accepts TCP connections, the process pid
// dies (then the log's tail explains why), or ctx ends.
func WaitPort(ctx context.Context, host string, port, pid int, logFile string) error {
	return WaitDial(ctx, func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}, net.JoinHostPort(host, strconv.Itoa(port)), pid, logFile)
}

// WaitDial is WaitPort with the dial given: a node on a virtual network is
// dialled from inside its host's namespace (Node.Dial). An engine's start
// waits with it whether its node is on loopback or on a host.
func WaitDial(ctx context.Context, dial func(context.Context, string) (net.Conn, error), addr string, pid int, logFile string) error {
	for {
		dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		c, err := dial(dctx, addr)
		cancel()
		if err == nil {
			c.Close()
			return nil
		}
		if pid > 0 && !Alive(pid) {
			return fmt.Errorf("server (pid %d) exited before listening on %s; log %s ends:\n%s", pid, addr, logFile, LogTail(logFile, 1500))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("server did not listen on %s: %w; log %s ends:\n%s", addr, ctx.Err(), logFile, LogTail(logFile, 1500))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// LogTail is the last n bytes of a log file, for error messages.
func LogTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return Tail(string(b), n)
}

// Tail is the last n bytes of s, after "…" where it cut: the end of a
// command's output or a server's log in an error, where the cause is.
func Tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// StopSignaler is an engine whose servers stop gracefully on another
// signal than SIGTERM (PostgreSQL: SIGINT, its fast shutdown; its SIGTERM
// "smart" shutdown would wait for every client to disconnect).
type StopSignaler interface {
	StopSignal() syscall.Signal
}

// StopNode stops one node gracefully and marks it stopped, so that the
// engine's Restart brings it back on its data: SIGTERM (or the engine's
// StopSignal), then SIGKILL if it has not exited after grace.
func StopNode(c *Cluster, name string, grace time.Duration) error {
	n, err := c.Node(name)
	if err != nil {
		return err
	}
	if n.PID > 0 {
		sig := syscall.SIGTERM
		if e, err := Get(c.Engine); err == nil {
			if s, ok := e.(StopSignaler); ok {
				sig = s.StopSignal()
			}
		}
		if err := StopWith(n.PID, sig, grace); err != nil {
			return fmt.Errorf("stop %s: %w", name, err)
		}
	}
	n.PID, n.Stopped = 0, true
	return nil
}
