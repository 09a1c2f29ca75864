#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tlbbalance.ko on a compute node, in one pass with no Python (run by the
# tlbbalance role through ansible.builtin.script: under an emulated CPU or
# on hundreds of nodes every module call counts).
#
#   tlbbalance-module.sh dkms     VERSION SRC.tar.gz LOAD PARAMS SUM CHECK
#   tlbbalance-module.sh prebuilt VERSION MODULE.ko  LOAD PARAMS -   CHECK
#
# SUM: the sha256 of SRC as packed on the controller (the copy must match
# it). CHECK=1 (Ansible's check mode): change nothing, print "changed:
# <what> (check mode)" for each thing a real run would change; SRC need not
# be there yet.
#
# Prints "changed: <what>" for each thing it changed (the role's
# changed_when) and nothing else on stdout. On failure: exit 1 with
# "tlbbalance-module: <host>: <reason>" on stderr, having changed nothing
# that was working: a build that fails leaves the installed and the loaded
# module, their source, parameters and load-at-boot entry as they were.
#
# dkms: when SRC's checksum differs from the one recorded in
# /usr/src/tlbbalance-VERSION, and VERSION is already there (new source,
# same version), SRC is first built in a scratch DKMS tree (dkms
# --sourcetree/--dkmstree): only when that build succeeds is the old
# VERSION removed, SRC unpacked in its place and built and installed for
# the running kernel; a new VERSION is built beside the old one, which is
# removed once the new one is installed. Then, both modes, once the module
# is in place: /etc/modprobe.d/tlbbalance.conf with PARAMS,
# /etc/modules-load.d/tlbbalance.conf (dkms), and with LOAD=1 the module
# loaded, or reloaded when the loaded one is not the one installed now
# (recorded in /run/tlbbalance/loaded: /run is emptied at boot, as the
# kernel forgets its modules).
set -u
mode=$1 version=$2 src=$3 load=$4 params=$5 want_sum=${6:--} check=${7:-0}
kver=$(uname -r)
host=$(hostname)
state=/run/tlbbalance

die() {
	echo "tlbbalance-module: $host: $*" >&2
	exit 1
}

changed() {
	if [ "$check" = 1 ]; then
		echo "changed: $* (check mode)"
	else
		echo "changed: $*"
	fi
}

# put FILE TEXT: write TEXT (plus a newline) unless FILE holds it
put() {
	if [ "$(cat "$1" 2>/dev/null)" != "$2" ]; then
		[ "$check" = 1 ] && { changed "$1 would be written"; return; }
		mkdir -p "$(dirname "$1")" || die "cannot create $(dirname "$1")"
		printf '%s\n' "$2" >"$1.tmp" && mv "$1.tmp" "$1" ||
			die "cannot write $1"
		changed "$1"
	fi
}

case $mode in
dkms | prebuilt) ;;
*) die "unknown mode '$mode' (dkms or prebuilt)" ;;
esac

opts="# Managed by the tlbbalance Ansible role (docs/ansible.md)"
[ -n "$params" ] && opts="$opts
options tlbbalance $params"

# build_failed LOG OUT: the end of the build's log (or of dkms's output)
build_failed() {
	die "DKMS build of tlbbalance $version for $kver failed:" \
	    "$(tail -n 12 "$1" 2>/dev/null || echo "$2" | tail -n 12)"
}

if [ "$mode" = dkms ]; then
	command -v dkms >/dev/null || die "dkms is not installed"
	[ -e "/lib/modules/$kver/build/Makefile" ] ||
		die "no headers for the running kernel $kver" \
		    "(/lib/modules/$kver/build): install linux-headers-$kver"
	dir=/usr/src/tlbbalance-$version
	if [ "$check" = 1 ]; then
		# The source is not copied in check mode: judge by its sum.
		if [ "$(cat "$dir/.tlbbalance-src" 2>/dev/null)" != "$want_sum" ] ||
			! dkms status -m tlbbalance -v "$version" -k "$kver" |
			grep -q ': installed'; then
			changed "DKMS tlbbalance/$version would be built and" \
				"installed for $kver"
			rebuild=1
		fi
		for d in /var/lib/dkms/tlbbalance/*; do
			v=$(basename "$d")
			[ -e "$d/source" ] && [ "$v" != "$version" ] || continue
			changed "DKMS tlbbalance/$v would be removed"
		done
		put /etc/modprobe.d/tlbbalance.conf "$opts"
		put /etc/modules-load.d/tlbbalance.conf tlbbalance
		if [ "$load" = 1 ]; then
			if [ ! -d /sys/module/tlbbalance ]; then
				changed "tlbbalance would be loaded"
			elif [ -n "${rebuild:-}" ]; then
				changed "tlbbalance would be reloaded"
			fi
		fi
		exit 0
	fi
	sum=$(sha256sum "$src" | cut -d' ' -f1) || die "cannot read $src"
	[ "$want_sum" = - ] || [ "$sum" = "$want_sum" ] ||
		die "$src is not the source the controller packed" \
		    "(sha256 $sum, expected $want_sum)"
	if [ "$(cat "$dir/.tlbbalance-src" 2>/dev/null)" != "$sum" ] &&
		{ [ -d "$dir" ] || [ -d "/var/lib/dkms/tlbbalance/$version" ]; }
	then
		# New source, same version: the old build must stay until this
		# one is known to build. Try it in a scratch tree first.
		stage=$(mktemp -d /var/tmp/tlbbalance-dkms.XXXXXX) ||
			die "cannot create a scratch directory in /var/tmp"
		trap 'rm -rf "$stage"' EXIT
		mkdir -p "$stage/src/tlbbalance-$version" "$stage/dkms" &&
			tar -xzf "$src" -C "$stage/src/tlbbalance-$version" &&
			sed -i "s/^PACKAGE_VERSION=.*/PACKAGE_VERSION=\"$version\"/" \
				"$stage/src/tlbbalance-$version/dkms.conf" ||
			die "cannot unpack $src (with its dkms.conf) into $stage"
		tree="--sourcetree $stage/src --dkmstree $stage/dkms"
		# shellcheck disable=SC2086
		dkms add -m tlbbalance -v "$version" $tree >/dev/null ||
			die "dkms add tlbbalance/$version (scratch tree) failed"
		# shellcheck disable=SC2086
		out=$(dkms build -m tlbbalance -v "$version" -k "$kver" \
			$tree 2>&1) ||
			build_failed "$stage/dkms/tlbbalance/$version/build/make.log" \
				"$out"
		rm -rf "$stage"
		trap - EXIT
	fi
	if [ "$(cat "$dir/.tlbbalance-src" 2>/dev/null)" != "$sum" ]; then
		# New source for this version (it builds): rebuild from scratch.
		dkms remove -m tlbbalance -v "$version" --all >/dev/null 2>&1
		rm -rf "$dir" && mkdir -p "$dir" && tar -xzf "$src" -C "$dir" ||
			die "cannot unpack $src into $dir"
		sed -i "s/^PACKAGE_VERSION=.*/PACKAGE_VERSION=\"$version\"/" \
			"$dir/dkms.conf" || die "no dkms.conf in $src"
		echo "$sum" >"$dir/.tlbbalance-src"
		changed "$dir"
	fi
	# One version per node: the others are removed once this one built.
	if ! dkms status -m tlbbalance -v "$version" -k "$kver" |
		grep -q ': installed'; then
		[ -d "/var/lib/dkms/tlbbalance/$version/source" ] ||
			dkms add -m tlbbalance -v "$version" >/dev/null ||
			die "dkms add tlbbalance/$version failed"
		out=$(dkms install -m tlbbalance -v "$version" -k "$kver" 2>&1) ||
			build_failed \
				"/var/lib/dkms/tlbbalance/$version/build/make.log" \
				"$out"
		changed "DKMS tlbbalance/$version built and installed for $kver"
	fi
	# (a version's tree has its source link; kernel-* are dkms's links)
	for d in /var/lib/dkms/tlbbalance/*; do
		v=$(basename "$d")
		[ -e "$d/source" ] && [ "$v" != "$version" ] || continue
		dkms remove -m tlbbalance -v "$v" --all >/dev/null 2>&1 ||
			die "dkms remove tlbbalance/$v failed"
		rm -rf "/usr/src/tlbbalance-$v"
		changed "DKMS tlbbalance/$v removed"
	done
	ko=$(modinfo -k "$kver" -n tlbbalance 2>/dev/null) ||
		die "DKMS installed tlbbalance/$version but modinfo cannot find it"
else
	ko=$src
	[ -f "$ko" ] || die "no module at $ko"
fi
if [ "$check" = 1 ]; then
	put /etc/modprobe.d/tlbbalance.conf "$opts"
	if [ "$load" = 1 ] && { [ ! -d /sys/module/tlbbalance ] ||
		[ "$(cat $state/loaded 2>/dev/null)" != \
		  "$(sha256sum "$ko" | cut -d' ' -f1)" ]; }; then
		changed "$ko would be loaded"
	fi
	exit 0
fi

# The module is in place: its parameters, and (dkms) loading it at boot.
put /etc/modprobe.d/tlbbalance.conf "$opts"
[ "$mode" = dkms ] && put /etc/modules-load.d/tlbbalance.conf tlbbalance

[ "$load" = 1 ] || exit 0
want=$(sha256sum "$ko" | cut -d' ' -f1) || die "cannot read $ko"
if [ -d /sys/module/tlbbalance ] && [ -f $state/loaded ] &&
	[ "$(cat $state/loaded)" != "$want" ]; then
	# Another build is loaded: the VMs' registrations go with it (the hook
	# registers them again at their next start).
	rmmod tlbbalance 2>/dev/null ||
		die "the loaded tlbbalance is not $ko and cannot be unloaded" \
		    "($(cat /sys/module/tlbbalance/refcnt 2>/dev/null) users)"
	changed "unloaded the previous tlbbalance"
fi
if [ ! -d /sys/module/tlbbalance ]; then
	if [ "$mode" = dkms ]; then
		err=$(modprobe tlbbalance 2>&1) || die "modprobe tlbbalance: $err"
	else
		modprobe configfs 2>/dev/null
		# shellcheck disable=SC2086
		err=$(insmod "$ko" $params 2>&1) || die "insmod $ko: $err"
	fi
	mkdir -p $state && echo "$want" >$state/loaded
	changed "loaded $ko"
elif [ ! -f $state/loaded ]; then
	# Loaded before the role managed it (by hand, at boot): left alone,
	# taken as this build; a later change of the build reloads it.
	mkdir -p $state && echo "$want" >$state/loaded
fi
exit 0
