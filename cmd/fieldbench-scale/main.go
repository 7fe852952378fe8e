// Command fieldbench-scale measures one step of scripts/scale-clients.sh:
// one workload's clients on null:// (no database) in open loop at one
// operation per client per second, printing the figures as one JSON line.
// Each step is its own process because peak RSS is a per-process figure.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/fieldbench/fieldbench/adapter/null"
	"github.com/fieldbench/fieldbench/runner/scale"
)

func main() {
	var st scale.Step
	var cpuProfile string
	flag.StringVar(&st.Family, "family", "microblog", "workload: "+strings.Join(scale.Families, ", "))
	flag.IntVar(&st.Clients, "clients", 1, "clients (microblog clients, wiki threads, ingest sources)")
	flag.DurationVar(&st.Duration, "duration", 15*time.Second, "run time")
	flag.Float64Var(&st.PerClient, "per-client", 1, "operations per second offered by each client")
	flag.IntVar(&st.Batch, "batch", 10, "ingest: records per batch")
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()
	if err := run(st, cpuProfile); err != nil {
		fmt.Fprintln(os.Stderr, "fieldbench-scale:", err)
		os.Exit(1)
	}
}

func run(st scale.Step, cpuProfile string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	f, err := scale.Run(ctx, &null.DB{}, st)
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(f)
}
