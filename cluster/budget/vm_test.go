package budget

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"
)

// TestCgroupV2InVM runs this package's tests in a virtual machine whose
// only control-group hierarchy is v2 (scripts/cgroupv2-vm.sh: Debian's
// kernel under qemu, no network device): this machine mounts v1, and a
// controller bound to v1 cannot be mounted in v2 beside it, so the v2 path
// (cpu.max, memory.max, io.max, memory.events) is tested there. Every test
// must pass in the VM, none skipped for want of a controller; then, where
// this machine has Redis, a whole cluster on budgets runs there.
func TestCgroupV2InVM(t *testing.T) {
	if os.Getenv("FIELDBENCH_IN_VM") != "" {
		t.Skip("in the VM itself")
	}
	if os.Geteuid() != 0 {
		t.Skip("the VM's packages are fetched as root (scripts/install-servers.sh)")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("no qemu-system-x86_64 (scripts/install-servers.sh installs qemu-system-x86)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "../../scripts/cgroupv2-vm.sh")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/cgroupv2-vm.sh: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)^vm: .*of type 0x63677270 .*controllers: .*\bcpu\b.*\bio\b.*\bmemory\b`).Match(out) {
		t.Errorf("the VM's /sys/fs/cgroup is not cgroup v2 with cpu, io and memory:\n%s", out)
	}
	for _, name := range []string{"TestGroupHoldsItsProcesses", "TestDiskRateHolds", "TestMemoryLimitKills", "TestDiskBytesCounted", "TestWritebackHeldOnV2", "TestHoldMovesThisProcess"} {
		if !regexp.MustCompile(`(?m)^--- PASS: ` + name + ` `).Match(out) {
			t.Errorf("%s did not pass in the VM (skipped or failed):\n%s", name, out)
		}
	}
	if regexp.MustCompile(`(?m)^--- (FAIL|SKIP): `).Match(out) {
		t.Errorf("a test failed or skipped in the VM:\n%s", out)
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		return // the script runs no cluster without Redis
	}
	// A whole Redis Cluster on budgets in the VM: the status names the
	// budget, each server's group holds 0.2 CPU and 256 MiB, a load ran,
	// and down left no group.
	for _, want := range []string{
		`(?m)^vm-status: redis1 .*budget=cpu=0.2,memory=256MiB .*cpu_throttled=`,
		`(?m)^vm-status: redis2 .*budget=cpu=0.2,memory=256MiB `,
		`(?m)^vm-group: \S+/redis1/ cpu.max 20000 100000 memory.max 268435456 procs 1$`,
		`(?m)^vm-group: \S+/redis2/ cpu.max 20000 100000 memory.max 268435456 procs 1$`,
		`(?m)^vm-run: +post +[1-9]`,
		`(?m)^vm-cluster-left: 0 groups$`,
		`(?m)^vm-cluster-exit=0$`,
	} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("the VM's cluster printed no line matching %s:\n%s", want, out)
		}
	}
}
