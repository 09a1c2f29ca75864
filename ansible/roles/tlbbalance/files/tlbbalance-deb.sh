#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A Debian package of this project on a compute node, with no Python (run
# by the tlbbalance role through ansible.builtin.script, as
# tlbbalance-module.sh: ansible.builtin.apt opens the whole package cache
# in Python at every run, 45-50 s per call on the test's emulated node).
#
#   tlbbalance-deb.sh install PACKAGE DEB CHECK
#       install DEB (a .deb of PACKAGE already copied to the node) with
#       apt-get, which brings its dependencies from the node's archive,
#       unless that version of PACKAGE is installed and configured (a
#       .deb older than the installed version is refused by apt-get: no
#       downgrades; remove the package first)
#   tlbbalance-deb.sh purge   PACKAGE -   CHECK
#       purge PACKAGE if anything of it is on the node (installed in any
#       state, or its configuration files left by a removal)
#
# CHECK=1 (Ansible's check mode): change nothing, print "changed: <what>
# (check mode)" for what a real run would do; DEB need not be there yet.
# Prints "changed: <what>" for what it did (the role's changed_when),
# after apt-get's and the maintainer scripts' own output. On failure:
# exit 1 with "tlbbalance-deb: <host>: <reason>" on stderr.
#
# "Installed" is dpkg's second status letter: i (installed), U
# (unpacked), F (half-configured), H (half-installed), t/W (triggers
# pending or awaited); n is not installed, c is configuration files only.
# tlbbalance-module.sh's refusal to manage the module beside
# tlbbalance-dkms tests the same letters.
set -u
op=${1:-} pkg=${2:-} deb=${3:--} check=${4:-0}

die() {
	echo "tlbbalance-deb: $(uname -n): $*" >&2
	exit 1
}

changed() {
	if [ "$check" = 1 ]; then
		echo "changed: $* (check mode)"
	else
		echo "changed: $*"
	fi
}

# apt-get VERB ARGS, said as "changed: WHAT DONE"; in check mode only
# said ("would be DONE")
act() {
	what=$1 done=$2 verb=$3
	shift 3
	if [ "$check" = 1 ]; then
		changed "$what would be $done"
		exit 0
	fi
	apt-get "$verb" -y -q "$@" 2>&1 ||
		die "apt-get $verb $* failed (its output is above)"
	changed "$what $done"
}

# dpkg's status of PACKAGE in three letters (desired, status, error),
# or nothing when dpkg has never heard of it
status() {
	dpkg-query -W -f '${db:Status-Abbrev}' "$pkg" 2>/dev/null
}

[ -n "$pkg" ] || die "usage: tlbbalance-deb.sh install|purge PACKAGE DEB CHECK"
export DEBIAN_FRONTEND=noninteractive

case $op in
install)
	if [ "$check" = 1 ] && [ ! -f "$deb" ]; then
		changed "$pkg from $deb would be installed"
		exit 0
	fi
	[ -f "$deb" ] || die "no package at $deb"
	got=$(dpkg-deb -f "$deb" Package) || die "$deb is not a Debian package"
	[ "$got" = "$pkg" ] || die "$deb holds $got, not $pkg"
	want=$(dpkg-deb -f "$deb" Version) || die "$deb has no version"
	have=$(dpkg-query -W -f '${Version} ${db:Status-Abbrev}' "$pkg" \
		2>/dev/null)
	[ "$have" = "$want ii " ] && exit 0
	act "$pkg $want" installed install "$deb"
	;;
purge)
	case $(status) in
	?[iUFHtWc]*) ;;
	*) exit 0 ;;
	esac
	act "$pkg" purged purge "$pkg"
	;;
*)
	die "unknown operation '$op' (install or purge)"
	;;
esac
