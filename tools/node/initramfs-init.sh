#!/bin/busybox sh
# SPDX-License-Identifier: Apache-2.0
# /init of the node's initramfs (busybox): load the virtio, 9p and overlay
# modules the launcher packed in load order, mount the host's root read-only
# over 9p with an overlay on top (upper layer: a tmpfs, or a disk), and switch to stage 2
# (tools/node/node-init.sh from the working tree, seen through that root).
# Settings come from the kernel command line (tlbb_* variables).
export PATH=/bin
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

fail() {
	echo "tlbb-node: initramfs: $*" >/dev/console
	# isa-debug-exit: QEMU exits with (2 * 120 + 1): "initramfs failed".
	printf '\170' | dd of=/dev/port bs=1 seek=244 2>/dev/null
	poweroff -f
}

for m in $(cat /modules/order); do
	insmod "/modules/$m" || fail "insmod $m failed"
done

mkdir -p /lower /upper /newroot
mount -t 9p -o trans=virtio,version=9p2000.L,cache=loose,msize=512000,ro \
	hostroot /lower || fail "cannot mount the host root over 9p"
# The upper layer: a tmpfs (a fresh root at every boot), or with
# tlbb_upper=DEV (tools/node/node.py's disk) the ext4 file system on the
# virtio disk DEV, which keeps what the node wrote across its power-offs.
if [ -n "${tlbb_upper:-}" ]; then
	for _ in $(seq 50); do
		[ -b "$tlbb_upper" ] && break
		sleep 0.1
	done
	mount -t ext4 "$tlbb_upper" /upper ||
		fail "cannot mount $tlbb_upper (the upper layer's disk)"
else
	mount -t tmpfs -o mode=0755 tmpfs /upper || fail "cannot mount tmpfs"
fi
mkdir -p /upper/upper /upper/work
mount -t overlay overlay \
	-o lowerdir=/lower,upperdir=/upper/upper,workdir=/upper/work \
	/newroot || fail "cannot mount the overlay root"
init=${tlbb_repo:?tlbb_repo not set}/tools/node/node-init.sh
[ -x "/newroot$init" ] || fail "$init not found in the host root"
umount /proc /sys
mount --move /dev /newroot/dev
exec switch_root /newroot /bin/bash "$init"
