package experiment

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSignalServerTree: a pause stops a server's children too, as a
// PostgreSQL replica's per-connection backends must be (each in a session
// of its own, as PostgreSQL's children are: setsid), and resume lets them
// run again.
func TestSignalServerTree(t *testing.T) {
	t.Parallel()
	// A server that forks a child in a session of its own and waits, like
	// a postmaster and a backend.
	cmd := exec.Command("sh", "-c", "setsid sleep 60 & echo $!; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() }()
	buf := make([]byte, 32)
	n, err := out.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatalf("child pid %q: %v", buf[:n], err)
	}
	defer func() { _ = syscall.Kill(child, syscall.SIGKILL) }() // in a session of its own: not in the leader's group
	who, err := signalServer(cmd.Process.Pid, syscall.SIGSTOP)
	if err != nil || who != "pid "+strconv.Itoa(cmd.Process.Pid)+" and its 1 child process(es)" {
		t.Fatalf("signalServer = %q, %v", who, err)
	}
	waitState(t, child, "T")
	if _, err := signalServer(cmd.Process.Pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitState(t, child, "S")
}

// waitState waits (up to 10 s: signals are delivered asynchronously) for
// pid's state in /proc to be want (T stopped, S sleeping).
func waitState(t *testing.T, pid int, want string) {
	t.Helper()
	var got string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		// pid (comm) state ...: comm may hold spaces, the state follows
		// the last ')'.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if got = f[0]; got == want {
			return
		}
	}
	t.Fatalf("pid %d state %s, want %s", pid, got, want)
}
