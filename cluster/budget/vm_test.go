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
// must pass in the VM, none skipped for want of a controller.
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
}
