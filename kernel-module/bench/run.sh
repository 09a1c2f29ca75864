#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/run.sh: the in-module cost of the controller and the THP limiter per
# VM per tick, with 1 000 VMs registered, measured inside each Debian kernel
# booted under QEMU TCG (not part of the test pass/fail count).
#
# It runs the test harness (tests/run-kernels.sh) with TLBB_GUEST_DIR
# pointing at a throwaway folder whose only in-guest program is
# tests/guest/t_scale.c built with TLBB_BENCH defined: 1 000 child processes sharing a 16 MiB THP region
# (8 huge pages each), one VM per child, and three 10 s windows measured
# side by side in the same boot:
#   monitor, no backend   tick without controller (count + CPU sampling)
#   monitor, injected     + the controller core on mcf-shaped refills
#   balance, limit held   + the limiter holding N_hl = 0 (all split)
# The module sums the wall time of every tick (ktime) and of the controller
# call alone in debugfs tlbbalance/tick_cost; the figures are those sums
# divided by the number of ticks. Under TCG every instruction is emulated:
# the absolute numbers are 10-100x a native host's, the ratios hold.
#
# Usage: kernel-module/bench/run.sh        (TLBB_KERNELS="6.1 6.12" default)
# Prints one "BENCH <kernel> <window> ..." line per window and kernel.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
kmod=$(cd "$here/.." && pwd)
top=$(cd "$kmod/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The only in-guest program of this run: t_scale.c in bench mode.
printf '#define TLBB_BENCH 1\n#include "%s"\n' \
	"$kmod/tests/guest/t_scale.c" >"$work/t_bench_cost.c"

out=${TLBB_OUT:-$top/out/kmod-bench}
log=$out/bench.log
mkdir -p "$out"
set +e
TLBB_OUT=$out TLBB_GUEST_DIR=$work TLBB_HARNESS_SELFTEST=0 \
	TLBB_TEST_TIMEOUT=900 TLBB_BOOT_TIMEOUT=1200 \
	"$kmod/tests/run-kernels.sh" >"$log" 2>&1
status=$?
set -e
for d in "$out"/*/; do
	[ -f "$d/console.log" ] || continue
	abi=$(basename "$d")
	sed -n "s/^BENCH /BENCH $abi /p" "$d/console.log"
done
grep -E '^(not ok|total:)' "$log" || true
exit "$status"
