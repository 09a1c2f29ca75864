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
#   tlbbalance-deb.sh archive PACKAGE VERSION CHECK LIST
#       install VERSION of PACKAGE (- : the newest the archive has) from
#       the apt archive of the sources list LIST (the role's
#       tlbbalance_apt_repository): apt-get update of LIST alone (the
#       node's other lists are left as they are), then as install above:
#       nothing when that version is installed and configured, no
#       downgrades
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
op=${1:-} pkg=${2:-} deb=${3:--} check=${4:-0} list=${5:-}

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

[ -n "$pkg" ] || die "usage: tlbbalance-deb.sh install|archive|purge PACKAGE DEB|VERSION CHECK [LIST]"
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
archive)
	version=$deb
	[ -f "$list" ] || die "no apt source list at '$list'"
	# only this archive's list; the node's others stay as they are
	only="-o Dir::Etc::SourceList=$list -o Dir::Etc::SourceParts=-"
	only="$only -o APT::Get::List-Cleanup=0"
	if [ "$check" != 1 ]; then
		log=$(mktemp) || die "mktemp failed"
		# shellcheck disable=SC2086
		apt-get update -q $only >"$log" 2>&1 || {
			cat "$log"
			rm -f "$log"
			die "apt-get update of $list failed (its output is above)"
		}
		# apt-get update exits 0 on a source it could not fetch
		if grep -q '^\(W\|E\|Err\):' "$log"; then
			cat "$log"
			rm -f "$log"
			die "apt-get update of $list: the archive did not answer" \
				"cleanly (above)"
		fi
		rm -f "$log"
	fi
	if [ "$version" = - ]; then
		# shellcheck disable=SC2086
		want=$(apt-cache $only policy "$pkg" 2>/dev/null |
			sed -n 's/^ *Candidate: //p')
	else
		# shellcheck disable=SC2086
		want=$(apt-cache $only show "$pkg=$version" 2>/dev/null |
			sed -n '1,/^$/s/^Version: //p')
	fi
	if [ -z "$want" ] || [ "$want" = "(none)" ]; then
		if [ "$check" = 1 ]; then
			[ "$version" = - ] && version="(the newest)"
			changed "$pkg $version from the archive of $list would" \
				"be installed"
			exit 0
		fi
		[ "$version" = - ] && die "$pkg is not in the archive of $list"
		die "$pkg $version is not in the archive of $list" \
			"(apt-cache madison $pkg: what it has)"
	fi
	have=$(dpkg-query -W -f '${Version} ${db:Status-Abbrev}' "$pkg" \
		2>/dev/null)
	[ "$have" = "$want ii " ] && exit 0
	act "$pkg $want" installed install "$pkg=$want"
	;;
purge)
	case $(status) in
	?[iUFHtWc]*) ;;
	*) exit 0 ;;
	esac
	act "$pkg" purged purge "$pkg"
	;;
*)
	die "unknown operation '$op' (install, archive or purge)"
	;;
esac
