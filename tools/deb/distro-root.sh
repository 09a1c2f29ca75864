#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A Debian root of another release with the given packages of its archive
# installed (mmdebstrap, --variant=apt), built once and kept in the cache:
#
#   tools/deb/distro-root.sh SUITE PACKAGE...     prints the root's path
#
# The root is $TLBB_CACHE/distro/SUITE-KEY (TLBB_CACHE: default
# ${XDG_CACHE_HOME:-~/.cache}/nova-tlbbalance, as for the kernels),
# KEY a hash of the suite, the mirror, the sorted package list and this
# recipe's revision: another list makes another root (the previous roots of
# the suite are removed, one root is ~1.1 GiB). It is never changed after
# it is made: tests mount it as the lower layer of an overlay of their own
# (tests/packaging/test_distro.py). The mirror is the one this machine's
# apt uses (tools/kernels/mirror.sh); TLBB_DEBIAN_MIRROR overrides it.
# A cold build of trixie with nova-compute took 108 s on a quiet machine,
# 1004 s at load average 15-19.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 SUITE PACKAGE..." >&2; exit 2; }
suite=$1
shift
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tools/kernels/mirror.sh"
mirror=${TLBB_DEBIAN_MIRROR:-$(host_mirror debian)}
[ -n "$mirror" ] || {
	echo "distro-root: no Debian mirror in this machine's apt sources" \
		"(set TLBB_DEBIAN_MIRROR)" >&2
	exit 1
}
command -v mmdebstrap >/dev/null || {
	echo "distro-root: mmdebstrap is missing (tools/ci/install-system-deps.sh)" >&2
	exit 1
}
revision=1	# bump when the recipe below changes
pkgs=$(printf '%s\n' "$@" | sort -u | tr '\n' ' ')
key=$(printf '%s\n' "$revision" "$suite" "$mirror" "$pkgs" |
	sha256sum | cut -c1-16)
cache=${TLBB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nova-tlbbalance}/distro
root=$cache/$suite-$key
mkdir -p "$cache"
exec 9>"$cache/$suite.lock"
flock 9
if [ -f "$root/.tlbb-complete" ]; then
	echo "$root"
	exit 0
fi
for old in "$cache/$suite"-*; do
	[ -d "$old" ] && [ "$old" != "$root" ] && rm -rf "$old"
done
tmp=$root.tmp
rm -rf "$tmp"
t0=$(date +%s)
echo "distro-root: building $suite ($pkgs) from $mirror" >&2
# apt's Valid-Until check is kept: a suite past it (sid on some mirrors)
# fails here, naming the suite, rather than being used stale.
if ! mmdebstrap --variant=apt --format=directory \
	--aptopt='Acquire::Retries "3"' \
	--include="$(echo $pkgs | tr ' ' ',')" \
	"$suite" "$tmp" "deb $mirror $suite main" >"$cache/$suite.log" 2>&1; then
	tail -n 30 "$cache/$suite.log" >&2
	echo "distro-root: mmdebstrap $suite failed (log: $cache/$suite.log)" >&2
	rm -rf "$tmp"
	exit 1
fi
printf '%s\n' "$suite" "$mirror" "$pkgs" >"$tmp/.tlbb-complete"
mv "$tmp" "$root"
echo "distro-root: $suite built in $(($(date +%s) - t0)) s" >&2
echo "$root"
