#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# fetch.sh <5.10|6.1|6.12|7.2> [amd64|arm64]: download one of Debian's kernel
# lines (image with modules, headers, kbuild) for x86_64 (default) or arm64
# with `apt-get download`, unpack it under
# ~/.cache/nova-tlbbalance/kernels/<abi>/ without installing anything,
# make its headers usable from there and extract the ELF vmlinux for PVH
# boot (x86_64).  Prints the cache directory (the only line on stdout).
#
# The newest package of the line is resolved through apt's meta packages
# (linux-image-<arch> for 6.1, linux-image-6.12-<arch> for 6.12); what was
# used is recorded in <dir>/packages.txt.  Fast and offline when cached.
# A mirror may list packages it does not serve (this machine's lists
# bullseye-security's arm64 kernels and answers 404 for their files): then
# the line's next older kernel of the same flavour whose packages all
# download is used, with a WARNING line, and any other package (busybox,
# linux-kbuild) falls back to its next older listed version the same way.
#
# Every architecture of every suite other than the host's own (bookworm,
# amd64) is read from a private apt state (<base>/apt-<suite>-<arch>/;
# bookworm's arm64: <base>/apt-arm64/), filled by `apt-get update` with -o
# options: the host's dpkg architectures and lists are never changed.
# bullseye's and sid's lists are made from the mirrors this machine's apt
# already uses (the URIs of its debian and debian-security sources;
# TLBB_DEBIAN_MIRROR and TLBB_DEBIAN_SECURITY_MIRROR override them).
#
# 5.10 is bullseye's (Debian 11) kernel, from bullseye and bullseye-security
# lists.  Its linux-kbuild-5.10 runs on bookworm, and the module builds
# with bookworm's gcc-12 (its headers name gcc-10, which bookworm does not
# have: kbuild only records the name).
#
# 7.2 is sid's newest kernel (linux-image-<arch> in sid), from sid's lists
# (Valid-Until not checked: sid's Release file on a mirror may be past it).
# sid splits the image into linux-base-<abi> (config), linux-binary-<abi>
# (vmlinuz) and linux-modules-<abi>, all under /usr/lib/modules/<abi>/;
# they are fetched too. Its kbuild tools need glibc >= 2.38 and gcc-16: the
# module is built inside a sid root made by tools/kernels/buildroot.sh
# (which holds sid's aarch64 cross compiler too), named by <dir>/buildroot.
#
# arm64: the kernel's packages are arm64 ones; linux-kbuild is the build
# machine's (amd64, of the same suite), whose fixdep and modpost run here
# (or in the sid root).  The headers are cross-built with: make ARCH=arm64
# CROSS_COMPILE=aarch64-linux-gnu- (Debian's gcc-aarch64-linux-gnu; sid's
# gcc-16-aarch64-linux-gnu in the sid root).  A static arm64 busybox
# (busybox-static of the same suite) is unpacked beside the kernel for the
# test initramfs.
#
# Cache layout (stable, other scripts rely on it):
#   <dir>/abi            the kernel ABI name, e.g. 6.1.0-56-amd64
#   <dir>/headers        -> headers dir: make -C <dir>/headers M=... modules
#   <dir>/modules        -> lib/modules/<abi> of the image
#   <dir>/arch           amd64 or arm64
#   <dir>/vmlinux        ELF kernel for QEMU PVH boot (qemu -kernel vmlinux),
#                        amd64 only
#   <dir>/vmlinuz        the kernel as shipped (bzImage; arm64: an Image
#                        qemu-system-aarch64 -kernel boots)
#   <dir>/busybox        arm64 only: busybox-static for the initramfs
#   <dir>/config         the kernel's .config
#   <dir>/packages.txt   package=version lines of what was downloaded
#   <dir>/buildroot      only where the host cannot run the kernel's
#                        kbuild (7.2): the root to build modules in
#   <dir>/root/          everything unpacked (modules.dep generated)
#   <base>/debs/         the .deb files (kept to skip re-downloads)
#
# Environment: TLBB_CACHE (default ~/.cache/nova-tlbbalance),
#              TLBB_KERNEL_REFRESH=1 to re-resolve even when a line is cached.
set -euo pipefail

# Bump when the cache layout changes: older caches are rebuilt.
format=2

here=$(cd "$(dirname "$0")" && pwd)
line=${1:-}
arch=${2:-amd64}
cache=${TLBB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nova-tlbbalance}
base=$cache/kernels

die() { echo "fetch.sh: $*" >&2; exit 1; }
log() { echo "fetch.sh: $*" >&2; }

suite=bookworm
case "$line" in
5.10) meta=linux-image-$arch; suite=bullseye ;;
7.2) meta=linux-image-$arch; suite=sid ;;
6.1) meta=linux-image-$arch ;;
6.12) meta=linux-image-6.12-$arch ;;
*) die "usage: $0 <5.10|6.1|6.12|7.2> [amd64|arm64] (got '${line}')" ;;
esac
case "$arch" in
amd64) current=$line.current ;;
arm64) current=$line-arm64.current ;;
*) die "usage: $0 <5.10|6.1|6.12|7.2> [amd64|arm64] (got arch '${arch}')" ;;
esac

mkdir -p "$base/debs"
# Fast path: a completed fetch of this line leaves a <line>[-arm64].current
# link.
if [ -z "${TLBB_KERNEL_REFRESH:-}" ] &&
   [ "$(cat "$base/$current/.complete" 2>/dev/null)" = "format $format" ]; then
	(cd "$base/$current" && pwd -P)
	exit 0
fi

command -v apt-cache >/dev/null || die "apt-cache not found (Debian only)"
# host_mirror NAME: the URI of this machine's own NAME source.
. "$here/mirror.sh"

# apt_state SUITE ARCH: sets aopts to the apt options that read SUITE's
# package lists for ARCH, made (apt-get update) on first use in a private
# state <base>/apt-<suite>-<arch>/ (bookworm's arm64: <base>/apt-arm64/,
# from the host's own sources); empty for the host's own lists (bookworm,
# amd64). The host's dpkg architectures and lists are never changed.
apt_state() {
	local s=$1 a=$2 aptdir mirror security key
	aopts=()
	[ "$s" = bookworm ] && [ "$a" = amd64 ] && return 0
	if [ "$s" = bookworm ]; then
		aptdir=$base/apt-$a
	else
		aptdir=$base/apt-$s-$a
	fi
	aopts=(-o APT::Architecture="$a" -o APT::Architectures::="$a"
	       -o Dir::State::Lists="$aptdir/lists"
	       -o Dir::State::status="$aptdir/status"
	       -o Dir::Cache="$aptdir/cache")
	[ "$s" = bookworm ] ||
		aopts+=(-o Dir::Etc::SourceList="$aptdir/sources.list"
			-o Dir::Etc::SourceParts=/nonexistent
			-o Acquire::Check-Valid-Until=false)
	[ -f "$aptdir/.updated" ] && [ -z "${TLBB_KERNEL_REFRESH:-}" ] &&
		return 0
	mkdir -p "$aptdir/lists/partial" "$aptdir/cache/archives/partial"
	: >"$aptdir/status"
	if [ "$s" != bookworm ]; then
		mirror=${TLBB_DEBIAN_MIRROR:-$(host_mirror debian)}
		security=${TLBB_DEBIAN_SECURITY_MIRROR:-$(host_mirror debian-security)}
		# sid has no security suite
		[ "$s" = sid ] && security=none
		[ -n "$mirror" ] && [ -n "$security" ] ||
			die "no debian/debian-security source in /etc/apt to take $s from (set TLBB_DEBIAN_MIRROR and TLBB_DEBIAN_SECURITY_MIRROR)"
		key=/usr/share/keyrings/debian-archive-keyring.gpg
		echo "deb [signed-by=$key] ${mirror%/} $s main" \
			>"$aptdir/sources.list"
		[ "$security" = none ] ||
			echo "deb [signed-by=$key] ${security%/} $s-security main" \
				>>"$aptdir/sources.list"
	fi
	log "apt-get update of the $s $a package lists into $aptdir"
	apt-get -q "${aopts[@]}" update >&2 ||
		die "apt-get update of the $s $a lists failed"
	touch "$aptdir/.updated"
}
# kapt: apt for the kernel's own packages (its suite and architecture: the
# image, headers, busybox). hapt: the same suite for the host's
# architecture, for linux-kbuild, whose programs (fixdep, modpost) run on
# the build machine (here, or in the sid root) even for an arm64 kernel.
apt_state "$suite" "$arch"
kapt=("${aopts[@]}")
apt_state "$suite" amd64
hapt=("${aopts[@]}")
# get_deb PKG [VERSION]: sets deb to PKG's .deb in <base>/debs (downloaded
# unless there): VERSION if given and served, else the candidate version
# or, when the mirror does not serve that one, the next older version its
# lists name; 1 if none downloads.
# linux-kbuild is the host architecture's (see hapt).
get_deb() {
	local p=$1 want=${2:-} v f parch papt
	papt=("${kapt[@]}")
	parch=$arch
	# the same busybox-static exists for both architectures
	[ "$p" = "$kbuild" ] && papt=("${hapt[@]}") && parch=amd64
	deb=
	for v in $( { [ -z "$want" ] || echo "$want"
		      apt-cache "${papt[@]}" policy "$p" |
			sed -n 's/^ *Candidate: //p'
		      apt-cache "${papt[@]}" show "$p" 2>/dev/null |
			sed -n 's/^Version: //p' | sort -rV
		    } | grep -vx '(none)' | awk '!seen[$0]++'); do
		# apt-get download's file name: <pkg>_<version>_<arch>.deb, an
		# epoch written as %3a.
		f=$base/debs/${p}_${v/:/%3a}
		deb=$(ls "${f}_$parch.deb" "${f}_all.deb" 2>/dev/null |
			head -n 1 || true)
		[ -n "$deb" ] && return 0
		# As root apt-get warns about the _apt sandbox: harmless.
		if (cd "$base/debs" &&
		    apt-get "${papt[@]}" download -q "$p=$v" >&2); then
			deb=$(ls "${f}_$parch.deb" "${f}_all.deb" 2>/dev/null |
				head -n 1 || true)
			[ -n "$deb" ] && return 0
			log "apt-get download $p=$v left no .deb"
		fi
		log "$p=$v cannot be downloaded: trying its next older version"
	done
	log "no version of $p downloads (stale index? TLBB_KERNEL_REFRESH=1)"
	return 1
}

# get_kernel IMAGE: sets pkgs, kbuild and debs (every .deb of that
# kernel, downloaded), or 1 when one of them is not listed or does not
# download.
get_kernel() {
	local image=$1 abi=${1#linux-image-} hdr deps common parts p deb_hdr
	# Headers: the arch package depends on the -common one and on
	# linux-kbuild.
	hdr=linux-headers-$abi
	deps=$(apt-cache "${kapt[@]}" depends "$hdr" 2>/dev/null |
		sed -n 's/^ *|\{0,1\}Depends: \(linux-\(headers\|kbuild\)-[^ ]*\)$/\1/p' |
		sort -u)
	common=$(echo "$deps" | grep '^linux-headers-.*-common$' || true)
	kbuild=$(echo "$deps" | grep '^linux-kbuild-' || true)
	if [ -z "$common" ] || [ -z "$kbuild" ]; then
		log "cannot resolve the headers' dependencies of $hdr: '$deps'"
		return 1
	fi
	pkgs="$image $hdr $common"
	# sid's image package is empty: its files are in packages of their
	# own.
	parts=$(apt-cache "${kapt[@]}" depends "$image" 2>/dev/null |
		sed -n 's/^ *|\{0,1\}Depends: \(linux-\(base\|binary\|modules\)-'"$abi"'\)$/\1/p' |
		sort -u | tr '\n' ' ')
	pkgs="$pkgs $parts"
	if [ -n "$parts" ] && ! echo "$parts" | grep -q "linux-modules-$abi"; then
		pkgs="$pkgs linux-modules-$abi"
	fi
	[ "$arch" = arm64 ] && pkgs="$pkgs busybox-static"
	log "kernel $line: $pkgs"
	debs=
	for p in $pkgs; do
		get_deb "$p" || return 1
		[ "$p" = "$hdr" ] && deb_hdr=$deb
		debs="$debs $deb"
	done
	# kbuild of the headers' own version where the lists have it (the
	# newest is a fallback: an older kernel of a line, see below).
	get_deb "$kbuild" "$(dpkg-deb -f "$deb_hdr" Version)" || return 1
	debs="$debs $deb"
}

# The image package the meta package points at (the newest of the line),
# then the line's older kernels of the same flavour, newest first: a mirror
# may list packages it does not serve (this machine's had bullseye-
# security's arm64 indexes, not their files), and the newest kernel whose
# packages all download is used, saying so.
newest=$(apt-cache "${kapt[@]}" depends "$meta" 2>/dev/null |
	sed -n 's/^ *|\{0,1\}Depends: \(linux-image-[0-9][^ ]*\)$/\1/p' |
	grep -v -- '-unsigned$' | sort -V | tail -n 1)
[ -n "$newest" ] || die "cannot resolve $meta with apt-cache (run apt-get update?)"
case "${newest#linux-image-}" in
"$line".*) ;;
*) die "$meta resolved to $newest, not a $line kernel" ;;
esac
older=$(apt-cache "${kapt[@]}" pkgnames "linux-image-$line." |
	grep -E "^linux-image-${line//./\\.}\\.[0-9]+(-[0-9]+|\\+deb[0-9]+)-$arch\$" |
	grep -vx -- "$newest" | sort -rV || true)

# One fetch at a time per cache (H3's, H7's and CI's scripts share it).
exec 9>"$base/.lock"
flock 9 || die "cannot lock $base/.lock"
image=
for try in $newest $older; do
	abi=${try#linux-image-}
	dir=$base/$abi
	if [ "$(cat "$dir/.complete" 2>/dev/null)" = "format $format" ]; then
		ln -sfn "$abi" "$base/$current"
		echo "$dir"
		exit 0
	fi
	if get_kernel "$try"; then
		image=$try
		break
	fi
	log "$try: not all of its packages download (above): trying the line's next older kernel"
done
[ -n "$image" ] ||
	die "no $line kernel for $arch whose packages all download ($newest $older)"
[ "$image" = "$newest" ] ||
	log "WARNING: $newest is listed but not served: using $image"

tmp=$dir.tmp.$$
rm -rf "$tmp"
mkdir -p "$tmp/root" "$base/debs"
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/packages.txt"
for deb in $debs; do
	dpkg-deb -x "$deb" "$tmp/root"
	echo "$(dpkg-deb -f "$deb" Package)=$(dpkg-deb -f "$deb" Version)" \
		>>"$tmp/packages.txt"
done

# The arch headers include the common ones by absolute path
# (include /usr/src/linux-headers-...-common/Makefile); point it here.
# Symlinks inside the packages are relative and keep working.
hdir=$tmp/root/usr/src/linux-headers-$abi
[ -f "$hdir/Makefile" ] || die "no $hdir/Makefile in $hdr"
final_root=$dir/root
sed -i "s#\\(include\\|:=\\|=\\) */usr/src/#\\1 $final_root/usr/src/#" \
	"$hdir/Makefile"
grep -q "$final_root/usr/src/" "$hdir/Makefile" ||
	die "did not find the /usr/src include to rewrite in $hdir/Makefile"

# Debian's headers build with the compiler the kernel was built with, by
# name (.kernelvariables: CC = ...gcc-N). bullseye's gcc-10 is not in
# bookworm: build its modules with bookworm's gcc-12 (W=1 is clean).
if [ "$suite" = bullseye ]; then
	sed -i 's/\(CROSS_COMPILE)gcc\)-10$/\1-12/' "$hdir/.kernelvariables"
	grep -q 'gcc-12$' "$hdir/.kernelvariables" ||
		die "did not find gcc-10 to replace in $hdir/.kernelvariables"
fi

# /boot/vmlinuz-<abi> and /lib/modules, or (sid) all under
# /usr/lib/modules/<abi>/: depmod -b and the boot stack look in lib/.
if [ -d "$tmp/root/usr/lib/modules/$abi" ] && [ ! -e "$tmp/root/lib" ]; then
	ln -s usr/lib "$tmp/root/lib"
fi
for f in "$tmp/root/boot/vmlinuz-$abi" "$tmp/root/usr/lib/modules/$abi/vmlinuz"; do
	[ -f "$f" ] && cp "$f" "$tmp/vmlinuz" && break
done
for f in "$tmp/root/boot/config-$abi" "$tmp/root/usr/lib/modules/$abi/config"; do
	[ -f "$f" ] && cp "$f" "$tmp/config" && break
done
[ -f "$tmp/vmlinuz" ] && [ -f "$tmp/config" ] ||
	die "no vmlinuz or config of $abi in the packages ($pkgs)"
if [ "$suite" = sid ]; then
	"$here/buildroot.sh" sid >"$tmp/buildroot" ||
		die "no sid root to build modules for $abi in"
fi
if [ "$arch" = amd64 ]; then
	python3 "$here/extract-vmlinux.py" "$tmp/vmlinuz" "$tmp/vmlinux" >&2
else
	# /bin (bookworm, bullseye) or /usr/bin (sid, merged /usr)
	for f in "$tmp/root/bin/busybox" "$tmp/root/usr/bin/busybox"; do
		[ -f "$f" ] && cp "$f" "$tmp/busybox" && break
	done
	[ -f "$tmp/busybox" ] || die "no busybox in busybox-static"
fi
echo "$arch" >"$tmp/arch"

# modules.dep and friends (depmod runs at install time normally), and a
# build link that points at these headers instead of /usr/src.
depmod -b "$tmp/root" "$abi" ||
	die "depmod failed for $abi"
ln -sfn "../../../usr/src/linux-headers-$abi" "$tmp/root/lib/modules/$abi/build"
ln -sfn "../../../usr/src/$(basename "$(readlink "$tmp/root/lib/modules/$abi/source")")" \
	"$tmp/root/lib/modules/$abi/source"

echo "$abi" >"$tmp/abi"
ln -s "root/usr/src/linux-headers-$abi" "$tmp/headers"
ln -s "root/lib/modules/$abi" "$tmp/modules"
echo "format $format" >"$tmp/.complete"
rm -rf "$dir"
mv "$tmp" "$dir"
trap - EXIT
ln -sfn "$abi" "$base/$current"
log "kernel $line cached in $dir"
echo "$dir"
