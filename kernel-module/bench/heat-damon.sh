#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/heat-damon.sh: what heat through stage 2 costs. Runs
# tests/guest/t_kvm_heat.c built with TLBB_BENCH (a nested KVM guest keeping
# 8 of 64 huge pages hot, 128 MiB) in Debian's 6.12 under QEMU TCG, where a
# kdamond (DAMON's fvaddr operations, one region per huge page) watches the
# guest's memory at three sampling intervals, 5 s each; the kdamond's CPU
# time (/proc/<pid>/stat) per GiB of guest RAM per second, and whether the
# hot pages still stand out, are printed. Also the MADV_COLLAPSE time per
# GiB after the limit is lifted. Under TCG every instruction is emulated:
# the absolute numbers are far above a native host's.
#
# Usage: kernel-module/bench/heat-damon.sh     (TLBB_KERNELS="6.12" default)
# Prints one "BENCH <kernel> ..." line per measurement.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
kmod=$(cd "$here/.." && pwd)
top=$(cd "$kmod/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The only in-guest program of this run: t_kvm_heat.c in bench mode (its
# header, with the timeout and architecture lines, copied first).
sed -n '1,/^ \*\//p' "$kmod/tests/guest/t_kvm_heat.c" >"$work/t_bench_heat.c"
printf '#define TLBB_BENCH 1\n#include "%s"\n' \
	"$kmod/tests/guest/t_kvm_heat.c" >>"$work/t_bench_heat.c"

out=${TLBB_OUT:-$top/out/kmod-bench-heat}
log=$out/bench.log
mkdir -p "$out"
set +e
TLBB_KERNELS=${TLBB_KERNELS:-6.12} TLBB_OUT=$out TLBB_GUEST_DIR=$work \
	TLBB_HARNESS_SELFTEST=0 TLBB_TEST_TIMEOUT=600 \
	"$kmod/tests/run-kernels.sh" >"$log" 2>&1
status=$?
set -e
for d in "$out"/*/; do
	[ -f "$d/console.log" ] || continue
	abi=$(basename "$d")
	sed -n "s/^# BENCH /BENCH $abi /p" "$d/console.log"
done
grep -E '^(not ok|total:)' "$log" || true
exit "$status"
