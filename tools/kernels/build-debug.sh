#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# build-debug.sh <6.12-debug> [amd64]: build a debug kernel from Debian
# bookworm's own kernel source (linux-source-6.12, fetched with `apt-get
# download`, never installed): `make tinyconfig` plus
# tools/kernels/debug/debug.config (what the test harness and the in-guest
# tests need, and KASAN, KFENCE, lockdep (PROVE_LOCKING), DEBUG_VM,
# DEBUG_ATOMIC_SLEEP), cached under ~/.cache/nova-tlbbalance/kernels/ in
# fetch.sh's layout, so that kernel-module/tests/run-kernels.sh
# (TLBB_KERNELS=6.12-debug) and tools/kernels/boot boot it unchanged.
# Prints the cache directory (the only line on stdout).  x86_64 only.
#
# Cached by what decides the kernel: the source package's version, the
# config fragment, this script's format and the compiler.  Their hash is in
# the kernel release (6.12.NN-debug-<hash>), so each build has its own
# directory, its own module-build cache key and its own `uname -r`.  Fast
# and offline when cached.  One build at a time per cache (flock on
# <base>/.lock-debug, not fetch.sh's lock).
#
# Cache layout (fetch.sh's, plus the build trees):
#   <dir>/abi            the kernel release, e.g. 6.12.117-debug-0123abcd
#   <dir>/headers        -> build: make -C <dir>/headers M=... modules
#   <dir>/modules        -> lib/modules/<abi> (modules_install, depmod)
#   <dir>/arch           amd64
#   <dir>/vmlinux        ELF kernel for QEMU PVH boot
#   <dir>/vmlinuz        bzImage
#   <dir>/config         the kernel's .config
#   <dir>/packages.txt   linux-source-6.12=<version>
#   <dir>/build-time.txt wall and CPU time of the build, load average
#   <dir>/src/ <dir>/build/ <dir>/root/   source, objects (O=), install
#   <base>/debs/         the .deb files (kept to skip re-downloads)
#
# The build runs `nice -n 10 make -j$TLBB_DEBUG_JOBS` (default 2).  Needs
# flex, bison, libelf-dev and bc (tools/ci/system-packages.txt).  Uncached
# it takes tens of minutes on 2 cores: docs/kernel-tests.md has figures.
#
# Environment: TLBB_CACHE (default ~/.cache/nova-tlbbalance),
#              TLBB_DEBUG_JOBS (make -j, default 2),
#              TLBB_KERNEL_REFRESH=1 to re-resolve the source package's
#              version even when a build is cached.
set -euo pipefail

# Bump when what this script builds changes: the hash changes with it.
format=1

here=$(cd "$(dirname "$0")" && pwd)
line=${1:-}
arch=${2:-amd64}
cache=${TLBB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nova-tlbbalance}
base=$cache/kernels
fragment=$here/debug/debug.config
jobs=${TLBB_DEBUG_JOBS:-2}

die() { echo "build-debug.sh: $*" >&2; exit 1; }
log() { echo "build-debug.sh: $*" >&2; }

case "$line" in
6.12-debug) srcpkg=linux-source-6.12 ;;
*) die "usage: $0 6.12-debug [amd64] (got '${line}')" ;;
esac
[ "$arch" = amd64 ] ||
	die "the debug kernel is built for x86_64 (amd64) only, not '$arch'"
[ -f "$fragment" ] || die "no config fragment $fragment"
case "$jobs" in
''|*[!0-9]*|0) die "TLBB_DEBUG_JOBS must be a positive number, not '$jobs'" ;;
esac
current=$line.current

mkdir -p "$base"
# Fast path: the last completed build, if its inputs are unchanged.
key_of() {	# source version -> hash of everything that decides the kernel
	{
		echo "format $format"
		echo "$srcpkg=$1"
		cat "$fragment"
		gcc --version | head -n 1
	} | sha256sum | cut -c1-8
}
if [ -z "${TLBB_KERNEL_REFRESH:-}" ] &&
   [ -f "$base/$current/.complete" ]; then
	v=$(sed -n "s/^$srcpkg=//p" "$base/$current/packages.txt" 2>/dev/null)
	if [ -n "$v" ] &&
	   [ "$(cat "$base/$current/.complete")" = "key $(key_of "$v")" ]; then
		(cd "$base/$current" && pwd -P)
		exit 0
	fi
fi

command -v apt-cache >/dev/null || die "apt-cache not found (Debian only)"
for tool in flex bison bc gcc make; do
	command -v "$tool" >/dev/null ||
		die "$tool not found: run tools/ci/install-system-deps.sh"
done
[ -f /usr/include/gelf.h ] ||
	die "libelf-dev missing (objtool): run tools/ci/install-system-deps.sh"

version=$(apt-cache policy "$srcpkg" | sed -n 's/^ *Candidate: //p')
[ -n "$version" ] && [ "$version" != "(none)" ] ||
	die "no candidate version of $srcpkg (run apt-get update?)"
key=$(key_of "$version")

# One build at a time per cache; a lock of its own, not fetch.sh's: a
# build holds it for tens of minutes and must not stop kernel fetches.
exec 9>"$base/.lock-debug"
if ! flock -n 9; then
	log "waiting for another debug kernel build to end ($base/.lock-debug)"
	flock 9 || die "cannot lock $base/.lock-debug"
fi

# The kernel release: upstream's version (from the source's Makefile,
# read after unpacking) and the key; the directory is named after it.
# A completed build of the same key under any release is reused.
for d in "$base"/*-debug-"$key"; do
	if [ "$(cat "$d/.complete" 2>/dev/null)" = "key $key" ]; then
		ln -sfn "$(basename "$d")" "$base/$current"
		(cd "$d" && pwd -P)
		exit 0
	fi
done

deb=$base/debs/${srcpkg}_${version/:/%3a}_all.deb
mkdir -p "$base/debs"
if [ ! -f "$deb" ]; then
	log "downloading $srcpkg=$version (about 140 MB)"
	(cd "$base/debs" && apt-get download -q "$srcpkg=$version" >&2) ||
		die "apt-get download $srcpkg=$version failed (stale index? run apt-get update)"
	[ -f "$deb" ] || die "apt-get download $srcpkg=$version left no $deb"
fi

# A source tree unpacked for this key before (a build that failed or was
# stopped) is reused, and its objects too: unpacking takes minutes, and
# make carries on where the stopped build was (the same key, so the same
# .config: objects of unchanged options stay valid).
dir=
resumed=no
for d in "$base"/*-debug-"$key"; do
	[ "$(cat "$d/src/.tlbb-unpacked" 2>/dev/null)" = "$srcpkg=$version" ] &&
		dir=$d
done
if [ -n "$dir" ]; then
	abi=$(basename "$dir")
	log "reusing the source unpacked in $dir/src"
	find "$dir" -mindepth 1 -maxdepth 1 ! -name src ! -name build \
		-exec rm -rf {} +
	mkdir -p "$dir/build"
	if [ -n "$(find "$dir/build" -name '*.o' -print -quit)" ]; then
		resumed=yes
		log "carrying on with the objects of an earlier, stopped build"
	fi
else
	work=$base/.debug-$key
	rm -rf "$work"
	mkdir -p "$work/src" "$work/build" "$work/deb"
	trap 'rm -rf "$work"' EXIT
	log "unpacking $deb"
	dpkg-deb -x "$deb" "$work/deb"
	tarball=$(ls "$work"/deb/usr/src/linux-source-*.tar.* 2>/dev/null |
		head -n 1)
	[ -n "$tarball" ] || die "no usr/src/linux-source-*.tar.* in $deb"
	tar -xf "$tarball" -C "$work/src" --strip-components=1
	rm -rf "$work/deb"
	[ -f "$work/src/Makefile" ] || die "no Makefile in $tarball"
	kver=$(make -s -C "$work/src" kernelversion 2>/dev/null) ||
		die "cannot read the kernel version of $tarball"
	echo "$srcpkg=$version" >"$work/src/.tlbb-unpacked"
	abi=$kver-debug-$key
	dir=$base/$abi
	# The build happens in its final place: an O= build tree records
	# absolute paths, so it cannot be moved afterwards.  .complete is
	# written last.
	rm -rf "$dir"
	mv "$work" "$dir"
fi
trap 'rm -f "$dir/.complete"; log "build failed: $dir left for a look (rerun rebuilds it)"' EXIT
mk() { make -C "$dir/src" O="$dir/build" "$@"; }

log "configuring $abi: tinyconfig + $fragment"
mk -s tinyconfig >&2
cat "$fragment" >>"$dir/build/.config"
echo "CONFIG_LOCALVERSION=\"-debug-$key\"" >>"$dir/build/.config"
echo "# CONFIG_LOCALVERSION_AUTO is not set" >>"$dir/build/.config"
# Kconfig warns about every option the fragment overrides: to a log.
mk -s olddefconfig >"$dir/config.log" 2>&1 || {
	cat "$dir/config.log" >&2
	die "make olddefconfig failed"
}
# Every option the fragment asks for must have survived Kconfig.
missing=
while IFS= read -r want; do
	grep -qxF "$want" "$dir/build/.config" || missing="$missing $want"
done < <(grep -E '^CONFIG_[A-Z0-9_]+=' "$fragment")
[ -z "$missing" ] ||
	die "Kconfig dropped from the debug config (a missing dependency?):$missing"
log "building $abi with nice -n 10 make -j$jobs (load $(cut -d' ' -f1-3 /proc/loadavg))"
load0=$(cut -d' ' -f1-3 /proc/loadavg)
TIMEFORMAT='%R %U %S'
{ time nice -n 10 make -C "$dir/src" O="$dir/build" -j"$jobs" -s \
	bzImage modules >"$dir/build.log" 2>&1; } 2>"$dir/.time" || {
	tail -n 40 "$dir/build.log" >&2
	die "kernel build failed ($dir/build.log)"
}
got=$(mk -s kernelrelease)
[ "$got" = "$abi" ] || die "kernel release is '$got', expected '$abi'"
read -r wall user sys <"$dir/.time"
load1=$(cut -d' ' -f1-3 /proc/loadavg)
rm -f "$dir/.time"
{
	echo "wall_s=${wall%.*}"
	echo "cpu_s=$(echo "$user + $sys" | bc | cut -d. -f1)"
	echo "jobs=$jobs"
	echo "resumed=$resumed    # yes: the times are those of the rest only"
	echo "load_before=$load0"
	echo "load_after=$load1"
} >"$dir/build-time.txt"
log "built in ${wall%.*} s wall, $(sed -n 's/^cpu_s=//p' "$dir/build-time.txt") s CPU (load $load0 -> $load1)"

mk -s INSTALL_MOD_PATH="$dir/root" modules_install >&2
[ -f "$dir/root/lib/modules/$abi/modules.dep" ] ||
	die "modules_install left no modules.dep (is depmod, package kmod, there?)"
# modules_install points build and source at the trees here already.
ln -sfn build "$dir/headers"
ln -sfn "root/lib/modules/$abi" "$dir/modules"
ln -sfn build/vmlinux "$dir/vmlinux"
cp "$dir/build/arch/x86/boot/bzImage" "$dir/vmlinuz"
cp "$dir/build/.config" "$dir/config"
echo amd64 >"$dir/arch"
echo "$abi" >"$dir/abi"
echo "$srcpkg=$version" >"$dir/packages.txt"
echo "key $key" >"$dir/.complete"
trap - EXIT
ln -sfn "$abi" "$base/$current"
# Older builds of this line (another key) are left to the user: each is
# about 3 GB; remove them with rm -r.
log "debug kernel $line cached in $dir"
echo "$dir"
