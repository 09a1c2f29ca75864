#!/bin/busybox sh
# shellcheck shell=dash
# SPDX-License-Identifier: GPL-2.0
#
# /init of the test initramfs (built by mkinitramfs.py, booted by
# run-kernels.sh).  Mounts the pseudo file systems, loads the modules listed
# in /modules/order (configfs and KVM first, tlbbalance.ko last), runs every
# /tests/t_* with a per-test timeout (/bin/tlbb-run, from tlbb-run.c: the
# test's whole process group is killed), prints markers the host's log checker
# (check-log.py) parses, and ends QEMU through isa-debug-exit:
#   0x10 written to port 0xf4 -> QEMU exit status 33: every test passed
#   0x11                      -> QEMU exit status 35: something failed
# Markers (one per line, at the start of the line):
#   TLBB-TEST-BEGIN <name>
#   TLBB-TEST-END <name> rc=<exit status> ok=<n> notok=<n> secs=<n> skip=<n>
#   TLBB-SUMMARY passed=<n> failed=<n> skipped=<n>
# Tests print KTAP (lib/tap.h); "ok N what # SKIP why" is a skip, not a pass.
/bin/busybox --install -s /bin
export PATH=/bin:/sbin
mkdir -p /proc /sys /dev /tmp /run
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t debugfs debugfs /sys/kernel/debug

timeout_default=$(cat /tests/.default-timeout 2>/dev/null || echo 240)
passed=0
failed=0
skipped=0

# One TAP line of this script's own checks (setup and teardown).
n=0
check() {
	n=$((n + 1))
	[ "$n" = 1 ] && echo "KTAP version 1"
	if [ "$1" = 0 ]; then
		echo "ok $n $2"
	else
		echo "not ok $n $2"
	fi
}

run_test() {	# name, command... (a shell function runs without timeout)
	name=$1
	shift
	limit=$timeout_default
	[ -f "/tests/$name.timeout" ] && limit=$(cat "/tests/$name.timeout")
	echo "TLBB-TEST-BEGIN $name"
	t0=$(cut -d. -f1 /proc/uptime)
	case "$1" in
	/*|sh) ( /bin/tlbb-run "$limit" "$@" 2>&1; echo $? >/tmp/rc ) ;;
	*) ( "$@" 2>&1; echo $? >/tmp/rc ) ;;
	esac | tee "/tmp/$name.out"
	rc=$(cat /tmp/rc)
	ok=$(grep -c '^ok ' "/tmp/$name.out")
	# "ok N what # SKIP why": a missing capability, not a pass.
	skip=$(grep -c '^ok .* # SKIP' "/tmp/$name.out")
	ok=$((ok - skip))
	notok=$(grep -c '^not ok ' "/tmp/$name.out")
	# A test that dies or times out without saying why counts as one failure.
	[ "$rc" != 0 ] && [ "$notok" = 0 ] && notok=1 &&
		echo "not ok - $name exited with status $rc (124: over its ${limit} s)"
	echo "TLBB-TEST-END $name rc=$rc ok=$ok notok=$notok secs=$(($(cut -d. -f1 /proc/uptime) - t0)) skip=$skip"
	passed=$((passed + ok))
	failed=$((failed + notok))
	skipped=$((skipped + skip))
}

setup() {
	echo "# kernel $(uname -r), $(nproc) cpus, thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled)"
	# /modules/order: "<file.ko> <params...>" in load order.
	while read -r ko params; do
		[ -n "$ko" ] || continue
		# shellcheck disable=SC2086
		insmod "/modules/$ko" $params
		check $? "insmod $ko $params"
		if [ "$ko" = configfs.ko ]; then
			mount -t configfs configfs /sys/kernel/config
			check $? "mount configfs"
		fi
	done </modules/order
	grep -q configfs /proc/mounts ||
		mount -t configfs configfs /sys/kernel/config 2>/dev/null
	if grep -q '^kvm_amd ' /proc/modules; then
		[ -c /dev/kvm ]
		check $? "/dev/kvm exists (kvm-amd, npt=$(cat /sys/module/kvm_amd/parameters/npt))"
	fi
	return 0	# failures are the "not ok" lines
}

teardown() {
	if grep -q '^tlbbalance ' /proc/modules; then
		rmmod tlbbalance
		check $? "rmmod tlbbalance"
	fi
	return 0
}

n=0
run_test setup setup
for t in /tests/t_*; do
	[ -e "$t" ] || continue
	case "$t" in
	*.timeout) continue ;;
	*.sh) run_test "$(basename "$t" .sh)" sh "$t" ;;
	*) run_test "$(basename "$t")" "$t" ;;
	esac
done
n=0
run_test teardown teardown

echo "TLBB-SUMMARY passed=$passed failed=$failed skipped=$skipped"
echo "TLBB-DMESG-BEGIN"
dmesg
echo "TLBB-DMESG-END"
sync
if [ "$failed" = 0 ] && [ "$passed" -gt 0 ]; then
	code='\020' status=33
else
	code='\021' status=35
fi
# arm64 (no isa-debug-exit): QEMU's semihosting exit, same status.
[ -x /bin/tlbb-exit ] && /bin/tlbb-exit "$status"
# isa-debug-exit: QEMU exits with (code << 1) | 1.
printf "$code" | dd of=/dev/port bs=1 seek=244 count=1 2>/dev/null
# Not reached when the device is there.
echo "TLBB-EXIT-FAILED isa-debug-exit did not end QEMU"
poweroff -f
