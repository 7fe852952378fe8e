package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// clockTicks is USER_HZ, the unit of the times in /proc/PID/stat and
// /proc/stat. It is 100 on every Linux architecture Go supports; Go cannot
// call sysconf(_SC_CLK_TCK) without cgo, and the kernel ABI fixes it anyway.
const clockTicks = 100

// procRoot is where the proc filesystem is mounted.
const procRoot = "/proc"

// Target is one node to probe: a local process (the root of a process tree:
// PostgreSQL's postmaster has one child per backend) and its data directory.
// PID 0 means "not running"; DataDir "" means "no disk figure".
type Target struct {
	Name    string
	PID     int
	DataDir string
}

// Counters is one reading of a target: cumulative counters (CPU, block I/O)
// that only mean something as a difference between two readings, and levels
// (memory, disk use) that mean something alone. A figure that could not be
// read is left zero and named in Unknown with the reason; a process that is
// not running is not an error (Alive false, process figures unknown).
type Counters struct {
	Target Target
	// Alive is true when the root PID exists and is not a zombie.
	Alive bool
	// StartTicks is the root's start time in clock ticks since boot; a
	// different value under the same PID means a different process.
	StartTicks uint64
	// Procs is the number of live processes in the tree (root included).
	Procs int
	// CPUSeconds is user+system time of every live process of the tree plus
	// their cutime+cstime (time of children they have reaped), so a backend
	// that exits and is reaped by the postmaster keeps its time in the total.
	CPUSeconds float64
	// RSSBytes is the sum of resident set sizes over the tree (Rss of
	// smaps_rollup, else the stat line's estimate). Shared pages (PostgreSQL
	// shared_buffers, libraries) are counted once per process.
	RSSBytes int64
	// PSSBytes is the sum of proportional set sizes (smaps_rollup) over the
	// tree: shared pages divided among their sharers, so it does not double
	// count; unknown on kernels without smaps_rollup.
	PSSBytes int64
	// ReadBytes and WriteBytes are /proc/PID/io read_bytes and write_bytes
	// summed over the tree: bytes this tree caused to be fetched from or
	// sent to the storage layer (page-cache hits are not reads). The kernel
	// adds a reaped child's counters to its parent, as for CPU time.
	ReadBytes  int64
	WriteBytes int64
	// DiskBytes is the space allocated to the files under DataDir, like du.
	DiskBytes int64
	// Uptime is /proc/uptime (seconds since boot) when the reading was
	// taken; it tells whether a process started after an earlier reading.
	Uptime float64
	// Unknown maps a figure ("cpu", "rss", "pss", "io", "disk", "procs",
	// "uptime") to why it could not be read.
	Unknown map[string]string
}

func (c *Counters) unknown(figure string, err error) {
	if c.Unknown == nil {
		c.Unknown = map[string]string{}
	}
	c.Unknown[figure] = err.Error()
}

// procStat is what one /proc/PID/stat line tells us.
type procStat struct {
	PID        int
	Comm       string
	State      byte
	PPID       int
	UTime      uint64 // ticks
	STime      uint64
	CUTime     uint64
	CSTime     uint64
	StartTicks uint64
	RSSPages   int64
}

// parseStat parses a /proc/PID/stat line. comm (field 2) may hold spaces
// and parentheses, so the fields after it are found from the last ')'.
func parseStat(line string) (procStat, error) {
	var s procStat
	open := strings.IndexByte(line, '(')
	closing := strings.LastIndexByte(line, ')')
	if open < 0 || closing < open {
		return s, fmt.Errorf("stat: no (comm) in %q", line)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line[:open]))
	if err != nil {
		return s, fmt.Errorf("stat: pid: %w", err)
	}
	s.PID, s.Comm = pid, line[open+1:closing]
	f := strings.Fields(line[closing+1:])
	// f[0] is field 3 (state); field n is f[n-3].
	if len(f) < 22 {
		return s, fmt.Errorf("stat: %d fields after comm, want >= 22", len(f))
	}
	if len(f[0]) != 1 {
		return s, fmt.Errorf("stat: state %q", f[0])
	}
	s.State = f[0][0]
	var errs []error
	u := func(i int) uint64 {
		v, err := strconv.ParseUint(f[i-3], 10, 64)
		errs = append(errs, err)
		return v
	}
	s.PPID = int(u(4))
	s.UTime, s.STime, s.CUTime, s.CSTime = u(14), u(15), u(16), u(17)
	s.StartTicks = u(22)
	rss, err := strconv.ParseInt(f[24-3], 10, 64)
	errs = append(errs, err)
	s.RSSPages = rss
	if err := errors.Join(errs...); err != nil {
		return s, fmt.Errorf("stat: %w", err)
	}
	return s, nil
}

// readProcs reads /proc/*/stat once: every process on the machine, so trees
// can be walked by ppid without reading anything twice. Processes that exit
// during the walk are skipped.
func readProcs() (map[int]procStat, error) {
	d, err := os.Open(procRoot)
	if err != nil {
		return nil, fmt.Errorf("proc: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("proc: %w", err)
	}
	procs := make(map[int]procStat, len(names))
	buf := make([]byte, 0, 1024)
	for _, n := range names {
		if n == "" || n[0] < '0' || n[0] > '9' {
			continue
		}
		b, err := readInto(procRoot+"/"+n+"/stat", buf)
		if err != nil {
			continue // exited since readdir
		}
		buf = b[:0]
		s, err := parseStat(string(b))
		if err != nil {
			continue
		}
		procs[s.PID] = s
	}
	return procs, nil
}

// readInto reads a small file into buf (grown if needed): /proc files
// report size 0, so os.ReadFile's size hint is useless and this saves an
// allocation per file on a walk over every process.
func readInto(path string, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// tree returns root and its live descendants (breadth first) from a
// snapshot; nil when root is absent.
func tree(procs map[int]procStat, children map[int][]int, root int) []int {
	if _, ok := procs[root]; !ok {
		return nil
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// Descendants lists the live processes below pid, read from /proc once
// (children before grandchildren): what a fault that must reach a
// server's forked processes signals besides the server itself.
func Descendants(pid int) ([]int, error) {
	procs, err := readProcs()
	if err != nil {
		return nil, err
	}
	t := tree(procs, childrenOf(procs), pid)
	if len(t) == 0 {
		return nil, nil
	}
	return t[1:], nil
}

func childrenOf(procs map[int]procStat) map[int][]int {
	ch := make(map[int][]int, len(procs))
	for pid, s := range procs {
		if s.PPID != 0 && s.PPID != pid {
			ch[s.PPID] = append(ch[s.PPID], pid)
		}
	}
	return ch
}

// ioCounters is what /proc/PID/io tells us.
type ioCounters struct {
	ReadBytes, WriteBytes, CancelledWriteBytes int64
}

// parseIO parses /proc/PID/io ("key: value" lines).
func parseIO(text string) (ioCounters, error) {
	var c ioCounters
	found := 0
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "read_bytes":
			dst = &c.ReadBytes
		case "write_bytes":
			dst = &c.WriteBytes
		case "cancelled_write_bytes":
			dst = &c.CancelledWriteBytes
		default:
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return c, fmt.Errorf("io: %s: %w", k, err)
		}
		*dst = n
		found++
	}
	if found < 2 {
		return c, errors.New("io: no read_bytes/write_bytes")
	}
	return c, nil
}

// parseRollup returns the Rss and Pss lines of /proc/PID/smaps_rollup in
// bytes.
func parseRollup(text string) (rss, pss int64, err error) {
	found := 0
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "Rss" && k != "Pss") {
			continue
		}
		n, err := parseKB(v)
		if err != nil {
			return 0, 0, fmt.Errorf("smaps_rollup %s: %w", k, err)
		}
		if k == "Rss" {
			rss = n
		} else {
			pss = n
		}
		found++
	}
	if found < 2 {
		return rss, pss, errors.New("smaps_rollup: no Rss/Pss lines")
	}
	return rss, pss, nil
}

// parseKB parses "  1234 kB" into bytes.
func parseKB(v string) (int64, error) {
	v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB"))
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("kB value: %w", err)
	}
	return n * 1024, nil
}

// ReadCounters reads every target once: one walk of /proc/*/stat for all of
// them, then per tree member /proc/PID/io and smaps_rollup, then the disk
// use of each DataDir. It never fails: what cannot be read is named in
// Counters.Unknown. ctx only cuts the disk walks short (they are the slow
// part on a large data directory).
func ReadCounters(ctx context.Context, targets []Target) []Counters {
	out := make([]Counters, len(targets))
	uptime, upErr := readUptime()
	procs, procErr := readProcs()
	children := childrenOf(procs)
	page := int64(os.Getpagesize())
	buf := make([]byte, 0, 4096)
	for i, t := range targets {
		c := &out[i]
		c.Target, c.Uptime = t, uptime
		if upErr != nil {
			c.unknown("uptime", upErr)
		}
		switch {
		case procErr != nil:
			for _, f := range []string{"procs", "cpu", "rss", "pss", "io"} {
				c.unknown(f, procErr)
			}
		case t.PID > 0:
			readTree(c, procs, children, t.PID, page, buf)
		}
		if t.DataDir != "" {
			n, err := DiskUsage(ctx, t.DataDir)
			if err != nil {
				c.unknown("disk", err)
			}
			c.DiskBytes = n
		} else {
			c.unknown("disk", errors.New("no data directory"))
		}
	}
	return out
}

// readTree fills the process figures of c from the tree rooted at root.
func readTree(c *Counters, procs map[int]procStat, children map[int][]int, root int, page int64, buf []byte) {
	rs, ok := procs[root]
	if !ok || rs.State == 'Z' || rs.State == 'X' {
		return // not alive: process figures stay unknown by Alive=false
	}
	c.Alive, c.StartTicks = true, rs.StartTicks
	var ticks uint64
	var ioErr, pssErr error
	for _, pid := range tree(procs, children, root) {
		s := procs[pid]
		// A zombie's times are still in its stat line (and move to its
		// parent's cutime when reaped), so it counts for CPU and I/O; it
		// holds no memory.
		ticks += s.UTime + s.STime + s.CUTime + s.CSTime
		dir := procRoot + "/" + strconv.Itoa(pid)
		if b, err := readInto(dir+"/io", buf); err != nil {
			ioErr = err
		} else if ioc, err := parseIO(string(b)); err != nil {
			ioErr = err
		} else {
			c.ReadBytes += ioc.ReadBytes
			c.WriteBytes += ioc.WriteBytes
		}
		if s.State == 'Z' || s.State == 'X' {
			continue
		}
		c.Procs++
		// smaps_rollup's Rss is exact; the stat line's is the kernel's
		// batched per-CPU estimate, used when smaps_rollup is unreadable.
		if b, err := readInto(dir+"/smaps_rollup", buf); err != nil {
			pssErr = err
			c.RSSBytes += s.RSSPages * page
		} else if rss, pss, err := parseRollup(string(b)); err != nil {
			pssErr = err
			c.RSSBytes += s.RSSPages * page
		} else {
			c.RSSBytes += rss
			c.PSSBytes += pss
		}
	}
	c.CPUSeconds = float64(ticks) / clockTicks
	if ioErr != nil && !vanished(ioErr) {
		c.unknown("io", ioErr)
	}
	if pssErr != nil && !vanished(pssErr) {
		c.unknown("pss", pssErr)
	}
}

// vanished says err is a process exiting between the stat walk and a read
// of its other files, which is not a failure.
func vanished(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

func readUptime() (float64, error) {
	b, err := os.ReadFile(procRoot + "/uptime")
	if err != nil {
		return 0, fmt.Errorf("uptime: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, errors.New("uptime: empty")
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, fmt.Errorf("uptime: %w", err)
	}
	return v, nil
}

// DiskUsage is the space allocated to dir and everything under it
// (st_blocks*512 summed, each hard-linked inode once, symlinks not
// followed, other filesystems included), as du reports. Files that vanish
// during the walk (compaction, WAL recycling) are skipped, not errors, and
// so are unreadable subdirectories; an error is returned only when dir
// itself cannot be read or ctx is done, with the partial sum.
//
// It reads names and fstatat(2)s them relative to the open directory
// rather than using filepath.WalkDir: no sorting, no path per file, about
// half the CPU on a data directory of thousands of files.
func DiskUsage(ctx context.Context, dir string) (int64, error) {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return 0, fmt.Errorf("disk use of %s: %w", dir, &fs.PathError{Op: "lstat", Path: dir, Err: err})
	}
	w := duWalk{ctx: ctx, total: st.Blocks * 512}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return w.total, nil
	}
	if err := w.dir(dir, true); err != nil {
		return w.total, fmt.Errorf("disk use of %s: %w", dir, err)
	}
	return w.total, nil
}

type duWalk struct {
	ctx   context.Context
	total int64
	seen  map[[2]uint64]bool // hard-linked inodes already counted
}

// dir adds the entries under path (path itself is already counted).
func (w *duWalk) dir(path string, top bool) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		if top {
			return err
		}
		return nil // vanished or unreadable: count the rest
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil && top {
		return err
	}
	raw, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var subdirs []string
	var st unix.Stat_t
	ctlErr := raw.Control(func(fd uintptr) {
		for _, name := range names {
			if err := unix.Fstatat(int(fd), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				continue // vanished since the listing
			}
			if st.Nlink > 1 && st.Mode&unix.S_IFMT != unix.S_IFDIR {
				if w.seen == nil {
					w.seen = map[[2]uint64]bool{}
				}
				k := [2]uint64{uint64(st.Dev), st.Ino}
				if w.seen[k] {
					continue
				}
				w.seen[k] = true
			}
			w.total += st.Blocks * 512
			if st.Mode&unix.S_IFMT == unix.S_IFDIR {
				subdirs = append(subdirs, name)
			}
		}
	})
	if ctlErr != nil {
		return ctlErr
	}
	for _, sub := range subdirs {
		if err := w.dir(path+"/"+sub, false); err != nil {
			return err
		}
	}
	return nil
}
