#!/bin/sh
# tlbbalance.ko on a compute node, in one pass with no Python (run by the
# tlbbalance role through ansible.builtin.script: under an emulated CPU or
# on hundreds of nodes every module call counts).
#
#   tlbbalance-module.sh dkms     VERSION SRC.tar.gz LOAD PARAMS
#   tlbbalance-module.sh prebuilt VERSION MODULE.ko  LOAD PARAMS
#
# Prints "changed: <what>" for each thing it changed (the role's
# changed_when) and nothing else on stdout. On failure: exit 1 with
# "tlbbalance-module: <host>: <reason>" on stderr, having changed nothing
# that was working (a failed build leaves the loaded module loaded).
#
# dkms: unpacks SRC into /usr/src/tlbbalance-VERSION when its checksum
# differs from the one recorded there, removes other versions, builds and
# installs for the running kernel with DKMS (Debian's dkms package), writes
# /etc/modules-load.d/tlbbalance.conf. Both: writes
# /etc/modprobe.d/tlbbalance.conf with PARAMS, and with LOAD=1 loads the
# module, or reloads it when the loaded one is not the one installed now
# (recorded in /run/tlbbalance/loaded: /run is emptied at boot, as the
# kernel forgets its modules).
set -u
mode=$1 version=$2 src=$3 load=$4 params=$5
kver=$(uname -r)
host=$(hostname)
state=/run/tlbbalance

die() {
	echo "tlbbalance-module: $host: $*" >&2
	exit 1
}

changed() {
	echo "changed: $*"
}

# put FILE TEXT: write TEXT (plus a newline) unless FILE holds it
put() {
	if [ "$(cat "$1" 2>/dev/null)" != "$2" ]; then
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
put /etc/modprobe.d/tlbbalance.conf "$opts"

if [ "$mode" = dkms ]; then
	command -v dkms >/dev/null || die "dkms is not installed"
	[ -e "/lib/modules/$kver/build/Makefile" ] ||
		die "no headers for the running kernel $kver" \
		    "(/lib/modules/$kver/build): install linux-headers-$kver"
	put /etc/modules-load.d/tlbbalance.conf tlbbalance
	dir=/usr/src/tlbbalance-$version
	sum=$(sha256sum "$src" | cut -d' ' -f1) || die "cannot read $src"
	if [ "$(cat "$dir/.tlbbalance-src" 2>/dev/null)" != "$sum" ]; then
		# New source for this version: rebuild from scratch.
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
		if ! out=$(dkms install -m tlbbalance -v "$version" \
			-k "$kver" 2>&1); then
			log=/var/lib/dkms/tlbbalance/$version/build/make.log
			die "DKMS build of tlbbalance $version for $kver failed:" \
			    "$(tail -n 12 "$log" 2>/dev/null || echo "$out" |
			       tail -n 12)"
		fi
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
