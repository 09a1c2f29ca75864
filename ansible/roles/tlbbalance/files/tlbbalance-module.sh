#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tlbbalance.ko on a compute node, in one pass with no Python (run by the
# tlbbalance role through ansible.builtin.script: under an emulated CPU or
# on hundreds of nodes every module call counts).
#
#   tlbbalance-module.sh dkms     VERSION SRC.tar.gz LOAD PARAMS SUM CHECK PY
#   tlbbalance-module.sh prebuilt VERSION MODULE.ko  LOAD PARAMS -   CHECK PY
#   tlbbalance-module.sh absent   -       -          -    -      -   CHECK PY
#   tlbbalance-module.sh handover VERSION -          -    -      -   CHECK PY
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
#
# A reload under running VMs (PY: the Python that has nova_tlbbalance):
# every registration is released first (`tlbbalance release`: mode off
# clears the VM_NOHUGEPAGE the module set; the VMs keep running), the old
# build unloaded, the new one loaded, and `tlbbalance reconcile
# --released` registers every VM again, printing and recording
# (/var/lib/tlbbalance/last-upgrade.json) each VM's unmanaged window.
# The build loaded last is kept (/var/lib/tlbbalance/loaded.ko, with the
# parameters file it was loaded with) and the previous DKMS version stays
# until the new one has reconciled: if the new build does not load, or
# its VMs are not all registered again, the node goes back to the
# previous build by itself (loaded, reconciled, installed again) and the
# script fails naming the node and the reason.
#
# absent: every registration released (VMs left running), the module
# unloaded, every DKMS version and source, the parameters and the
# load-at-boot entry and this script's records removed.
#
# handover (deb mode, once tlbbalance-dkms VERSION is installed and its
# build loaded): what this script's dkms or prebuilt mode left beside the
# package is removed, so that the package alone owns the module: the DKMS
# versions whose source this script unpacked (/usr/src/tlbbalance-V with
# its .tlbbalance-src; never the package's), their tarballs, the
# load-at-boot entry in /etc/modules-load.d (the package ships its own in
# /usr/lib/modules-load.d), the roll-back copy of the last build loaded
# and /run/tlbbalance (the script's record of what it loaded).
# The parameters file stays (deb mode writes the same one), and so does
# /var/lib/tlbbalance/last-upgrade.json (the package's scripts write it).
#
# dkms and prebuilt refuse to run while tlbbalance-dkms is installed: its
# maintainer scripts manage the module then (tlbbalance_module_install:
# deb), and two owners of one DKMS module would undo each other.
set -u
mode=$1 version=$2 src=$3 load=$4 params=$5 want_sum=${6:--} check=${7:-0}
py=${8:-/usr/bin/python3}
kver=$(uname -r)
host=$(hostname)
state=/run/tlbbalance
lib=/var/lib/tlbbalance
record=$lib/last-upgrade.json

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

# tlbbalance CLI from nova's Python
tlbb() {
	"$py" -m nova_tlbbalance "$@"
}

# release FILE: every registration released, the document kept in FILE;
# fails (naming the VMs) when one could not be released, having
# registered the others again
release() {
	if ! tlbb release --json >"$1" 2>"$1.err"; then
		err=$(cat "$1.err")
		tlbb reconcile >/dev/null 2>&1
		die "cannot release the VMs before unloading tlbbalance" \
		    "(nothing unloaded; registered again): $err"
	fi
}

# remove_module_files: every DKMS version and source, parameters,
# load-at-boot entry and records (absent)
remove_module_files() {
	for d in /var/lib/dkms/tlbbalance/*; do
		v=$(basename "$d")
		[ -e "$d/source" ] || continue
		if [ "$check" = 1 ]; then
			changed "DKMS tlbbalance/$v would be removed"
			continue
		fi
		dkms remove -m tlbbalance -v "$v" --all >/dev/null 2>&1 ||
			die "dkms remove tlbbalance/$v failed"
		changed "DKMS tlbbalance/$v removed"
	done
	for f in /usr/src/tlbbalance-* /etc/modprobe.d/tlbbalance.conf \
		/etc/modules-load.d/tlbbalance.conf $lib $state; do
		[ -e "$f" ] || continue
		if [ "$check" = 1 ]; then
			changed "$f would be removed"
		else
			rm -rf "$f" || die "cannot remove $f"
			changed "$f removed"
		fi
	done
}

case $mode in
dkms | prebuilt)
	# installed in any state (dpkg's second status letter), as
	# tlbbalance-deb.sh counts it
	if dpkg-query -W -f '${db:Status-Abbrev}' tlbbalance-dkms 2>/dev/null |
		grep -q '^.[iUFHtW]'; then
		# the source tarball this run copied for the dkms mode is of
		# no use on this node: not left in /usr/src
		case $mode:$check:$src in
		dkms:0:/usr/src/tlbbalance-*.tar.gz)
			rm -f "$src" || die "cannot remove $src" ;;
		esac
		die "tlbbalance-dkms (the Debian package) is installed, and its" \
		    "maintainer scripts manage tlbbalance.ko: set" \
		    "tlbbalance_module_install: deb, or remove the package first" \
		    "(docs/upgrade.md, \"Switching to the Debian package\")"
	fi
	;;
handover)
	for d in /var/lib/dkms/tlbbalance/*; do
		v=$(basename "$d")
		[ -e "$d/source" ] && [ "$v" != "$version" ] &&
			[ -f "/usr/src/tlbbalance-$v/.tlbbalance-src" ] || continue
		if [ "$check" = 1 ]; then
			changed "DKMS tlbbalance/$v (the role's dkms mode) would" \
				"be removed"
			continue
		fi
		dkms remove -m tlbbalance -v "$v" --all >/dev/null 2>&1 ||
			die "dkms remove tlbbalance/$v (the role's dkms mode) failed"
		rm -rf "/usr/src/tlbbalance-$v" ||
			die "cannot remove /usr/src/tlbbalance-$v"
		changed "DKMS tlbbalance/$v (the role's dkms mode) removed"
	done
	for f in /usr/src/tlbbalance-*.tar.gz \
		/etc/modules-load.d/tlbbalance.conf $lib/loaded.ko \
		$lib/loaded.name $lib/loaded.version $lib/loaded.conf \
		$state; do
		[ -e "$f" ] || continue
		if [ "$check" = 1 ]; then
			changed "$f (the role's dkms or prebuilt mode) would be" \
				"removed"
		else
			rm -rf "$f" || die "cannot remove $f"
			changed "$f (the role's dkms or prebuilt mode) removed"
		fi
	done
	exit 0
	;;
absent)
	if [ -d /sys/module/tlbbalance ]; then
		if [ "$check" = 1 ]; then
			n=$(ls /sys/kernel/config/tlbbalance/vms 2>/dev/null |
				wc -l)
			changed "$n VM(s) would be released, tlbbalance unloaded"
		else
			mkdir -p $state
			release $state/released.json
			n=$(grep -c '"vm":' $state/released.json)
			err=$(rmmod tlbbalance 2>&1) || {
				tlbb reconcile >/dev/null 2>&1
				die "cannot unload tlbbalance ($n VM(s)" \
				    "released, registered again): $err"
			}
			changed "released $n VM(s) (left running);" \
				"tlbbalance unloaded"
		fi
	fi
	remove_module_files
	exit 0
	;;
*) die "unknown mode '$mode' (dkms, prebuilt, absent or handover)" ;;
esac

opts="# Managed by the tlbbalance Ansible role (docs/ansible.md)"
[ -n "$params" ] && opts="$opts
options tlbbalance $params"

# A build loaded by an earlier release of this role has no copy kept for
# a roll back: keep the installed file when it is the loaded build (same
# sha256 as recorded at its load), before anything new is installed.
if [ "$check" != 1 ] && [ -d /sys/module/tlbbalance ] &&
	[ -f $state/loaded ] && [ ! -f $lib/loaded.ko ]; then
	cur=$src
	[ "$mode" = dkms ] && cur=$(modinfo -k "$kver" -n tlbbalance 2>/dev/null)
	if [ -f "$cur" ] &&
		[ "$(sha256sum "$cur" | cut -d' ' -f1)" = "$(cat $state/loaded)" ]
	then
		mkdir -p $lib && cp "$cur" $lib/loaded.ko &&
			basename "$cur" >$lib/loaded.name &&
			cat /sys/module/tlbbalance/version >$lib/loaded.version
		[ -f /etc/modprobe.d/tlbbalance.conf ] &&
			cp /etc/modprobe.d/tlbbalance.conf $lib/loaded.conf
	fi
fi

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

# The module is in place: its parameters, and (dkms) loading it at boot
# (the parameters file the loaded build was loaded with is kept in $lib
# for a roll back).
put /etc/modprobe.d/tlbbalance.conf "$opts"
[ "$mode" = dkms ] && put /etc/modules-load.d/tlbbalance.conf tlbbalance

# remove_others: one DKMS version per node, the others removed once this
# one is installed and (when loaded) has reconciled. (A version's tree has
# its source link; kernel-* are dkms's links.)
remove_others() {
	[ "$mode" = dkms ] || return 0
	for d in /var/lib/dkms/tlbbalance/*; do
		v=$(basename "$d")
		[ -e "$d/source" ] && [ "$v" != "$version" ] || continue
		dkms remove -m tlbbalance -v "$v" --all >/dev/null 2>&1 ||
			die "dkms remove tlbbalance/$v failed"
		rm -rf "/usr/src/tlbbalance-$v"
		changed "DKMS tlbbalance/$v removed"
	done
}

# keep_loaded: the build just loaded, kept for a later roll back
keep_loaded() {
	mkdir -p $state $lib &&
		cp "$ko" $lib/loaded.ko.tmp && mv $lib/loaded.ko.tmp $lib/loaded.ko &&
		basename "$ko" >$lib/loaded.name &&
		cp /etc/modprobe.d/tlbbalance.conf $lib/loaded.conf &&
		echo "$1" >$lib/loaded.version && echo "$want" >$state/loaded ||
		die "cannot record the loaded build in $lib"
}

# load_new: the installed build loaded; its error on stdout when it fails
load_new() {
	if [ "$mode" = dkms ]; then
		modprobe tlbbalance 2>&1
	else
		modprobe configfs 2>/dev/null
		# shellcheck disable=SC2086
		insmod "$ko" $params 2>&1
	fi
}

# rollback REASON: the previous build back in place of the new one, its
# VMs registered again, then fail naming the node and REASON
rollback() {
	why=$1
	prev=$(cat $lib/loaded.version 2>/dev/null || echo previous)
	if [ -d /sys/module/tlbbalance ]; then
		tlbb release --json >$state/released-new.json 2>&1
		rmmod tlbbalance 2>/dev/null
	fi
	cp $lib/loaded.conf /etc/modprobe.d/tlbbalance.conf 2>/dev/null
	old_params=$(sed -n 's/^options tlbbalance //p' $lib/loaded.conf \
		2>/dev/null)
	modprobe configfs 2>/dev/null
	# shellcheck disable=SC2086
	err=$(insmod $lib/loaded.ko $old_params 2>&1) ||
		die "$why; roll back failed too: insmod $lib/loaded.ko: $err" \
		    "(VMs running unmanaged)"
	echo "$(cat $state/loaded.prev 2>/dev/null)" >$state/loaded
	out=$(tlbb reconcile --released $state/released.json \
		--record $record --note result=rolled-back \
		--note "reason=$why" --note "from=$prev" \
		--note "to=$version" 2>&1)
	rc=$?
	echo "$out" | grep '^window '
	# installed again: the next boot loads the previous build, and the
	# next run tries the new one again
	if [ "$mode" = dkms ]; then
		if [ "$prev" != "$version" ] &&
			[ -e "/var/lib/dkms/tlbbalance/$prev/source" ]; then
			dkms remove -m tlbbalance -v "$version" --all \
				>/dev/null 2>&1
			rm -rf "/usr/src/tlbbalance-$version"
			dkms install -m tlbbalance -v "$prev" -k "$kver" \
				>/dev/null 2>&1
			# (dkms may take $prev for installed still and skip
			# it: then the kept file goes where dkms puts it)
			# (the kept copy keeps its installed name: Debian's
			# 6.12 installs tlbbalance.ko.xz, 6.1 tlbbalance.ko)
			inst=$(modinfo -k "$kver" -n tlbbalance 2>/dev/null)
			if [ ! -f "$inst" ] || [ "$(sha256sum <"$inst")" != \
				"$(sha256sum <$lib/loaded.ko)" ]; then
				dir=/lib/modules/$kver/updates/dkms
				inst=$dir/$(cat $lib/loaded.name 2>/dev/null ||
					echo tlbbalance.ko)
				mkdir -p $dir && rm -f $dir/tlbbalance.ko* &&
					cp $lib/loaded.ko "$inst" &&
					depmod -a "$kver" ||
					why="$why; cannot install $prev again"
			fi
		else
			cp $lib/loaded.ko "$ko" && depmod -a "$kver" &&
				rm -f "/usr/src/tlbbalance-$version/.tlbbalance-src" ||
				why="$why; cannot put $lib/loaded.ko back at $ko"
		fi
	fi
	[ "$rc" = 0 ] || why="$why; reconcile after the roll back: $out"
	die "$why; rolled back to the previous build ($prev):" \
	    "$(echo "$out" | grep -c '^window .*unmanaged') VM(s)" \
	    "registered again"
}

[ "$load" = 1 ] || { remove_others; exit 0; }
want=$(sha256sum "$ko" | cut -d' ' -f1) || die "cannot read $ko"
to=$version
[ "$mode" = prebuilt ] && to="prebuilt $want"
if [ -d /sys/module/tlbbalance ] && [ -f $state/loaded ] &&
	[ "$(cat $state/loaded)" != "$want" ]; then
	# Another build is loaded: release its VMs, unload it, load this one
	# and register them again (reconcile), or roll back.
	[ -f $lib/loaded.ko ] ||
		die "the loaded tlbbalance is not $ko and there is no copy of" \
		    "it to roll back to ($lib/loaded.ko): unload it by hand"
	cp $state/loaded $state/loaded.prev
	from=$(cat $lib/loaded.version 2>/dev/null)
	if [ "$mode" = dkms ]; then
		loadcmd="modprobe tlbbalance"
	else
		loadcmd="modprobe configfs 2>/dev/null; insmod '$ko' $params"
	fi
	# one warm process: release, unload, load, reconcile (the windows)
	out=$(tlbb reload --released $state/released.json --record $record \
		--note result=upgraded --note "from=$from" --note "to=$to" \
		--unload "rmmod tlbbalance" --load "$loadcmd" 2>&1)
	rc=$?
	msg=$(echo "$out" | sed -n 's/^tlbbalance reload: //p')
	case $rc in
	0) ;;
	2 | 3 | 4) die "reloading tlbbalance ($from -> $to): ${msg:-$out}" ;;
	5) rollback "loading tlbbalance $to failed: ${msg:-$out}" ;;
	*) rollback "after loading tlbbalance $to: ${msg:-$out}" ;;
	esac
	n=$(grep -c '"vm":' $state/released.json)
	keep_loaded "$version"
	changed "reloaded tlbbalance ($from -> $to, $n VM(s) released" \
		"and registered again)"
	echo "$out" | grep '^window '
	rm -f $state/loaded.prev
elif [ ! -d /sys/module/tlbbalance ]; then
	err=$(load_new) || die "loading $ko failed: $err"
	keep_loaded "$version"
	changed "loaded $ko"
elif [ ! -f $state/loaded ]; then
	# Loaded before the role managed it (by hand, at boot): left alone,
	# taken as this build; a later change of the build reloads it.
	keep_loaded "$version"
fi
remove_others
exit 0
