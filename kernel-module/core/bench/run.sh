#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
# `make bench`: instructions the controller spends per VM per tick (one
# tlbb_ctrl_tick() call, i.e. one decision step), counted by
# valgrind --tool=callgrind over 1000 VMs, for four scenarios (see
# bench_ctrl.c). Only instructions executed inside tlbb_ctrl_tick() and what
# it calls are counted (--toggle-collect); input generation is not.
#
# Usage: bench/run.sh <bench_ctrl binary> [vms] [ticks]
set -eu
bin=$1
vms=${2:-1000}
ticks=${3:-1000}
out=$(dirname "$bin")/callgrind
max=${BENCH_MAX_INSN:-500}	# budget per VM per tick (docs/controller.md, Cost)
fail=0
mkdir -p "$out"
command -v valgrind >/dev/null || { echo "valgrind not installed"; exit 1; }

for scenario in idle mixed worst hill; do
	cg=$out/callgrind.out.$scenario
	valgrind --tool=callgrind --toggle-collect=tlbb_ctrl_tick \
		--callgrind-out-file="$cg" "$bin" "$scenario" "$vms" "$ticks" \
		> "$out/$scenario.txt" 2> "$out/$scenario.valgrind.log" ||
		{ cat "$out/$scenario.valgrind.log"; exit 1; }
	calls=$(awk '$1 == "ticks" { print $2 }' "$out/$scenario.txt")
	ir=$(awk '$1 == "summary:" { print $2 }' "$cg")
	[ -n "$calls" ] && [ -n "$ir" ] && [ "$ir" -gt 0 ] ||
		{ echo "no figures from $scenario run"; exit 1; }
	grep -v '^ticks \|wall clock' "$out/$scenario.txt"
	awk -v ir="$ir" -v n="$calls" -v s="$scenario" -v max="$max" 'BEGIN {
		printf "%s: %d instructions in tlbb_ctrl_tick over %d calls\n",
			s, ir, n
		printf "%s: %.1f instructions per decision (per VM per tick)\n",
			s, ir / n
		if (ir / n >= max) {
			printf "%s: at or above the budget of %d\n", s, max
			exit 1
		} }' || fail=1
	echo
done
# Native timing of the same binary, for scale (not a callgrind figure).
"$bin" mixed "$vms" "$ticks" | grep 'wall clock' | sed 's/^/native mixed: /'
exit $fail
