#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# mkinitramfs.sh <kernel-cache-dir> <out.cpio> <tests-dir> [tlbbalance.ko]
#
# Builds the test initramfs (an uncompressed newc cpio): busybox-static,
# guest-init.sh as /init, the kernel's own configfs and KVM modules
# (kvm-amd with what modules.dep says it needs, decompressed for busybox's
# insmod) and tlbbalance.ko (loaded with allow_inject=1) in /modules with
# their load order in /modules/order, and the built tests from <tests-dir>
# in /tests.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
kdir=${1:?kernel cache dir (tools/kernels/fetch.sh prints it)}
out=${2:?output cpio}
tests=${3:?tests dir}
ko=${4:-}

die() { echo "mkinitramfs.sh: $*" >&2; exit 1; }

# The kernel's own architecture's busybox when fetch.sh put one beside it
# (arm64), else the host's.
busybox=$kdir/busybox
[ -x "$busybox" ] ||
	busybox=$(command -v busybox) || die "busybox not found (apt-get install busybox-static)"
! ldd "$busybox" >/dev/null 2>&1 ||
	die "$busybox is not static (apt-get install busybox-static)"
mods=$kdir/modules
[ -f "$mods/modules.dep" ] || die "no $mods/modules.dep: rerun tools/kernels/fetch.sh"

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,sbin,dev,proc,sys,tmp,run,etc,modules,tests}
cp "$busybox" "$root/bin/busybox"
cp "$here/guest-init.sh" "$root/init"
chmod 755 "$root/init"

# The modules a name needs, dependencies first, each once.
declare -A seen
order=()
add_module() {	# name as in modules.dep without .ko*, e.g. kvm-amd
	local name=$1 line path dep
	line=$(grep -E "/$name\\.ko(\\.[a-z]+)?:" "$mods/modules.dep" | head -n 1) ||
		die "module $name not in $mods/modules.dep"
	path=${line%%:*}
	for dep in ${line#*:}; do
		dep=$(basename "$dep")
		add_module "${dep%%.ko*}"
	done
	[ -n "${seen[$name]:-}" ] && return
	seen[$name]=1
	case "$path" in
	*.ko) cp "$mods/$path" "$root/modules/$name.ko" ;;
	*.ko.xz) xz -dc "$mods/$path" >"$root/modules/$name.ko" ;;
	*.ko.zst) zstd -dcq "$mods/$path" >"$root/modules/$name.ko" ;;
	*.ko.gz) gzip -dc "$mods/$path" >"$root/modules/$name.ko" ;;
	*) die "unknown module file $path" ;;
	esac
	order+=("$name.ko")
}
add_module configfs
# x86: KVM is a module (AMD SVM, emulated by TCG); arm64 has it built in.
if [ "$(cat "$kdir/arch" 2>/dev/null || echo amd64)" = amd64 ]; then
	add_module kvm-amd
fi
for m in "${order[@]}"; do echo "$m"; done >"$root/modules/order"
if [ -n "$ko" ]; then
	cp "$ko" "$root/modules/tlbbalance.ko"
	echo "tlbbalance.ko allow_inject=1" >>"$root/modules/order"
fi

cp -a "$tests"/. "$root/tests/"
# The test launcher (tlbb-run.c), built static by run-kernels.sh.
[ -x "$tests/.tlbb-run" ] || die "no $tests/.tlbb-run (run-kernels.sh builds it)"
mv "$root/tests/.tlbb-run" "$root/bin/tlbb-run"
# arm64: the semihosting exit (tlbb-exit.c) guest-init.sh ends QEMU with.
if [ -f "$tests/.tlbb-exit" ]; then
	mv "$root/tests/.tlbb-exit" "$root/bin/tlbb-exit"
fi
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) >"$out"
