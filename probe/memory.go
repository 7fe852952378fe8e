package probe

import (
	"strconv"
	"strings"
)

// Memory is what this machine offers a command whose options size its
// memory (the sizing rule, job.Fit). Zero fields are unknown.
type Memory struct {
	// Total is /proc/meminfo's MemTotal.
	Total uint64
	// Available is MemAvailable: what can be had without swapping, the
	// page cache that can be dropped included.
	Available uint64
	// Limit is the memory limit of this process's control group (a
	// container, a Kubernetes pod's limits.memory), 0 when there is none.
	Limit uint64
}

// Usable is the most memory a command may plan to use: Available, or the
// control group's Limit where that is lower (0: unknown).
func (m Memory) Usable() uint64 {
	if m.Limit > 0 && (m.Available == 0 || m.Limit < m.Available) {
		return m.Limit
	}
	return m.Available
}

// ReadMemory reads the machine's memory from /proc/meminfo and the control
// group's limit from /sys/fs/cgroup (v2 memory.max, or v1
// memory/memory.limit_in_bytes).
func ReadMemory() Memory {
	var m Memory
	if total, _, avail, err := parseMeminfo(readFile(procRoot + "/meminfo")); err == nil && total > 0 && avail >= 0 {
		m.Total, m.Available = uint64(total), uint64(avail)
	}
	m.Limit = cgroupLimit(readFile("/sys/fs/cgroup/memory.max"))
	if m.Limit == 0 {
		m.Limit = cgroupLimit(readFile("/sys/fs/cgroup/memory/memory.limit_in_bytes"))
	}
	return m
}

// cgroupLimit is a control group's memory limit in bytes, 0 for none: v2
// writes "max", v1 a number near 2^63 (rounded to the page size).
func cgroupLimit(text string) uint64 {
	n, err := strconv.ParseUint(strings.TrimSpace(text), 10, 64)
	if err != nil || n >= 1<<62 {
		return 0
	}
	return n
}
