// Command diskbudget measures what a node's disk budget (--budget
// disk=RATE) holds on this machine: it writes 20 MiB three ways from
// inside a control group of that rate (budget.Create, budget.Join) on the
// device of DIR and prints each rate. cgroup v1's blkio throttles the I/O
// a process issues itself (direct writes, the flush of an fsync) but not
// the kernel's later writeback of buffered writes (docs/scale-model.md).
//
//	go run ./scripts/diskbudget [-rate 5MiB] DIR   (as root)
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/fieldbench/fieldbench/cluster/budget"
)

func main() {
	rate := flag.String("rate", "5MiB", "the budget's disk rate")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: diskbudget [-rate 5MiB] DIR")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *rate); err != nil {
		fmt.Fprintln(os.Stderr, "diskbudget:", err)
		os.Exit(1)
	}
}

func run(dir, rate string) error {
	b, err := budget.Parse("disk=" + rate)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	g, err := budget.Create(fmt.Sprintf("%sdiskbudget-%d/writer", budget.Prefix, os.Getpid()), b, dir)
	if err != nil {
		return err
	}
	defer g.Remove()
	const mib = 20
	fmt.Printf("# %s, budget %s on the device of %s, %d MiB each\n", time.Now().UTC().Format("2006-01-02T15:04Z"), b, dir, mib)
	for _, w := range []struct{ name, flag string }{
		{"direct (O_DIRECT)", "oflag=direct"},
		{"buffered, then fsync", "conv=fsync"},
		{"buffered, no fsync", ""},
	} {
		out := filepath.Join(dir, "diskbudget.out")
		args := []string{"dd", "if=/dev/zero", "of=" + out, "bs=1M", fmt.Sprint("count=", mib)}
		if w.flag != "" {
			args = append(args, w.flag)
		}
		argv := g.Join(args)
		t0 := time.Now()
		msg, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		s := time.Since(t0).Seconds()
		os.Remove(out)
		if err != nil {
			return fmt.Errorf("%s: %v: %s", w.name, err, msg)
		}
		fmt.Printf("%-22s %6.2f s  %7.1f MiB/s\n", w.name, s, mib/s)
	}
	return nil
}
