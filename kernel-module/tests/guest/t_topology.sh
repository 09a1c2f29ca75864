# shellcheck shell=dash
# SPDX-License-Identifier: GPL-2.0
#
# t_topology: the guest kernel's own CPU topology in sysfs, as QEMU's -smp
# (run-kernels.sh's TLBB_QEMU_SMP, e.g. 4,sockets=1,clusters=2,cores=2 on
# arm64) set it up.  Checks that every CPU has its topology directory and,
# on arm64, a cluster (Linux 5.16 and later; 5.10 has none in sysfs); then copies every file of
# /sys/devices/system/cpu/cpu*/topology/, the NUMA nodes' cpulists, the THP
# mode and huge page size and /proc/cmdline into the console as "TLBB-SYSFS <path> <value>" lines, from
# which tests/kmod/test_topology_guest.py rebuilds the tree on the host and
# runs nova_tlbbalance's topology probes (and the DVMBM detection) on it.
n=0
check() {
	n=$((n + 1))
	[ "$n" = 1 ] && echo "KTAP version 1"
	if [ "$1" = 0 ]; then echo "ok $n $2"; else echo "not ok $n $2"; fi
}

# Clusters are in sysfs from Linux 5.16 on (bullseye's 5.10 has none).
clusters=1
case "$(uname -r)" in
[0-4].*|5.[0-9].*|5.1[0-5].*) clusters=0 ;;
esac

cpus=0
for d in /sys/devices/system/cpu/cpu[0-9]*; do
	cpus=$((cpus + 1))
	[ -f "$d/topology/physical_package_id" ] && [ -f "$d/topology/core_id" ]
	check $? "$(basename "$d") has topology/physical_package_id and core_id"
	if [ "$(uname -m)" = aarch64 ] && [ "$clusters" = 1 ]; then
		[ -f "$d/topology/cluster_id" ] && [ -f "$d/topology/cluster_cpus_list" ]
		check $? "$(basename "$d") has topology/cluster_id and cluster_cpus_list (arm64)"
	elif [ "$(uname -m)" = aarch64 ]; then
		[ ! -e "$d/topology/cluster_id" ]
		check $? "$(basename "$d") has no topology/cluster_id: kernel $(uname -r) predates clusters in sysfs (5.16)"
	fi
	for f in "$d"/topology/*; do
		[ -f "$f" ] && echo "TLBB-SYSFS ${f#/sys/} $(cat "$f")"
	done
done
[ "$cpus" = "$(nproc)" ]
check $? "$cpus cpu directories for $(nproc) online cpus"
for d in /sys/devices/system/node/node[0-9]*; do
	[ -f "$d/cpulist" ] && echo "TLBB-SYSFS ${d#/sys/}/cpulist $(cat "$d/cpulist")"
done
for f in /sys/kernel/mm/transparent_hugepage/enabled \
	 /sys/kernel/mm/transparent_hugepage/hpage_pmd_size; do
	echo "TLBB-SYSFS ${f#/sys/} $(cat "$f")"
done
echo "TLBB-PROC cmdline $(cat /proc/cmdline)"
echo "# $(uname -m): die_id $( [ -f /sys/devices/system/cpu/cpu0/topology/die_id ] && echo present || echo absent)"
