package probe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
)

// JVM is what a Java virtual machine saw of its machine. Java sizes
// itself from its control group (the node's budget): its garbage
// collector and compiler threads, and Cassandra its thread pools, follow
// the processors it counts, and its default heap follows the memory limit.
// A node of 0.25 CPU on a 2-core machine is a JVM that counts 1 processor;
// recording it says whether the node was the small machine the budget
// meant, as the JVM understood it.
type JVM struct {
	// Processors is the JVM's active processor count, what
	// Runtime.availableProcessors() returns.
	Processors int
	// HeapMax is the largest heap it may grow to, in bytes.
	HeapMax uint64
	// Container is the control group version it read ("cgroupv1",
	// "cgroupv2"), "" when it reported none.
	Container string
	// CPUQuota is the CPUs its container's quota gives (0: no quota).
	CPUQuota float64
	// MemoryLimit is its container's memory limit in bytes (0: none).
	MemoryLimit uint64
}

// String is the view on one line, as `cluster status` and the
// experiment's "jvm-view" event print it.
func (j JVM) String() string {
	p := "processors"
	if j.Processors == 1 {
		p = "processor"
	}
	s := fmt.Sprintf("%d %s, heap max %s", j.Processors, p, mibs(j.HeapMax))
	if j.Container == "" {
		return s + " (no container seen)"
	}
	var c []string
	if j.CPUQuota > 0 {
		c = append(c, "quota "+strconv.FormatFloat(j.CPUQuota, 'f', -1, 64)+" CPU")
	}
	if j.MemoryLimit > 0 {
		c = append(c, "memory limit "+mibs(j.MemoryLimit))
	}
	if len(c) == 0 {
		c = append(c, "no limits")
	}
	return s + " (" + j.Container + ": " + strings.Join(c, ", ") + ")"
}

func mibs(b uint64) string { return fmt.Sprintf("%.0fMiB", float64(b)/(1<<20)) }

// JavaOf returns the java binary process pid runs, when it is a JVM.
func JavaOf(pid int) (string, bool) {
	exe, err := os.Readlink(filepath.Join(procRoot, strconv.Itoa(pid), "exe"))
	if err != nil || filepath.Base(exe) != "java" {
		return "", false
	}
	return exe, true
}

// ErrNoJcmd is returned by ReadJVM where no jcmd can be found: a Java
// runtime without the JDK's tools.
var ErrNoJcmd = errors.New("no jcmd beside the JVM's java or on PATH (a JRE has none: install the JDK, e.g. openjdk-17-jdk-headless)")

// ReadJVM asks the JVM of pid what it saw, with `jcmd PID VM.info`: the
// JVM's own diagnostic command, the one interface HotSpot offers for its
// container view (no JMX agent to start, nothing added to the node's
// command line). It uses the jcmd beside the JVM's java (the same
// release), else the one on PATH. jcmd attaches through a socket under
// the JVM's /tmp, so it works on a host's network namespace too; it runs
// a JVM of its own for about a second.
func ReadJVM(ctx context.Context, pid int) (JVM, error) {
	java, ok := JavaOf(pid)
	if !ok {
		return JVM{}, fmt.Errorf("process %d is not a JVM", pid)
	}
	jcmd := filepath.Join(filepath.Dir(java), "jcmd")
	if _, err := os.Stat(jcmd); err != nil {
		if jcmd, err = exec.LookPath("jcmd"); err != nil {
			return JVM{}, ErrNoJcmd
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, jcmd, strconv.Itoa(pid), "VM.info").Output()
	if err != nil {
		return JVM{}, fmt.Errorf("jcmd %d VM.info: %w", pid, err)
	}
	return parseVMInfo(string(out))
}

// parseVMInfo reads VM.info's "container (cgroup) information" section
// and its heap line (HotSpot 11 to 25 print both so).
func parseVMInfo(s string) (JVM, error) {
	var j JVM
	var quota, period float64
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<16), 1<<22)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "container_type":
			j.Container = v
		case "active_processor_count":
			n, err := strconv.Atoi(v)
			if err != nil {
				return JVM{}, fmt.Errorf("VM.info: active_processor_count %q", v)
			}
			j.Processors = n
		case "cpu_quota":
			quota, _ = strconv.ParseFloat(v, 64) // "no quota": none
		case "cpu_period":
			period, _ = strconv.ParseFloat(v, 64)
		case "memory_limit_in_bytes":
			j.MemoryLimit = kbytes(v)
		case "Heap Max Capacity":
			b, err := humanize.ParseBytes(strings.TrimSuffix(v, "B") + "iB")
			if err != nil {
				return JVM{}, fmt.Errorf("VM.info: heap max capacity %q", v)
			}
			j.HeapMax = b
		}
	}
	if err := sc.Err(); err != nil {
		return JVM{}, fmt.Errorf("VM.info: %w", err)
	}
	if quota > 0 && period > 0 {
		j.CPUQuota = quota / period
	}
	if j.Processors == 0 || j.HeapMax == 0 {
		return JVM{}, errors.New("VM.info names no active processor count or heap max capacity (a JVM older than 11?)")
	}
	return j, nil
}

// kbytes reads VM.info's "1572864 k" (or a bare byte count); "unlimited"
// and anything else is 0.
func kbytes(v string) uint64 {
	num, unit, _ := strings.Cut(v, " ")
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return 0
	}
	if unit == "k" {
		n <<= 10
	}
	return n
}
