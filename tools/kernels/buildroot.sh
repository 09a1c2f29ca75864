#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# buildroot.sh <suite>: a minimal Debian root of <suite> (today: sid) that
# can build an out-of-tree module for that suite's kernels, made once with
# mmdebstrap and cached under ~/.cache/nova-tlbbalance/kernels/roots/<suite>/.
# Prints the root's directory (the only line on stdout).
#
# Why: sid's Linux 7.x kbuild tools (fixdep, modpost) need glibc >= 2.38 and
# its headers name gcc-16; neither runs on Debian 12. tools/kernels/boot/
# module.py builds tlbbalance.ko inside this root (chroot in a private mount
# namespace, the kernel's headers and the build directory bind-mounted at
# the same paths), for a kernel whose fetch.sh directory has a `buildroot`
# file naming it.
#
# The packages come from the mirror this machine's apt already uses (or
# TLBB_DEBIAN_MIRROR). sid's Release file may be past its Valid-Until date
# on a mirror: the check is off for this root. Minutes the first time
# (about 8 on 2 cores), instant when cached. TLBB_KERNEL_REFRESH=1 remakes.
set -euo pipefail

suite=${1:-}
cache=${TLBB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nova-tlbbalance}
base=$cache/kernels/roots
die() { echo "buildroot.sh: $*" >&2; exit 1; }
log() { echo "buildroot.sh: $*" >&2; }

case "$suite" in
# gcc-16-aarch64-linux-gnu: sid's arm64 kernels (7.2) are cross-built here
# too; their headers name aarch64-linux-gnu-gcc-16.
sid) pkgs=gcc-16,gcc-16-aarch64-linux-gnu,make,libelf-dev,pahole,kmod,bc,python3 ;;
*) die "usage: $0 sid (got '$suite')" ;;
esac
format=1
dir=$base/$suite
if [ -z "${TLBB_KERNEL_REFRESH:-}" ] &&
   [ "$(cat "$dir/.complete" 2>/dev/null)" = "format $format $pkgs" ]; then
	echo "$dir"
	exit 0
fi
command -v mmdebstrap >/dev/null ||
	die "mmdebstrap not found (tools/ci/install-system-deps.sh installs it)"
mkdir -p "$base"
exec 9>"$base/.lock"
flock 9 || die "cannot lock $base/.lock"
if [ "$(cat "$dir/.complete" 2>/dev/null)" = "format $format $pkgs" ] &&
   [ -z "${TLBB_KERNEL_REFRESH:-}" ]; then
	echo "$dir"
	exit 0
fi
. "$(dirname "$0")/mirror.sh"
mirror=${TLBB_DEBIAN_MIRROR:-$(host_mirror debian)}
[ -n "$mirror" ] || die "no debian source in /etc/apt (set TLBB_DEBIAN_MIRROR)"
tmp=$dir.tmp.$$
rm -rf "$tmp"
trap 'rm -rf "$tmp"' EXIT
log "making a $suite root with $pkgs in $dir (minutes)"
t0=$(date +%s)
mmdebstrap --quiet --variant=minbase --include="$pkgs" \
	--aptopt='Acquire::Check-Valid-Until "false"' \
	"$suite" "$tmp" "$mirror" >&2 || die "mmdebstrap $suite failed"
echo "format $format $pkgs" >"$tmp/.complete"
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
log "$suite root ready in $(( $(date +%s) - t0 )) s"
echo "$dir"
