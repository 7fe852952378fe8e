package probe

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// benchTargets starts 5 sleeping processes and makes 6 data directories of
// 2,000 small files each (in 20 subdirectories), the shape of a small
// Cassandra or PostgreSQL node's data directory.
func benchTargets(b *testing.B, withDirs bool) []Target {
	b.Helper()
	targets := []Target{{Name: "self", PID: os.Getpid()}}
	for i := range 5 {
		cmd := exec.Command("sleep", "300")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		targets = append(targets, Target{Name: fmt.Sprintf("n%d", i+1), PID: cmd.Process.Pid})
	}
	if !withDirs {
		return targets
	}
	root := b.TempDir()
	blob := make([]byte, 3000)
	for i := range targets {
		dir := filepath.Join(root, targets[i].Name)
		for d := range 20 {
			sub := filepath.Join(dir, fmt.Sprintf("d%02d", d))
			if err := os.MkdirAll(sub, 0o755); err != nil {
				b.Fatal(err)
			}
			for f := range 100 {
				if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d", f)), blob, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
		targets[i].DataDir = dir
	}
	return targets
}

// BenchmarkSample is one Sampler reading: machine counters plus 6 targets,
// each with a data directory of 2,000 files (12,000 in all).
func BenchmarkSample(b *testing.B) {
	targets := benchTargets(b, true)
	s := &Sampler{Targets: func() []Target { return targets }}
	ctx := context.Background()
	cpu := cpuMeter(b)
	for b.Loop() {
		r := s.read(ctx)
		if len(r.nodes) != 6 {
			b.Fatalf("%d nodes", len(r.nodes))
		}
	}
	cpu()
}

// BenchmarkSampleProcOnly is the /proc part alone (no data directories).
func BenchmarkSampleProcOnly(b *testing.B) {
	targets := benchTargets(b, false)
	s := &Sampler{Targets: func() []Target { return targets }}
	ctx := context.Background()
	cpu := cpuMeter(b)
	for b.Loop() {
		s.read(ctx)
	}
	cpu()
}

// cpuMeter reports this process's CPU time (user+system) per operation:
// on a machine shared with other tests the wall time (ns/op) mostly
// measures waiting for a core, the CPU time measures what probing costs.
func cpuMeter(b *testing.B) (stop func()) {
	b.Helper()
	cpuNow := func() float64 {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
	}
	start := cpuNow()
	return func() {
		b.ReportMetric((cpuNow()-start)/float64(b.N), "cpu-ms/op")
	}
}
