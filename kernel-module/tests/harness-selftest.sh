#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# harness-selftest.sh: show that run-kernels.sh fails when it must.  Boots
# one kernel three times with deliberately failing in-guest tests (no
# tlbbalance.ko) and checks the harness's verdict each time:
#   1. a "not ok" line, a silent non-zero exit, a per-test timeout and a
#      "WARNING:" line in the kernel log (written through /dev/kmsg) next to
#      a passing test: exactly those failures are counted, exit status 1;
#   2. a kernel panic (sysrq c): the test never ends, no summary, QEMU's
#      status is not the guest's verdict, the panic is in the log;
#   3. a test that outlives the whole boot: the overall timeout fires.
# The sub-runs' own output goes to files (their "N passed, N failed" lines
# are about the deliberate failures and must not be added up by CI).
# Prints "harness-selftest: N passed, N failed".  Takes ~60 s on an idle
# machine (three boots, one of them waiting for its timeout).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
line=${1:-6.1}
work=${TLBB_OUT:-$top/out/kmod}/harness-selftest
rm -rf "$work"
mkdir -p "$work"
pass=0
fail=0

check() {	# condition-exit-status, what
	if [ "$1" = 0 ]; then
		echo "ok - harness-selftest: $2"
		pass=$((pass + 1))
	else
		echo "not ok - harness-selftest: $2"
		fail=$((fail + 1))
	fi
}

has() {	# log, fixed string
	grep -qF -- "$2" "$1"
}

run() {	# name, boot timeout; tests are in $work/<name>/guest
	TLBB_KERNELS=$line TLBB_NO_MODULE=1 TLBB_HARNESS_SELFTEST=0 \
	TLBB_GUEST_DIR=$work/$1/guest TLBB_OUT=$work/$1/out \
	TLBB_BOOT_TIMEOUT=$2 "$here/run-kernels.sh" >"$work/$1.log" 2>&1
}

# 1. Failures the guest sees, and a kernel log line.
g=$work/fails/guest
mkdir -p "$g"
printf 'echo "ok 1 - one"\necho "ok 2 - two"\n' >"$g/t_a_pass.sh"
printf 'echo "ok 1 - fine"\necho "not ok 2 - deliberate"\n' >"$g/t_b_notok.sh"
printf 'exit 3\n' >"$g/t_c_silent.sh"
# A child in the background must not keep the run waiting either.
printf '# tlbb-test-timeout: 3\nsleep 200 &\nsleep 100\n' >"$g/t_d_timeout.sh"
printf 'echo "WARNING: CPU: 0 PID: 1 at harness-selftest" >/dev/kmsg\n' \
	>"$g/t_e_kmsg.sh"
t0=$(date +%s)
run fails 120
rc=$?
t=$(($(date +%s) - t0))
log=$work/fails.log
check "$([ $rc != 0 ]; echo $?)" "failing tests make run-kernels.sh exit non-zero (status $rc)"
has "$log" 'not ok 2 - deliberate'
check $? "a 'not ok' line is reported"
has "$log" 'not ok - t_c_silent exited with status 3'
check $? "a silent non-zero exit counts as a failure"
has "$log" 'not ok - t_d_timeout exited with status 124'
check $? "a test over its timeout is killed and counted"
# Its background "sleep 200" would hold the run for 200 s.
check "$([ $t -lt 150 ]; echo $?)" "the timed-out test's whole process group is gone (run took $t s)"
has "$log" 'not ok - '"$line"': QEMU exit status 35'
check $? "the guest's failure verdict reaches QEMU's exit status"
has "$log" 'not ok - '"$line"': kernel log free of'
check $? "a WARNING: line in the kernel log fails the run"
# The ok count includes setup's module loads (KVM's: x86 only).
grep -qE '^ok - '"$line"': guest summary \(([0-9]+), 3\) matches' "$log"
check $? "host and guest count the same ok/not ok lines"
grep -qE "^$line: [0-9]+ passed, 5 failed" "$log"
check $? "exactly the 5 failures are counted ($(grep -E "^$line: " "$log"))"

# 2. A kernel panic in the middle of a test.
g=$work/panic/guest
mkdir -p "$g"
printf 'echo "ok 1 - before"\necho c >/proc/sysrq-trigger\nsleep 30\n' \
	>"$g/t_panic.sh"
run panic 120
rc=$?
log=$work/panic.log
check "$([ $rc != 0 ]; echo $?)" "a panic makes run-kernels.sh exit non-zero (status $rc)"
has "$log" 'not ok - '"$line"': t_panic never ended'
check $? "the test interrupted by the panic is counted as failed"
has "$log" 'not ok - '"$line"': guest summary None'
check $? "the missing guest summary is a failure"
has "$log" 'Kernel panic'
check $? "the panic is shown"

# 3. A hang that outlives the whole boot.
g=$work/hang/guest
mkdir -p "$g"
printf '# tlbb-test-timeout: 900\necho "ok 1 - before"\nsleep 900\n' \
	>"$g/t_hang.sh"
# The boot timeout must outlast boot and setup, which take longer on a
# loaded machine: 1.5 times the whole first run (boot, 5 short tests,
# power-off), at least 30 s. If the machine was slower this time and the
# timeout fired before t_hang even began (seen at load 20: setup had not
# ended after 48 s), the run proves nothing about a hanging test: run it
# once more with twice the time.
limit=$((3 * t / 2 > 30 ? 3 * t / 2 : 30))
for try in 1 2; do
	t0=$(date +%s)
	run hang "$limit"
	rc=$?
	log=$work/hang.log
	grep -q 'TLBB-TEST-BEGIN t_hang' "$log" && break
	echo "harness-selftest: t_hang had not begun within ${limit}s (try $try)"
	limit=$((limit * 2))
done
check "$([ $rc != 0 ]; echo $?)" "a hang makes run-kernels.sh exit non-zero (status $rc)"
has "$log" "no result within ${limit}s (hang)"
check $? "the overall boot timeout fires ($(($(date +%s) - t0)) s)"
has "$log" 'not ok - '"$line"': t_hang never ended'
check $? "the hanging test is counted as failed"

echo "harness-selftest: $pass passed, $fail failed (logs in $work)"
[ "$fail" = 0 ]
