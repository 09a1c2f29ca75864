#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run-kernels.sh: build tlbbalance.ko for each Debian kernel line, boot each
# kernel under QEMU TCG with a busybox initramfs holding the module, the KVM
# modules and the in-guest tests (guest/t_*.c built static, guest/t_*.sh),
# run them and judge the console log.  `make -C kernel-module test-kernels`
# and `tox -e kmod` call this.  See docs/kernel-tests.md.
#
# Prints "<kernel>: N passed, N failed" per kernel, the elapsed time of each,
# and "total: N passed, N failed"; exits non-zero on any failure.
#
# Environment:
#   TLBB_KERNELS        kernel lines to test (default "5.10 6.1 6.12 7.2":
#                       bullseye's, bookworm's two and sid's, on x86_64
#                       and on arm64; TLBB_KERNELS=5.10 runs one)
#   TLBB_ARCH           amd64 (default) or arm64: Debian's arm64 kernels,
#                       the module and tests cross-built with
#                       aarch64-linux-gnu-gcc, booted with
#                       qemu-system-aarch64 -M virt,virtualization=on (TCG);
#                       tests whose source says "tlbb-test-arch: x86_64"
#                       are skipped there with their reason
#   TLBB_TESTS          only these tests, e.g. "t_kvm_stage2" (default all)
#   TLBB_TEST_TIMEOUT   seconds per test unless the source says
#                       "tlbb-test-timeout: N" (default 240)
#   TLBB_BOOT_TIMEOUT   seconds for one whole boot (default 480; 1200 on
#                       arm64; 3600 for
#                       the debug line, TLBB_KERNELS=6.12-debug: Debian's
#                       6.12 source built with KASAN, lockdep, DEBUG_VM by
#                       tools/kernels/build-debug.sh, x86_64 only; tox -e
#                       kmod-debug)
#   TLBB_DEBUG_SLOWDOWN the debug line's factor on every test's timeout
#                       (default 4)
#   TLBB_QEMU_MEM       guest RAM (default 2G);  TLBB_QEMU_SMP (default 2;
#                       a topology works too: 4,sockets=1,clusters=2,cores=2)
#   TLBB_APPEND         more guest kernel command line
#   TLBB_QEMU_ACCEL     QEMU accelerator (default tcg,thread=single: see below)
#   TLBB_JOBS=2         test the kernels in parallel (default 1: one QEMU at
#                       a time; use 2 only on a machine of your own)
#   TLBB_VERBOSE=1      echo the whole console, not just the test lines
#   TLBB_OUT            output dir (default: a fresh
#                       <repo>/out/kmod/run-<time>-<pid>, linked from
#                       out/kmod/latest; the 5 newest runs are kept, so
#                       concurrent runs in one tree never share files)
#   TLBB_GUEST_DIR      where the t_* tests are (default tests/guest;
#                       harness-selftest.sh points it at failing tests)
#   TLBB_NO_MODULE=1    do not build or load tlbbalance.ko
#   TLBB_REBUILD=1      rebuild the module even if the same sources were
#                       built for that kernel before (cached by content hash)
#   TLBB_HARNESS_SELFTEST=0  skip harness-selftest.sh (run after the
#                       kernels, on the first line: ~60 s; it shows that
#                       failures, panics and hangs make this script fail)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
kmod=$(cd "$here/.." && pwd)
top=$(cd "$kmod/.." && pwd)
if [ -n "${TLBB_OUT:-}" ]; then
	out=$TLBB_OUT
else
	out=$top/out/kmod/run-$(date -u +%Y%m%dT%H%M%S)-$$
	# shellcheck disable=SC2012
	ls -1dt "$top"/out/kmod/run-* 2>/dev/null | tail -n +5 |
		while read -r old; do rm -rf "$old"; done
	mkdir -p "$out"
	ln -sfn "$(basename "$out")" "$top/out/kmod/latest"
fi
if [ "${TLBB_ARCH:-amd64}" = arm64 ]; then
	kernels=${TLBB_KERNELS:-"5.10 6.1 6.12 7.2"}
else
	kernels=${TLBB_KERNELS:-"5.10 6.1 6.12 7.2"}
fi
guest_dir=${TLBB_GUEST_DIR:-$here/guest}
test_timeout=${TLBB_TEST_TIMEOUT:-240}
# One whole boot: the x86_64 suite takes 1-5 minutes; arm64 TCG runs the
# same tests 2-4 times slower (at load 20 5.10's t_badinput alone took
# 229 s, against 66 s at load 17): 480 s cut it in the middle.
if [ "${TLBB_ARCH:-amd64}" = arm64 ]; then
	boot_timeout=${TLBB_BOOT_TIMEOUT:-1200}
else
	boot_timeout=${TLBB_BOOT_TIMEOUT:-480}
fi
mem=${TLBB_QEMU_MEM:-2G}
smp=${TLBB_QEMU_SMP:-2}
# Single-threaded TCG: with one host thread per vCPU (MTTCG) a vCPU can run
# a stale translated block after the kernel patched its text (static keys,
# alternatives) and hit an orphaned int3: an Oops in the guest that has
# nothing to do with the code under test (seen once on 6.12 under load).
accel=${TLBB_QEMU_ACCEL:-tcg,thread=single}
jobs=${TLBB_JOBS:-1}
cache=${TLBB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nova-tlbbalance}
arch=${TLBB_ARCH:-amd64}
case "$arch" in
amd64) CC=${CC:-gcc} ;;
arm64) CC=${CC:-aarch64-linux-gnu-gcc} ;;	# the module: module.py
*) echo "run-kernels: TLBB_ARCH must be amd64 or arm64, not '$arch'" >&2
	exit 2 ;;
esac
CFLAGS="-static -O2 -g -Wall -Wextra -Werror -std=gnu11"

say() { echo "run-kernels: $*"; }

mkdir -p "$out"
t_all=$(date +%s)
total_pass=0
total_fail=0
results=()

# A source marked "tlbb-test-arch: x86_64 (why)" builds and runs on
# x86_64 only.
arch_ok() {
	local want
	want=$(sed -n 's/.*tlbb-test-arch: *\([a-z0-9_]*\).*/\1/p' "$1" | head -n 1)
	[ -z "$want" ] || [ "$want" = "$( [ "$arch" = amd64 ] && echo x86_64 || echo aarch64)" ]
}
arch_why() {
	sed -n 's/.*tlbb-test-arch: *\(.*\)$/\1/p' "$1" | head -n 1
}

# --- in-guest tests: built once, they do not depend on the kernel ---------
build_tests() {
	local dir=$out/tests src name t0 ok=0 bad=0 libs= lib
	rm -rf "$dir"
	mkdir -p "$dir"
	t0=$(date +%s)
	for lib in "$here"/lib/*.c; do
		arch_ok "$lib" && libs="$libs $lib"
	done
	for src in "$guest_dir"/t_*.c "$guest_dir"/t_*.sh; do
		[ -e "$src" ] || continue
		name=$(basename "$src")
		name=${name%.c}
		name=${name%.sh}
		if [ -n "${TLBB_TESTS:-}" ] &&
		   ! echo " $TLBB_TESTS " | grep -q " $name "; then
			continue
		fi
		if ! arch_ok "$src"; then
			say "skip $name on $arch: $(arch_why "$src")"
			continue
		fi
		case "$src" in
		*.c)
			# shellcheck disable=SC2086
			if ! $CC $CFLAGS -I"$here/lib" -I"$kmod/core" \
				-o "$dir/$name" "$src" $libs \
				>"$dir/$name.build.log" 2>&1; then
				cat "$dir/$name.build.log"
				say "not ok - build $name"
				bad=$((bad + 1))
				continue
			fi
			;;
		*.sh) cp "$src" "$dir/$name.sh" ;;
		esac
		timeout=$(sed -n 's/.*tlbb-test-timeout: *\([0-9]\+\).*/\1/p' \
			"$src" | head -n 1)
		[ -n "$timeout" ] && echo "$timeout" >"$dir/$name.timeout"
		ok=$((ok + 1))
	done
	rm -f "$dir"/*.build.log
	# shellcheck disable=SC2086
	if ! $CC $CFLAGS -o "$dir/.tlbb-run" "$here/tlbb-run.c"; then
		say "not ok - build tlbb-run"
		bad=$((bad + 1))
	fi
	# arm64 has no isa-debug-exit: QEMU's semihosting exit instead.
	# shellcheck disable=SC2086
	if [ "$arch" = arm64 ] &&
	   ! $CC $CFLAGS -o "$dir/.tlbb-exit" "$here/tlbb-exit.c"; then
		say "not ok - build tlbb-exit"
		bad=$((bad + 1))
	fi
	echo "$test_timeout" >"$dir/.default-timeout"	# read by guest-init.sh
	say "built $ok in-guest tests ($bad failed) in $(($(date +%s) - t0)) s"
	return "$bad"
}

# --- tlbbalance.ko for one kernel: W=1, any warning fails -----------------
# The one module build (tools/kernels/boot/module.py, the node's too):
# kernel-module/ without tests copied to <out-dir>/module, make W=1, any
# warning: or error: line fails, cached by sources, kernel ABI and compiler
# (~/.cache/nova-tlbbalance/kmod-builds).
build_module() {	# kernel-dir, out-dir; sets $ko
	local kdir=$1 dir=$2 t0
	ko=
	if [ -n "${TLBB_NO_MODULE:-}" ]; then
		say "TLBB_NO_MODULE set: testing without tlbbalance.ko"
		return 0
	fi
	if [ ! -f "$kmod/Kbuild" ] && ! grep -qs 'obj-m' "$kmod/Makefile"; then
		say "no kernel-module/Kbuild yet: testing without tlbbalance.ko"
		return 0
	fi
	t0=$(date +%s)
	if ! ko=$(TLBB_CACHE=$cache PYTHONPATH=$top/tools python3 -m \
		kernels.boot build-module "$kdir" "$dir" \
		${TLBB_REBUILD:+--rebuild} --say-prefix "run-kernels: "); then
		ko=
		say "not ok - module build for $(cat "$kdir/abi") (above)"
		return 1
	fi
	say "ok - tlbbalance.ko built with W=1, no warnings ($(($(date +%s) - t0)) s)"
	return 0
}

# --- one kernel ------------------------------------------------------------
# A kernel's verdict, in a file: run_kernel may run in a background job.
record() {	# line, passed, failed, note
	echo "$2 $3 $1: $2 passed, $3 failed ($4)" >"$out/.result-$1"
}

run_kernel() {	# line
	local line=$1 kdir abi dir t0 tb status pass=0 fail=0 summary
	t0=$(date +%s)
	# A "-debug" line is built from Debian's source with KASAN, lockdep,
	# DEBUG_VM (tools/kernels/build-debug.sh, x86_64 only), several times
	# slower: its own whole-boot limit, each test's timeout times
	# TLBB_DEBUG_SLOWDOWN (default 4), every KASAN report printed.
	local fetch=fetch.sh limit=$boot_timeout append= scale=1
	case "$line" in
	*-debug)
		fetch=build-debug.sh
		limit=${TLBB_BOOT_TIMEOUT:-3600}
		scale=${TLBB_DEBUG_SLOWDOWN:-4}
		append=kasan_multi_shot ;;
	esac
	kdir=$("$top/tools/kernels/$fetch" "$line" "$arch") || {
		say "not ok - fetch kernel $line"
		record "$line" 0 1 "kernel fetch failed"
		return
	}
	abi=$(cat "$kdir/abi")
	dir=$out/$abi
	mkdir -p "$dir"
	say "== kernel $line ($abi)"
	if build_module "$kdir" "$dir"; then
		[ -n "$ko" ] && pass=$((pass + 1))
	else
		fail=$((fail + 1))
		ko=
	fi
	local tests=$out/tests f
	if [ "$scale" != 1 ]; then
		tests=$dir/tests
		rm -rf "$tests"
		cp -a "$out/tests" "$tests"
		for f in "$tests"/*.timeout "$tests"/.default-timeout; do
			[ -f "$f" ] && echo $(($(cat "$f") * scale)) >"$f"
		done
	fi
	if ! "$here/mkinitramfs.py" "$kdir" "$dir/initramfs.cpio" \
		"$tests" "$ko"; then
		say "not ok - initramfs for $abi"
		record "$line" "$pass" $((fail + 1)) "$abi"
		return
	fi
	say "booting $abi under QEMU $accel (-cpu max, $mem, $smp cpus)"
	tb=$(date +%s)
	# The one boot stack (tools/kernels/boot) builds the QEMU command:
	# x86_64 PVH-boots the vmlinux and exits through isa-debug-exit, arm64
	# boots the Image on -M virt,virtualization=on and exits through
	# semihosting (tlbb-exit.c).
	local qemu argv
	if ! argv=$(PYTHONPATH=$top/tools python3 -m kernels.boot qemu-argv \
		"$kdir" "$dir/initramfs.cpio" --accel "$accel" --mem "$mem" \
		--smp "$smp" \
		--append "loglevel=5 panic=-1 rdinit=/init $append ${TLBB_APPEND:-}"); then
		say "not ok - no QEMU command for $abi"
		record "$line" "$pass" $((fail + 1)) "$abi"
		return
	fi
	mapfile -t qemu <<<"$argv"
	timeout -k 10 "$limit" "${qemu[@]}" </dev/null 2>&1 |
		tee "$dir/console.log" |
		if [ -n "${TLBB_VERBOSE:-}" ]; then cat; else
			grep --line-buffered -E \
			'^(ok |not ok |# |Bail|TLBB-TEST|TLBB-SUMMARY)|BUG:|WARNING:|Oops|Kernel panic'
		fi
	status=${PIPESTATUS[0]}
	rm -f "$dir/initramfs.cpio"
	say "$line: QEMU ran $(($(date +%s) - tb)) s (boot, tests, power-off)"
	# The kernel's own time stamp of starting /init (in the dmesg dump).
	say "$line: booted to /init in $(sed -n 's/^\[ *\([0-9.]*\)\] Run \/init as init process.*/\1/p' \
		"$dir/console.log" | head -n 1 | grep . || echo '?') s (guest clock)"
	[ "$status" = 124 ] && say "not ok - $abi: no result within ${limit}s (hang)"
	summary=$(python3 "$here/check-log.py" "$dir/console.log" "$line" "$status")
	# Its own count line is folded into ours below: print the rest.
	echo "$summary" | sed '$d'
	summary=$(echo "$summary" | tail -n 1)
	# "<abi>: N passed, N failed" from the log, plus the module build.
	local p f
	p=$(echo "$summary" | sed -n 's/.*: \([0-9]\+\) passed, \([0-9]\+\) failed$/\1/p')
	f=$(echo "$summary" | sed -n 's/.*: \([0-9]\+\) passed, \([0-9]\+\) failed$/\2/p')
	pass=$((pass + ${p:-0}))
	fail=$((fail + ${f:-1}))
	say "$line: elapsed $(($(date +%s) - t0)) s (fetch, build, boot, tests)"
	record "$line" "$pass" "$fail" "$abi, $(($(date +%s) - t0)) s"
}

rm -f "$out"/.result-* "$out"/.output-*
build_tests
total_fail=$((total_fail + $?))
if [ "$jobs" -gt 1 ]; then
	# All kernels at once, each printing to its own file, shown in order.
	say "running ${kernels// /, } in parallel (TLBB_JOBS=$jobs)"
	for line in $kernels; do
		run_kernel "$line" >"$out/.output-$line" 2>&1 &
	done
	wait
	for line in $kernels; do
		cat "$out/.output-$line"
	done
else
	for line in $kernels; do
		run_kernel "$line"
	done
fi
for line in $kernels; do
	read -r p f r <"$out/.result-$line" || { p=0 f=1 r="$line: no result"; }
	total_pass=$((total_pass + p))
	total_fail=$((total_fail + f))
	results+=("$r")
done
if [ "${TLBB_HARNESS_SELFTEST:-1}" != 0 ]; then
	say "== harness self-test (deliberate failures in throwaway tests)"
	t0=$(date +%s)
	st=$(TLBB_OUT=$out "$here/harness-selftest.sh" "${kernels%% *}")
	echo "$st" | sed '$d'
	st=$(echo "$st" | tail -n 1)
	p=$(echo "$st" | sed -n 's/.*: \([0-9]\+\) passed, \([0-9]\+\) failed.*/\1/p')
	f=$(echo "$st" | sed -n 's/.*: \([0-9]\+\) passed, \([0-9]\+\) failed.*/\2/p')
	total_pass=$((total_pass + ${p:-0}))
	total_fail=$((total_fail + ${f:-1}))
	results+=("harness-selftest: ${p:-0} passed, ${f:-1} failed ($(($(date +%s) - t0)) s)")
fi
say "== results (console logs in $out/<kernel>/console.log)"
for r in "${results[@]}"; do
	echo "$r"
done
echo "total: $total_pass passed, $total_fail failed ($(($(date +%s) - t_all)) s)"
[ "$total_fail" = 0 ] && [ "$total_pass" -gt 0 ]
