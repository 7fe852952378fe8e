package probe

import (
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// startTree starts script under sh in its own process group and kills the
// whole group (only what this test started) when the test ends.
func startTree(t testing.TB, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start sh: %v", err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd
}

// waitFile waits for path to exist (a script's "done" marker).
func waitFile(t *testing.T, path string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s did not appear within %v", path, within)
}

func readOne(t *testing.T, tg Target) Counters {
	t.Helper()
	c := ReadCounters(context.Background(), []Target{tg})
	if len(c) != 1 {
		t.Fatalf("ReadCounters returned %d readings, want 1", len(c))
	}
	return c[0]
}

func TestReadCountersSelf(t *testing.T) {
	t.Parallel()
	for start := time.Now(); time.Since(start) < 30*time.Millisecond; {
		// burn a little CPU so this process has ticks to read
	}
	c := readOne(t, Target{Name: "self", PID: os.Getpid(), DataDir: t.TempDir()})
	if !c.Alive || c.Procs < 1 || c.CPUSeconds <= 0 || c.RSSBytes <= 0 || c.PSSBytes <= 0 ||
		c.StartTicks == 0 || c.Uptime <= 0 {
		t.Errorf("self reading implausible: %+v", c)
	}
	if len(c.Unknown) != 0 {
		t.Errorf("unknown figures for this very process: %v", c.Unknown)
	}
	if c.PSSBytes > c.RSSBytes {
		t.Errorf("PSS %d > RSS %d", c.PSSBytes, c.RSSBytes)
	}
}

// The CPU is burnt by a grandchild of the target's root: only the tree walk
// sees it.
func TestBusyGrandchildCPU(t *testing.T) {
	t.Parallel()
	cmd := startTree(t, `sh -c 'while :; do :; done' & sleep 30; wait`)
	tg := Target{Name: "busy", PID: cmd.Process.Pid}
	time.Sleep(50 * time.Millisecond) // let the child fork
	a := readOne(t, tg)
	time.Sleep(400 * time.Millisecond)
	b := readOne(t, tg)
	if !b.Alive || b.Procs < 3 {
		t.Fatalf("want a live tree of >= 3 processes (sh, busy sh, sleep), got %+v", b)
	}
	// 400 ms of a busy loop: the 2 cores are shared with other test
	// packages and servers, so only "some CPU" (>= 1 tick) is certain.
	if d := b.CPUSeconds - a.CPUSeconds; d <= 0 {
		t.Errorf("busy grandchild used %.3f CPU s in 400 ms, want > 0", d)
	}
	s := nodeRates(a, true, b, 0.4, 2)
	if s.CPUPercent <= 0 || math.Abs(s.CPUShare-s.CPUPercent/200) > 1e-12 {
		t.Errorf("rates of a busy tree: %+v", s)
	}
}

// A child that has exited and been reaped keeps its CPU time in the total
// (through the root's cutime), so a short-lived backend is not lost.
func TestReapedChildTimeKept(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	done := filepath.Join(dir, "done")
	cmd := startTree(t, `(i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done); touch `+done+`; sleep 30`)
	waitFile(t, done, 8*time.Second)
	c := readOne(t, Target{Name: "reaped", PID: cmd.Process.Pid})
	if !c.Alive {
		t.Fatalf("tree not alive: %+v", c)
	}
	// The counting subshell alone takes well over 100 ms of CPU.
	if c.CPUSeconds < 0.1 {
		t.Errorf("tree CPU after the child was reaped = %.3f s, want >= 0.1", c.CPUSeconds)
	}
}

func TestWriteFsyncIOAndDiskUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir() // on a block device here (ext4), not tmpfs
	before, err := DiskUsage(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	done := filepath.Join(dir, "done")
	const size = 20 << 20
	cmd := startTree(t, `dd if=/dev/zero of=`+filepath.Join(dir, "F")+` bs=1M count=20 oflag=direct conv=fsync 2>/dev/null && touch `+done+`; sleep 30`)
	waitFile(t, done, 8*time.Second)
	c := readOne(t, Target{Name: "writer", PID: cmd.Process.Pid, DataDir: dir})
	if len(c.Unknown) != 0 {
		t.Fatalf("unknown figures: %v", c.Unknown)
	}
	// dd has exited; the kernel moved its write_bytes to the reaping sh.
	if c.WriteBytes < size {
		t.Errorf("tree write_bytes = %d after writing %d with fsync", c.WriteBytes, size)
	}
	if grew := c.DiskBytes - before; grew < size || grew > size+256<<10 {
		t.Errorf("disk use grew by %d, want ~%d", grew, size)
	}
}

func TestDeadAndMissingTargets(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	dir := t.TempDir()
	tests := []struct {
		name string
		tg   Target
	}{
		{"killed and reaped", Target{Name: "killed", PID: pid, DataDir: dir}},
		{"pid beyond pid_max", Target{Name: "never", PID: 1 << 30, DataDir: dir}},
		{"stopped (pid 0)", Target{Name: "stopped", DataDir: dir}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := readOne(t, tt.tg)
			if c.Alive || c.Procs != 0 || c.CPUSeconds != 0 {
				t.Errorf("dead target reads as alive: %+v", c)
			}
			if len(c.Unknown) != 0 {
				t.Errorf("a dead node is not an error, got Unknown %v", c.Unknown)
			}
			if c.DiskBytes <= 0 {
				t.Errorf("data dir of a dead node still has a size, got %d", c.DiskBytes)
			}
		})
	}
}

func TestDiskUsageTolerance(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a"), make([]byte, 10000), 0o644); err != nil {
		t.Fatal(err)
	}
	// A hard link is one inode: counted once, as du does.
	if err := os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	one, err := DiskUsage(context.Background(), filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	all, err := DiskUsage(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if one < 10000 || all-one > 64<<10 {
		t.Errorf("file %d bytes, dir %d: hard link counted twice?", one, all)
	}
	if _, err := DiskUsage(context.Background(), filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing data dir: err = %v, want ErrNotExist", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := DiskUsage(ctx, dir); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled walk: err = %v, want context.Canceled", err)
	}
}
