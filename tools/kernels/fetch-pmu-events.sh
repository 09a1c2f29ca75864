#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# fetch-pmu-events.sh [6.1|6.12 ...]: the kernel's own perf event database
# (tools/perf/pmu-events/arch/{x86,arm64}) from Debian bookworm's
# linux-source-<line> package, fetched with `apt-get download` and unpacked
# (that directory only) under ~/.cache/nova-tlbbalance/pmu-events/<version>/
# without installing anything.  Prints one database directory per line (the
# one holding x86/ and arm64/), in the order asked.  Default: 6.1 6.12.
# Fast and offline when cached; the .deb files are kept in <base>/debs/.
#
# Environment: TLBB_CACHE (default ~/.cache/nova-tlbbalance).
set -euo pipefail

cache=${TLBB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nova-tlbbalance}
base=$cache/pmu-events
lines=${*:-6.1 6.12}

die() { echo "fetch-pmu-events.sh: $*" >&2; exit 1; }
log() { echo "fetch-pmu-events.sh: $*" >&2; }

mkdir -p "$base/debs"
exec 9>"$base/.lock"
flock 9 || die "cannot lock $base/.lock"
for line in $lines; do
	case "$line" in
	6.1|6.12) ;;
	*) die "usage: $0 [6.1|6.12 ...] (got '$line')" ;;
	esac
	pkg=linux-source-$line
	# Fast path: the newest version fetched before.
	if [ -f "$base/$line.current/.complete" ]; then
		echo "$base/$line.current/db"
		continue
	fi
	command -v apt-cache >/dev/null || die "apt-cache not found (Debian only)"
	v=$(apt-cache policy "$pkg" | sed -n 's/^ *Candidate: //p')
	[ -n "$v" ] && [ "$v" != "(none)" ] ||
		die "no candidate version of $pkg (run apt-get update?)"
	dir=$base/${v#*:}
	if [ ! -f "$dir/.complete" ]; then
		deb=$(ls "$base/debs/${pkg}_${v#*:}_"*.deb 2>/dev/null | head -n 1 || true)
		if [ -z "$deb" ]; then
			log "downloading $pkg=$v (about 150 MB)"
			(cd "$base/debs" && apt-get download -q "$pkg=$v" >&2) ||
				die "apt-get download $pkg=$v failed"
			deb=$(ls "$base/debs/${pkg}_${v#*:}_"*.deb | head -n 1)
		fi
		tmp=$dir.tmp.$$
		rm -rf "$tmp"
		mkdir -p "$tmp"
		# The package holds one tarball: /usr/src/linux-source-<line>.tar.xz
		dpkg-deb --fsys-tarfile "$deb" |
			tar -xO "./usr/src/linux-source-$line.tar.xz" |
			xz -dc | tar -x -C "$tmp" --strip-components=4 \
				--wildcards \
				"linux-source-$line/tools/perf/pmu-events/arch/x86/*" \
				"linux-source-$line/tools/perf/pmu-events/arch/arm64/*" ||
			{ rm -rf "$tmp"; die "cannot unpack the event database from $deb"; }
		[ -f "$tmp/arch/x86/mapfile.csv" ] && [ -f "$tmp/arch/arm64/mapfile.csv" ] ||
			{ rm -rf "$tmp"; die "no x86/arm64 mapfile.csv in $deb"; }
		mv "$tmp/arch" "$tmp/db"
		echo "$pkg=$v" >"$tmp/package.txt"
		touch "$tmp/.complete"
		rm -rf "$dir"
		mv "$tmp" "$dir"
		log "$pkg=$v: event database in $dir/db"
	fi
	ln -sfn "${v#*:}" "$base/$line.current"
	echo "$dir/db"
done
