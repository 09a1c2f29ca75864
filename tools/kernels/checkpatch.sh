#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
#
# Run the kernel's checkpatch.pl over tlbbalance.ko's sources.
#
#   tools/kernels/checkpatch.sh [FILE...]     (default: kernel-module/*.[ch]
#                                              and kernel-module/core/*.[ch])
#
# checkpatch.pl comes from Debian's linux-source-6.1 package (about 140 MB,
# downloaded once with apt-get download, never installed) and is cached in
# ~/.cache/nova-tlbbalance/checkpatch/. Exit status: checkpatch's (non-zero
# when it reports an error). The findings that remain are explained in
# docs/kernel-module.md ("Coding style").
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
cache=${TLBB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nova-tlbbalance}/checkpatch
cp=$cache/scripts/checkpatch.pl

if [ ! -f "$cp" ]; then
	mkdir -p "$cache"
	tmp=$(mktemp -d "$cache/fetch.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	# The package fetch-pmu-events.sh keeps, if it is there.
	deb=$(ls "${cache%/checkpatch}"/pmu-events/debs/linux-source-6.1_*.deb \
		2>/dev/null | tail -n 1 || true)
	if [ -z "$deb" ]; then
		echo "checkpatch: fetching linux-source-6.1 (once)" >&2
		(cd "$tmp" && apt-get download linux-source-6.1 >/dev/null)
		deb=$(ls "$tmp"/linux-source-6.1_*.deb)
	fi
	dpkg-deb --fsys-tarfile "$deb" |
		tar -x -C "$tmp" --wildcards '*/linux-source-6.1.tar.xz'
	tar -xJf "$(find "$tmp" -name linux-source-6.1.tar.xz)" -C "$tmp" \
		linux-source-6.1/scripts/checkpatch.pl \
		linux-source-6.1/scripts/spelling.txt \
		linux-source-6.1/scripts/const_structs.checkpatch
	mkdir -p "$cache/scripts"
	mv "$tmp"/linux-source-6.1/scripts/* "$cache/scripts/"
fi

cd "$repo/kernel-module"
if [ $# -eq 0 ]; then
	set -- *.c *.h core/*.c core/*.h
fi
exec perl "$cp" --no-tree --terse --show-types --file "$@"
