#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Reserve huge pages for hugetlbfs-backed VMs through sysfs, no Python
# (run by the tlbbalance role through ansible.builtin.script).
#
#   tlbbalance-hugepages.sh [--check] SIZE_KB=COUNT...   e.g. 2048=512
#
# --check (Ansible's check mode): change nothing, print "changed: <what>
# (check mode)" for each count a real run would set.
#
# Sets /sys/kernel/mm/hugepages/hugepages-<SIZE_KB>kB/nr_hugepages to COUNT
# (now, not across reboots: see docs/ansible.md). Prints "changed: <what>" per
# change; fails with "tlbbalance-hugepages: <host>: <reason>" when the size
# is not supported or the kernel reserved fewer pages than asked (memory
# too fragmented or too small), having put the old count back.
set -u
host=$(hostname)
check=0
[ "${1:-}" = --check ] && { check=1; shift; }

die() {
	echo "tlbbalance-hugepages: $host: $*" >&2
	exit 1
}

for arg in "$@"; do
	size=${arg%%=*} count=${arg#*=}
	case $size$count in
	*[!0-9]* | '') die "bad argument '$arg' (SIZE_KB=COUNT)" ;;
	esac
	f=/sys/kernel/mm/hugepages/hugepages-${size}kB/nr_hugepages
	[ -f "$f" ] || die "huge page size ${size} kB not supported by" \
		"$(uname -r) (no $f)"
	have=$(cat "$f")
	[ "$have" = "$count" ] && continue
	if [ "$check" = 1 ]; then
		echo "changed: $f $have -> $count (check mode)"
		continue
	fi
	echo "$count" >"$f" 2>/dev/null
	got=$(cat "$f")
	if [ "$got" != "$count" ]; then
		echo "$have" >"$f" 2>/dev/null
		die "asked for $count huge pages of $size kB, the kernel" \
			"reserved $got (was $have; put back)"
	fi
	echo "changed: $f $have -> $count"
done
exit 0
