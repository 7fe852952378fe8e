// Package probe reads facts about the machine and, later, node resources
// from /proc. Everything here degrades to "unknown" rather than failing: a
// missing fact must never stop a benchmark.
package probe

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/fieldbench/fieldbench/result"
)

// Machine describes the host this process runs on.
func Machine() result.Machine {
	m := result.Machine{
		CPUModel:  firstField("/proc/cpuinfo", "model name"),
		Cores:     runtime.NumCPU(),
		OS:        osName(),
		Kernel:    strings.TrimSpace(readFile("/proc/sys/kernel/osrelease")),
		GoVersion: runtime.Version(),
	}
	if m.CPUModel == "" {
		m.CPUModel = "unknown"
	}
	if kb := firstField("/proc/meminfo", "MemTotal"); kb != "" {
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(kb), " kB"), 10, 64)
		m.MemoryBytes = n * 1024
	}
	m.Hostname, _ = os.Hostname()
	if h, ok := CurrentLoadHost(); ok {
		m.LoadHost = &h
	}
	return m
}

func osName() string {
	for _, line := range strings.Split(readFile("/etc/os-release"), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`) + " (" + runtime.GOOS + "/" + runtime.GOARCH + ")"
		}
	}
	return runtime.GOOS + "/" + runtime.GOARCH
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}

// firstField returns the value of the first "key: value" line with key.
func firstField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
