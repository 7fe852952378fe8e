package probe

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fieldbench/fieldbench/cluster/budget"
)

// TestParseVMInfo: the container section and the heap line of jcmd's
// VM.info, as HotSpot prints them, read into what the JVM saw; a section
// without a quota or a limit reads as none, and an answer without the
// processor count or the heap is an error, not zeros.
func TestParseVMInfo(t *testing.T) {
	jdk17, err := os.ReadFile(filepath.Join("testdata", "vminfo-jdk17-cgroupv1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, in string
		want     JVM
		line     string
		err      string
	}{
		{"Cassandra on a budget", string(jdk17), JVM{Processors: 1, HeapMax: 512 << 20, Container: "cgroupv1", CPUQuota: 0.25, MemoryLimit: 1536 << 20},
			"1 processor, heap max 512MiB (cgroupv1: quota 0.25 CPU, memory limit 1536MiB)", ""},
		{"no limits", "container (cgroup) information:\ncontainer_type: cgroupv1\nactive_processor_count: 2\ncpu_quota: no quota\ncpu_period: 100000\nmemory_limit_in_bytes: unlimited\n Heap Max Capacity: 6G\n",
			JVM{Processors: 2, HeapMax: 6 << 30, Container: "cgroupv1"}, "2 processors, heap max 6144MiB (cgroupv1: no limits)", ""},
		{"no container", "active_processor_count: 4\n Heap Max Capacity: 8192K\n",
			JVM{Processors: 4, HeapMax: 8 << 20}, "4 processors, heap max 8MiB (no container seen)", ""},
		{"no processors", " Heap Max Capacity: 512M\n", JVM{}, "", "no active processor count"},
		{"bad processors", "active_processor_count: many\n", JVM{}, "", `active_processor_count "many"`},
		{"bad heap", "active_processor_count: 1\n Heap Max Capacity: lots\n", JVM{}, "", `heap max capacity "lots"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseVMInfo(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
			if got.String() != tc.line {
				t.Errorf("String() = %q, want %q", got.String(), tc.line)
			}
		})
	}
}

// TestReadJVM: a real JVM started inside a control group of 0.25 CPU and
// 512 MiB, without -Xmx, reports through jcmd the group's quota and limit,
// counts 1 processor of the machine's cores, and sized its default heap
// from the group's memory (a quarter of it, HotSpot's MaxRAMPercentage,
// not a quarter of the machine's). A process that is not a JVM is
// refused. Needs root, cgroups, java and jcmd.
func TestReadJVM(t *testing.T) {
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("no java here")
	}
	// Small: tests beside it sum every budget fieldbench holds here.
	b := budget.Budget{CPU: 0.25, Memory: 512 << 20}
	if err := budget.Check(b); err != nil {
		t.Skipf("no budgets here: %v", err)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "Wait.java")
	if err := os.WriteFile(src, []byte(`public class Wait { public static void main(String[] a) throws Exception { System.out.println("ready"); System.out.flush(); Thread.sleep(120000); } }`), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := budget.Create(fmt.Sprintf("%sprobe-test-%d/jvm1", budget.Prefix, os.Getpid()), b, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Remove(); err != nil {
			t.Errorf("control group left: %v", err)
		}
	})
	argv := g.Join([]string{"java", src})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// jcmd attaches by a signal that kills a JVM not yet past its start:
	// wait for main to run.
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ready <- sc.Scan() && sc.Text() == "ready"
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("the JVM ended before it was ready")
		}
	case <-ctx.Done():
		t.Fatal("the JVM was not ready within 2 minutes")
	}
	if _, ok := JavaOf(cmd.Process.Pid); !ok {
		t.Fatalf("process %d (java) not seen as a JVM", cmd.Process.Pid)
	}
	j, err := ReadJVM(ctx, cmd.Process.Pid)
	if err == ErrNoJcmd {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the JVM saw: %s", j)
	if j.Processors != 1 || j.CPUQuota != 0.25 || j.MemoryLimit != 512<<20 || j.Container == "" {
		t.Errorf("the JVM saw %+v, want 1 processor, quota 0.25 CPU and a 512 MiB limit from its control group", j)
	}
	if j.HeapMax == 0 || j.HeapMax > 130<<20 {
		t.Errorf("heap max %d bytes, want about a quarter of the group's 512 MiB", j.HeapMax)
	}
	if _, err := ReadJVM(ctx, os.Getpid()); err == nil || !strings.Contains(err.Error(), "not a JVM") {
		t.Errorf("ReadJVM of the test itself: %v, want it refused", err)
	}
}
