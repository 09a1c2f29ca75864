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
#
# 5.10 is bullseye's (Debian 11) kernel: its packages come from a private apt
# state of bullseye and bullseye-security lists (<base>/apt-bullseye-amd64/),
# made from the mirrors this machine's apt already uses (the URIs of its
# debian and debian-security sources; TLBB_DEBIAN_MIRROR and
# TLBB_DEBIAN_SECURITY_MIRROR override them).  Its linux-kbuild-5.10 runs on
# bookworm, and the module builds with bookworm's gcc-12 (its headers name
# gcc-10, which bookworm does not have: kbuild only records the name).
# amd64 only.
#
# 7.2 is sid's newest kernel (linux-image-amd64 in sid), from a private apt
# state of sid's lists (Valid-Until not checked: sid's Release file on a
# mirror may be past it). sid splits the image into linux-base-<abi>
# (config), linux-binary-<abi> (vmlinuz) and linux-modules-<abi>, all under
# /usr/lib/modules/<abi>/; they are fetched too. Its kbuild tools need
# glibc >= 2.38 and gcc-16: the module is built inside a sid root made by
# tools/kernels/buildroot.sh, named by <dir>/buildroot. amd64 only.
#
# arm64 packages come from a private apt state of arm64 package lists
# (<base>/apt-arm64/, filled by `apt-get update` with -o options): the
# host's dpkg architectures are not changed.  The headers are cross-built
# with: make ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- (Debian's
# gcc-aarch64-linux-gnu); the host's (amd64) linux-kbuild is used, whose
# fixdep and modpost run here.  A static arm64 busybox (busybox-static) is
# unpacked beside the kernel for the test initramfs.
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
[ "$suite" = bookworm ] || [ "$arch" = amd64 ] ||
	die "$line ($suite) is fetched for amd64 only"

mkdir -p "$base"
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

# apt for the kernel's own architecture: the host's, or the private arm64
# lists (the image, its headers and busybox; linux-kbuild stays the host's),
# or a private state of another suite's lists (kbuild from there too).
kapt=()
if [ "$suite" != bookworm ]; then
	aptdir=$base/apt-$suite-$arch
	kapt=(-o APT::Architecture="$arch" -o APT::Architectures::="$arch"
	      -o Dir::State::Lists="$aptdir/lists"
	      -o Dir::State::status="$aptdir/status"
	      -o Dir::Cache="$aptdir/cache"
	      -o Dir::Etc::SourceList="$aptdir/sources.list"
	      -o Dir::Etc::SourceParts=/nonexistent
	      -o Acquire::Check-Valid-Until=false)
	if [ ! -f "$aptdir/.updated" ] || [ -n "${TLBB_KERNEL_REFRESH:-}" ]; then
		mirror=${TLBB_DEBIAN_MIRROR:-$(host_mirror debian)}
		security=${TLBB_DEBIAN_SECURITY_MIRROR:-$(host_mirror debian-security)}
		# sid has no security suite
		[ "$suite" = sid ] && security=none
		[ -n "$mirror" ] && [ -n "$security" ] ||
			die "no debian/debian-security source in /etc/apt to take $suite from (set TLBB_DEBIAN_MIRROR and TLBB_DEBIAN_SECURITY_MIRROR)"
		key=/usr/share/keyrings/debian-archive-keyring.gpg
		mkdir -p "$aptdir/lists/partial" "$aptdir/cache/archives/partial"
		: >"$aptdir/status"
		echo "deb [signed-by=$key] ${mirror%/} $suite main" \
			>"$aptdir/sources.list"
		[ "$security" = none ] ||
			echo "deb [signed-by=$key] ${security%/} $suite-security main" \
				>>"$aptdir/sources.list"
		log "apt-get update of the $suite package lists into $aptdir"
		apt-get -q "${kapt[@]}" update >&2 ||
			die "apt-get update of the $suite lists failed"
		touch "$aptdir/.updated"
	fi
elif [ "$arch" = arm64 ]; then
	aptdir=$base/apt-arm64
	kapt=(-o APT::Architecture=arm64 -o APT::Architectures::=arm64
	      -o Dir::State::Lists="$aptdir/lists"
	      -o Dir::State::status="$aptdir/status"
	      -o Dir::Cache="$aptdir/cache")
	if [ ! -f "$aptdir/.updated" ] || [ -n "${TLBB_KERNEL_REFRESH:-}" ]; then
		mkdir -p "$aptdir/lists/partial" "$aptdir/cache/archives/partial"
		: >"$aptdir/status"
		log "apt-get update of the arm64 package lists into $aptdir"
		apt-get -q "${kapt[@]}" update >&2 ||
			die "apt-get update of the arm64 lists failed"
		touch "$aptdir/.updated"
	fi
fi
# The image package the meta package points at (the newest of the line).
image=$(apt-cache "${kapt[@]}" depends "$meta" 2>/dev/null |
	sed -n 's/^ *|\{0,1\}Depends: \(linux-image-[0-9][^ ]*\)$/\1/p' |
	grep -v -- '-unsigned$' | sort -V | tail -n 1)
[ -n "$image" ] || die "cannot resolve $meta with apt-cache (run apt-get update?)"
abi=${image#linux-image-}
case "$abi" in
"$line".*) ;;
*) die "$meta resolved to $image, not a $line kernel" ;;
esac

dir=$base/$abi
# One fetch at a time per cache (H3's, H7's and CI's scripts share it).
exec 9>"$base/.lock"
flock 9 || die "cannot lock $base/.lock"
if [ "$(cat "$dir/.complete" 2>/dev/null)" = "format $format" ]; then
	ln -sfn "$abi" "$base/$current"
	echo "$dir"
	exit 0
fi

# Headers: the arch package depends on the -common one and on linux-kbuild.
hdr=linux-headers-$abi
deps=$(apt-cache "${kapt[@]}" depends "$hdr" 2>/dev/null |
	sed -n 's/^ *|\{0,1\}Depends: \(linux-\(headers\|kbuild\)-[^ ]*\)$/\1/p' |
	sort -u)
common=$(echo "$deps" | grep '^linux-headers-.*-common$' || true)
kbuild=$(echo "$deps" | grep '^linux-kbuild-' || true)
[ -n "$common" ] && [ -n "$kbuild" ] ||
	die "cannot resolve the headers' dependencies of $hdr: '$deps'"
pkgs="$image $hdr $common"
# sid's image package is empty: its files are in packages of their own.
parts=$(apt-cache "${kapt[@]}" depends "$image" 2>/dev/null |
	sed -n 's/^ *|\{0,1\}Depends: \(linux-\(base\|binary\|modules\)-'"$abi"'\)$/\1/p' |
	sort -u | tr '\n' ' ')
pkgs="$pkgs $parts"
if [ -n "$parts" ] && ! echo "$parts" | grep -q "linux-modules-$abi"; then
	pkgs="$pkgs linux-modules-$abi"
fi
[ "$arch" = arm64 ] && pkgs="$pkgs busybox-static"

log "kernel $line: $pkgs"
tmp=$dir.tmp.$$
rm -rf "$tmp"
mkdir -p "$tmp/root" "$base/debs"
trap 'rm -rf "$tmp"' EXIT
debs=
for p in $pkgs $kbuild; do
	papt=("${kapt[@]}")
	[ "$p" = "$kbuild" ] && [ "$arch" = arm64 ] && papt=()
	v=$(apt-cache "${papt[@]}" policy "$p" | sed -n 's/^ *Candidate: //p')
	[ -n "$v" ] && [ "$v" != "(none)" ] || die "no candidate version of $p"
	# apt-get download's file name: <pkg>_<version>_<arch>.deb, an epoch
	# written as %3a; the same busybox-static exists for both
	# architectures.
	parch=$arch
	[ "$p" = "$kbuild" ] && parch=amd64
	f=$base/debs/${p}_${v/:/%3a}
	deb=$(ls "${f}_$parch.deb" "${f}_all.deb" 2>/dev/null | head -n 1 || true)
	if [ -z "$deb" ]; then
		# As root apt-get warns about the _apt sandbox: harmless.
		(cd "$base/debs" && apt-get "${papt[@]}" download -q "$p=$v" >&2) ||
			die "apt-get download $p=$v failed (stale index? run apt-get update)"
		deb=$(ls "${f}_$parch.deb" "${f}_all.deb" 2>/dev/null |
			head -n 1 || true)
		[ -n "$deb" ] || die "apt-get download $p=$v left no .deb"
	fi
	debs="$debs $deb"
done
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
	cp "$tmp/root/bin/busybox" "$tmp/busybox"
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
