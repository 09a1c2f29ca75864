# shellcheck shell=dash
# SPDX-License-Identifier: GPL-2.0
#
# t_stage_bail: t_stage removes its VMs on every exit path, so a setup step
# that fails no longer leaves a VM registered and the teardown's rmmod
# failing with it (seen when t_stage bailed out on a kernel without
# ns_last_pid). Runs /tests/t_stage twice with its pid-reuse case made
# impossible, its own output kept in a file (its "not ok" and "Bail out!"
# are expected here; its last lines are shown as "# " lines):
#  1. a plain file bind-mounted over /proc/sys/kernel/ns_last_pid, as on a
#     kernel without it: t_stage bails out (status 1); no vms/stg-* left;
#  2. a FIFO there: t_stage blocks writing it, in the middle of its
#     pid-reuse case with vms/stg-reuse staged; SIGTERM, as tlbb-run sends
#     at a test's timeout: status 143; no vms/stg-* left.
# Whatever is left is removed afterwards, for the tests after this one.
n=0
check() {
	n=$((n + 1))
	[ "$n" = 1 ] && echo "KTAP version 1"
	if [ "$1" = 0 ]; then echo "ok $n $2"; else echo "not ok $n $2"; fi
}

vms=/sys/kernel/config/tlbbalance/vms
nslp=/proc/sys/kernel/ns_last_pid
left() {
	# shellcheck disable=SC2012
	ls "$vms" 2>/dev/null | grep '^stg-' | tr '\n' ' '
}
clean() {
	for v in $(left); do
		echo "$v off" >/sys/kernel/debug/tlbbalance/inject 2>/dev/null
		echo off >"$vms/$v/mode"
		rmdir "$vms/$v" || echo "# could not remove vms/$v either"
	done
}
show() {	# output file of t_stage
	tail -n 6 "$1" | sed 's/^/# t_stage: /'
}

if [ ! -x /tests/t_stage ]; then
	echo "KTAP version 1"
	echo "ok 1 t_stage leaves no VM behind # SKIP t_stage not built (TLBB_TESTS)"
	exit 0
fi
[ -w "$nslp" ]
check $? "$nslp exists (CONFIG_CHECKPOINT_RESTORE), to hide it"

# 1. A bail-out.
: >/tmp/ns_last_pid.file
mount --bind /tmp/ns_last_pid.file "$nslp"
check $? "a plain file bind-mounted over $nslp"
/tests/t_stage >/tmp/t_stage.1 2>&1
rc=$?
umount "$nslp"
show /tmp/t_stage.1
grep -q '^Bail out!' /tmp/t_stage.1 && [ "$rc" = 1 ]
check $? "t_stage bails out when no process gets the number it wants (status $rc)"
l=$(left)
[ -z "$l" ]
check $? "a bail-out leaves no VM behind (left: ${l:-none})"
clean

# 2. SIGTERM in the middle of a case.
rm -f /tmp/ns_last_pid.fifo
mkfifo /tmp/ns_last_pid.fifo
mount --bind /tmp/ns_last_pid.fifo "$nslp"
check $? "a FIFO bind-mounted over $nslp"
/tests/t_stage >/tmp/t_stage.2 2>&1 &
pid=$!
# Until its pid-reuse case stages (1-6 s under TCG; bounded for a loaded
# host), then a second for it to reach the FIFO, where it blocks.
i=0
while ! grep -qs '^staging 1$' "$vms/stg-reuse/status" &&
      kill -0 "$pid" 2>/dev/null && [ "$i" -lt 180 ]; do
	sleep 1
	i=$((i + 1))
done
sleep 1
staged=$(grep -s '^staging' "$vms/stg-reuse/status")
kill -0 "$pid" 2>/dev/null && [ "$staged" = "staging 1" ]
check $? "t_stage blocked in its pid-reuse case, vms/stg-reuse staged (${staged:-no stg-reuse}, after ${i} s)"
kill -TERM "$pid"
wait "$pid"
rc=$?
umount "$nslp"
show /tmp/t_stage.2
[ "$rc" = 143 ]
check $? "SIGTERM ends it (status $rc, want 143)"
l=$(left)
[ -z "$l" ]
check $? "SIGTERM leaves no VM behind (left: ${l:-none})"
clean
