package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/fieldbench/fieldbench/cluster/vnet"
	"github.com/fieldbench/fieldbench/probe"
)

// RunOnLoadHost runs fieldbench's own binary with args on load host
// load<index> of c's virtual network (a namespace of its own, address
// vnet.LoadAddr(index)), with probe.LoadHostEnv set so the child knows it
// is there (it runs the command itself and records the host), and removes
// the host once the child ended. The child writes to stdout and stderr;
// it is in a process group of its own, so a terminal's Ctrl-C reaches
// this process only, which passes every SIGINT and SIGTERM on (one each):
// the child sees exactly the signals the user sent.
//
// exit is the child's exit code, -1 when a signal ended it; err is what
// kept it from running (or from being waited for), and the host's
// removal's failure. The caller checks index and vnet.Check first: both
// are its bad input.
func RunOnLoadHost(ctx context.Context, c *Cluster, index int, args []string, stdout, stderr io.Writer) (exit int, err error) {
	dir := c.Dir
	net := vnet.ForDir(c.Dir)
	if !vnet.Exists(net.BridgeNS()) {
		return 0, fmt.Errorf("--load-host %s: the cluster's virtual network %s does not exist (is the cluster up?)", dir, net.ID)
	}
	name := "load" + strconv.Itoa(index)
	if vnet.Exists(net.HostNS(name)) {
		return 0, fmt.Errorf("--load-host: load host %s of %s exists already (another process runs on it, or one crashed: 'cluster down' removes it); pick another --load-host-index", name, dir)
	}
	h, err := net.AddHost(ctx, name, vnet.LoadAddr(index))
	if err != nil {
		return 0, err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if rerr := net.RemoveHost(rctx, name); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("--load-host: find fieldbench's own binary: %w", err)
	}
	argv := append(vnet.Command(h.NS, exe), args...)
	fmt.Fprintf(stderr, "on load host %s (%s, network namespace %s)\n", h.Name, h.Addr, h.NS)
	child := exec.Command(argv[0], argv[1:]...)
	child.Stdout, child.Stderr = stdout, stderr
	child.Env = append(os.Environ(), probe.LoadHostVar(h.Name, h.Addr, h.NS))
	child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := child.Start(); err != nil {
		return 0, fmt.Errorf("--load-host: start on %s: %w", h.Name, err)
	}
	done := make(chan error, 1)
	go func() { done <- child.Wait() }()
	for {
		select {
		case s := <-sigs:
			_ = child.Process.Signal(s)
		case werr := <-done:
			var ee *exec.ExitError
			if errors.As(werr, &ee) {
				return ee.ExitCode(), nil
			}
			return 0, werr
		}
	}
}
