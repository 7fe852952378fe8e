#!/usr/bin/env bash
# cgroup v2 in a virtual machine (docs/scale-model.md, "cgroup v2"): this
# machine mounts the v1 controllers, and a controller bound to v1 cannot be
# mounted in a v2 hierarchy beside it, so the budgets' v2 path (cpu.max,
# memory.max, io.max, cgroup.procs) is tested in a small VM whose only
# hierarchy is v2: Debian's cloud kernel under qemu's software emulation
# (ACCEL=kvm where nested KVM works: here /dev/kvm exists but a KVM guest
# hangs before its first line), a busybox initramfs, no network device
# at all, and the budget package's own tests (go test -c) run as its init,
# with their temporary directories on a RAM disk (brd) so that io.max has
# a block device to hold. Then, where this machine has Redis, a whole
# cluster: `fieldbench cluster up redis --nodes 2 --budget
# cpu=0.2,memory=256MiB` on the VM's loopback, its status, the groups'
# cpu.max and memory.max, a 5-second `run microblog`, `cluster down`, and
# the count of fieldbench groups left (CLUSTER=0 skips it).
#
#   scripts/cgroupv2-vm.sh            # prints the tests' output and a summary line
#   TESTS='TestGroupHolds|TestDisk' scripts/cgroupv2-vm.sh
#   scripts/cgroupv2-vm.sh --fetch    # install qemu, download the packages, stop
#
# cluster/budget's TestCgroupV2InVM runs it in the test suite.
# Needs root (apt for qemu-system-x86 when missing). The kernel and busybox
# packages are downloaded once into $XDG_CACHE_HOME/fieldbench/vm (never
# committed: Debian's binaries, not this project's). Exit status: the
# tests' (1 when the VM printed none).
set -euo pipefail
cd "$(dirname "$0")/.."

TESTS=${TESTS:-.}
ACCEL=${ACCEL:-tcg}
KERNEL_PKG=${KERNEL_PKG:-linux-image-cloud-amd64}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/fieldbench/vm
mkdir -p "$cache"

if ! command -v qemu-system-x86_64 >/dev/null; then
  echo "installing qemu-system-x86 ..." >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends qemu-system-x86 >/dev/null
fi
# The kernel's and busybox's Debian packages, unpacked once.
fetch() { # PACKAGE DIR
  if [[ ! -d $2 ]]; then
    local tmp
    tmp=$(mktemp -d "$cache/dl-XXXXXX")
    (cd "$tmp" && apt-get download "$1" >/dev/null 2>&1)
    mkdir -p "$2.part"
    dpkg-deb -x "$tmp"/*.deb "$2.part"
    rm -rf "$tmp"
    mv "$2.part" "$2"
  fi
}
# The metapackage names the current kernel; its image package holds it.
[[ ${1:-} == --fetch ]] || [[ -z ${1:-} ]] || { echo "usage: $0 [--fetch]" >&2; exit 2; }
image=$(apt-cache depends "$KERNEL_PKG" 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
[[ -n $image ]] || { echo "cgroupv2-vm: no kernel image behind $KERNEL_PKG" >&2; exit 2; }
fetch "$image" "$cache/$image"
fetch busybox-static "$cache/busybox-static"
vmlinuz=$(ls "$cache/$image"/boot/vmlinuz-*)
brd=$(find "$cache/$image/lib/modules" -name brd.ko | head -1)
[[ -n $brd ]] || { echo "cgroupv2-vm: $image has no brd.ko" >&2; exit 2; }
if [[ ${1:-} == --fetch ]]; then
  echo "cgroupv2-vm: qemu, $image and busybox-static ready in $cache"
  exit 0
fi

work=$(mktemp -d /tmp/fieldbench-cgroupv2-vm-XXXXXX)
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root"/{bin,proc,sys,dev,data,tmp}
cp "$cache/busybox-static/bin/busybox" "$root/bin/busybox"
cp "$brd" "$root/brd.ko"
CGO_ENABLED=0 go test -c -o "$root/budget.test" ./cluster/budget
# A whole cluster too, where this machine has Redis: fieldbench and the
# host's redis-server and redis-cli with the libraries they load, copied
# into the VM's root for this run only.
if [[ ${CLUSTER:-1} == 1 ]] && command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
  mkdir -p "$root/usr/bin"
  CGO_ENABLED=0 go build -o "$root/bin/fieldbench" ./cmd/fieldbench
  for b in redis-server redis-cli; do
    real=$(readlink -f "$(command -v "$b")")
    cp "$real" "$root/usr/bin/"
    [[ $(basename "$real") == "$b" ]] || ln -sf "$(basename "$real")" "$root/usr/bin/$b"
    for lib in $(ldd "$real" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
      mkdir -p "$root$(dirname "$lib")"
      cp -L "$lib" "$root$lib"
    done
  done
fi
cat > "$root/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t cgroup2 cgroup2 /sys/fs/cgroup
echo "+cpu +memory +io" > /sys/fs/cgroup/cgroup.subtree_control
insmod /brd.ko rd_nr=1 rd_size=131072
mke2fs -q /dev/ram0 && mount /dev/ram0 /data
echo "vm: kernel \$(uname -r), /sys/fs/cgroup of type 0x\$(stat -f -c %t /sys/fs/cgroup) (cgroup2: 0x63677270), controllers: \$(cat /sys/fs/cgroup/cgroup.controllers)"
cd /tmp
FIELDBENCH_IN_VM=1 TMPDIR=/data /budget.test -test.v -test.count=1 -test.run '$TESTS' -test.skip TestCgroupV2InVM
echo "vm-tests-exit=\$?"
if [ -x /bin/fieldbench ]; then
  # Redis Cluster of 2 masters on the VM's loopback, each in a group of
  # 0.2 CPU and 256 MiB, a short load, then down: nothing may be left.
  ip link set lo up
  export HOME=/data PATH=/bin:/usr/bin
  rc=0
  fieldbench cluster up redis --nodes 2 --budget cpu=0.2,memory=256MiB --dir /data/c > /data/up.log 2>&1 || { rc=1; cat /data/up.log; }
  [ \$rc = 0 ] && fieldbench cluster status --dir /data/c | sed 's/^/vm-status: /'
  for g in /sys/fs/cgroup/fieldbench-redis-*/*/; do echo "vm-group: \$g cpu.max \$(cat \$g/cpu.max) memory.max \$(cat \$g/memory.max) procs \$(wc -l < \$g/cgroup.procs)"; done
  [ \$rc = 0 ] && { fieldbench run microblog --db "\$(fieldbench cluster dsn --dir /data/c)" --clients 8 --duration 5s --warmup 1s --results /data/r > /data/run.log 2>&1 || { rc=1; tail -20 /data/run.log; }; }
  [ \$rc = 0 ] && grep -E '^ +(post|timeline|userline) ' /data/run.log | sed 's/^/vm-run: /'
  fieldbench cluster down --dir /data/c > /data/down.log 2>&1 || { rc=1; cat /data/down.log; }
  echo "vm-cluster-left: \$(ls -d /sys/fs/cgroup/fieldbench-* 2>/dev/null | wc -l) groups"
  echo "vm-cluster-exit=\$rc"
fi
poweroff -f
EOF
chmod 755 "$root/init"
(cd "$root" && find . | "$cache/busybox-static/bin/busybox" cpio -o -H newc 2>/dev/null | gzip -1) > "$work/initrd.gz"

echo "booting $image under qemu (no network) ..." >&2
start=$(date +%s)
timeout 600 qemu-system-x86_64 -accel "$ACCEL" -cpu max -m 1536 -smp 1 -nographic -no-reboot -nic none \
  -kernel "$vmlinuz" -initrd "$work/initrd.gz" \
  -append "console=ttyS0 quiet panic=-1 rdinit=/init" </dev/null | tr -d '\r' | tee "$work/console.log" |
  grep -E '^(vm|=== RUN|--- |    |PASS|FAIL|ok)' || true
rc=$(sed -n 's/^vm-tests-exit=\([0-9]*\).*/\1/p' "$work/console.log" | tail -1)
crc=$(sed -n 's/^vm-cluster-exit=\([0-9]*\).*/\1/p' "$work/console.log" | tail -1)
[[ -z $crc || $crc == 0 ]] || rc=1
pass=$(grep -c -- '^--- PASS' "$work/console.log" || true)
fail=$(grep -c -- '^--- FAIL' "$work/console.log" || true)
skip=$(grep -c -- '^--- SKIP' "$work/console.log" || true)
echo "cgroupv2-vm: $image, $pass passed, $fail failed, $skip skipped, $(( $(date +%s) - start )) s"
exit "${rc:-1}"
