#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Stage 2 of the compute node in a box: PID 1 on the overlay root (the
# host's / read-only over 9p, a tmpfs or a disk on top). Started by the initramfs,
# configured by /tlbb-io/node.env (written by tools/node/node.py).
#
# Mounts, loads kvm-amd (nested paging) and tlbbalance.ko, mounts hugetlbfs,
# installs the libvirt hook, starts virtlogd and libvirtd, then runs the
# command agent on the virtio-serial port. When the agent ends (power-off
# request), stops the domains and the daemons and tells QEMU the exit status
# through isa-debug-exit: QEMU then exits with 2 * status + 1.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8
umask 022

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mkdir -p /dev/pts /dev/shm /dev/hugepages
mount -t devpts -o gid=5,mode=620 devpts /dev/pts
# What udev would link: bash's process substitution (dkms uses it) needs
# /dev/fd.
ln -sfn /proc/self/fd /dev/fd
for i in 0:stdin 1:stdout 2:stderr; do ln -sfn "/proc/self/fd/${i%%:*}" "/dev/${i#*:}"; done
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs -o mode=0755 tmpfs /run
# No fresh /tmp: the working tree (or the cache) may live there; the
# overlay's tmpfs upper already takes every write.
mkdir -p /run/tlbb /run/lock /tlbb-io
: >/run/tlbb/errors

step() {
	local up

	up=$(cut -d' ' -f1 /proc/uptime)
	echo "$up $*" >>/run/tlbb/boot.log
	echo "tlbb-node: [$up] $*" >/dev/console
}

error() {
	echo "tlbb-node: error: $*" >/dev/console
	echo "$*" >>/run/tlbb/errors
}

power_off() {
	local code=$1

	sync
	# isa-debug-exit at 0xf4: QEMU exits with (code << 1) | 1.
	printf "\\x$(printf %02x "$code")" |
		dd of=/dev/port bs=1 seek=244 2>/dev/null
	echo o >/proc/sysrq-trigger
	sleep 10
}

step stage2
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 tlbbio /tlbb-io ||
	{ echo "tlbb-node: cannot mount the io share" >/dev/console;
	  power_off 121; }
# shellcheck disable=SC1091
. /tlbb-io/node.env
hostname "${TLBB_HOSTNAME:-tlbb-node}"
mount -t debugfs debugfs /sys/kernel/debug
mount -t hugetlbfs -o pagesize=2M hugetlbfs /dev/hugepages
echo "${TLBB_HUGEPAGES:-0}" >/proc/sys/vm/nr_hugepages
echo "${TLBB_THP:-always}" >/sys/kernel/mm/transparent_hugepage/enabled
ip link set lo up 2>/dev/null
# Writable host directories at their own path, caching off: the host
# writes files there (tools/cloud's kvm host: nova-compute's instances)
# and QEMU in the node opens them, both must see every write at once.
for share in $TLBB_SHARES; do
	tag=${share%%:*} dir=${share#*:}
	mkdir -p "$dir" &&
		mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=none \
			"$tag" "$dir" ||
		error "cannot mount the $tag share on $dir"
done

# The booted kernel's modules: from the kernel cache or a module subset
# (host paths), bind-mounted; on a persistent root (a disk) a subset is
# copied onto the root once, as a kernel image package installs its
# modules, and stays there (with DKMS's builds) across reboots, into this
# kernel or another; TLBB_MODDIR empty: as already installed on the root.
if [ -n "$TLBB_MODDIR" ] && [ "${TLBB_PERSIST:-0}" = 1 ]; then
	# a stamp on the disk, not modules.dep: the lower layer is this
	# machine's root, which may have that kernel's whole tree
	stamp=/var/lib/tlbb-node/modules-$TLBB_KVER
	if [ ! -e "$stamp" ]; then
		rm -rf "/lib/modules/$TLBB_KVER" &&
			mkdir -p "/lib/modules/$TLBB_KVER" /var/lib/tlbb-node &&
			cp -a "$TLBB_MODDIR/." "/lib/modules/$TLBB_KVER/" &&
			: >"$stamp" ||
			error "cannot install the modules of $TLBB_MODDIR"
	fi
elif [ -n "$TLBB_MODDIR" ]; then
	mkdir -p "/lib/modules/$TLBB_KVER"
	mount --bind "$TLBB_MODDIR" "/lib/modules/$TLBB_KVER" ||
		error "cannot bind-mount modules from $TLBB_MODDIR"
elif [ ! -e "/lib/modules/$TLBB_KVER/modules.dep" ]; then
	error "no /lib/modules/$TLBB_KVER/modules.dep on the root"
fi
modprobe virtio_console || error "modprobe virtio_console failed"
modprobe kvm_amd || error "modprobe kvm_amd failed: no /dev/kvm"
modprobe configfs && mount -t configfs configfs /sys/kernel/config
if [ "${TLBB_NET:-0}" = 1 ]; then
	# QEMU's user network, restricted to the port forwarded to sshd
	# (tools/node/node.py ssh_port): the node's address is QEMU's default.
	modprobe virtio_net || error "modprobe virtio_net failed"
	ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 ||
		error "cannot configure eth0"
fi
step modules

# The working tree's Python package for Debian's python3 (the one with
# python3-libvirt), and the CLI.
echo "$TLBB_REPO" >/usr/lib/python3/dist-packages/tlbb-node.pth
cat >/usr/local/bin/tlbbalance <<EOF
#!/bin/sh
exec /usr/bin/python3 -m nova_tlbbalance "\$@"
EOF
chmod +x /usr/local/bin/tlbbalance

# What systemd-modules-load.service does early at boot, before any
# daemon: the modules named in modules-load.d's *.conf files loaded (with
# their /etc/modprobe.d options); a file in /etc hides one of the same
# name in /run, /usr/local/lib or /usr/lib (where packages put theirs:
# tlbbalance-dkms's is /usr/lib/modules-load.d/tlbbalance.conf). A
# failure is logged, not fatal, as there: what needs the module finds it
# missing.
# A link to /dev/null masks a file of that name; files are read in the
# order of their names.
declare -A modules_load=()
for dir in /usr/lib /usr/local/lib /run /etc; do
	for f in "$dir"/modules-load.d/*.conf; do
		[ -e "$f" ] || [ -L "$f" ] || continue
		modules_load[$(basename "$f")]=$f
	done
done
for name in $(printf '%s\n' "${!modules_load[@]}" | sort); do
	f=${modules_load[$name]}
	[ "$(readlink -f "$f")" = /dev/null ] && continue
	for m in $(sed -e 's/[#;].*//' "$f"); do
		if modprobe "$m" 2>>/run/tlbb/modules-load.log; then
			step "modules-load.d: $m"
		else
			echo "tlbb-node: modules-load.d: modprobe $m failed" \
				>/dev/console
		fi
	done
done

if [ -n "$TLBB_KO" ]; then
	# shellcheck disable=SC2086
	insmod "$TLBB_KO" $TLBB_KO_PARAMS ||
		error "insmod $TLBB_KO $TLBB_KO_PARAMS failed"
	step tlbbalance.ko
fi

if [ "$TLBB_LIBVIRT" = 1 ]; then
	# A clean libvirt configuration: nothing from the host's libvirt state
	# (domains, networks, hooks) leaks into the node.
	# Fresh tmpfs mounts rather than rm: the lower layer is the host's
	# live libvirt state, read over 9p.
	# On a persistent root (TLBB_PERSIST=1, a disk under the overlay) the
	# configuration and the domains are the node's own and survive a
	# reboot: emptied once, at the first boot on that disk (the overlay
	# then hides the host's directories: whiteouts, opaque directories),
	# kept after.
	fresh="/etc/libvirt /var/lib/libvirt /var/cache/libvirt /var/log/libvirt"
	if [ "${TLBB_PERSIST:-0}" = 1 ]; then
		fresh="/var/cache/libvirt /var/log/libvirt"
		if [ ! -e /var/lib/tlbb-node/libvirt-own ]; then
			rm -rf /etc/libvirt /var/lib/libvirt &&
				mkdir -p /etc/libvirt /var/lib/libvirt \
					/var/lib/tlbb-node &&
				: >/var/lib/tlbb-node/libvirt-own ||
				error "cannot empty /etc/libvirt, /var/lib/libvirt"
		fi
	fi
	for d in $fresh; do
		mkdir -p "$d" && mount -t tmpfs -o mode=0755 tmpfs "$d" ||
			error "cannot mount a tmpfs on $d"
	done
	mkdir -p /etc/libvirt/hooks/qemu.d /etc/libvirt/qemu /var/log/libvirt/qemu \
		/var/cache/libvirt/qemu/capabilities
	cat >/etc/libvirt/qemu.conf <<'EOF'
# Written by tools/node/node-init.sh: a throwaway node, everything as root.
user = "root"
group = "root"
security_driver = "none"
namespaces = [ ]
EOF
	cat >/etc/libvirt/libvirtd.conf <<'EOF'
# Written by tools/node/node-init.sh.
log_outputs = "3:file:/var/log/libvirt/libvirtd.log"
EOF
	# Only the QEMU driver (and secrets, which it uses): the others probe
	# for Xen, LXC, udev devices, networks... at start, slowly under TCG.
	# The overlay hides them from this libvirtd only.
	for so in /usr/lib/x86_64-linux-gnu/libvirt/connection-driver/*.so; do
		case ${so##*/} in
		libvirt_driver_qemu.so | libvirt_driver_secret.so) ;;
		*) rm -f "$so" ;;
		esac
	done
	if [ -n "$TLBB_HOOK_CMD" ]; then
		if eval "$TLBB_HOOK_CMD" >>/run/tlbb/hook-install.log 2>&1; then
			step hook
		else
			error "hook install failed: $TLBB_HOOK_CMD" \
			      "($(tail -n 3 /run/tlbb/hook-install.log))"
		fi
	fi
	if [ -n "$TLBB_CAPS_DIR" ] && ls "$TLBB_CAPS_DIR"/*.xml >/dev/null 2>&1
	then
		cp "$TLBB_CAPS_DIR"/*.xml /var/cache/libvirt/qemu/capabilities/
		caps_seeded=1
	fi
	virtlogd -d -p /run/virtlogd.pid || error "virtlogd failed"
	libvirtd -d -p /run/libvirtd.pid || error "libvirtd failed"
	for _ in $(seq 120); do
		virsh -q -c qemu:///system version >/dev/null 2>&1 && break
		sleep 0.5
	done
	if virsh -q -c qemu:///system version >/dev/null 2>&1; then
		step libvirtd
		if [ -z "$caps_seeded" ]; then
			# Probe now and hand the result to the launcher's cache.
			virsh -c qemu:///system domcapabilities --virttype kvm \
				>/dev/null 2>&1
			mkdir -p /tlbb-io/capabilities
			cp /var/cache/libvirt/qemu/capabilities/*.xml \
				/tlbb-io/capabilities/ 2>/dev/null
			step capabilities-probed
		fi
	else
		error "libvirtd does not answer"
	fi
	if [ -n "$TLBB_LIBVIRT_RELAY" ]; then
		/usr/bin/python3 "$TLBB_REPO/tools/node/relay.py" \
			>>/run/tlbb/relay.log 2>&1 &
		step libvirt-relay
	fi
fi

step agent
/usr/bin/python3 "$TLBB_REPO/tools/node/agent.py"
status=$?

# Power-off: stop the domains (their hooks run), then the daemons.
if [ "$TLBB_LIBVIRT" = 1 ]; then
	for d in $(virsh -q -c qemu:///system list --name 2>/dev/null); do
		virsh -q -c qemu:///system destroy "$d" >/dev/null 2>&1
	done
	for p in /run/libvirtd.pid /run/virtlogd.pid; do
		[ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null
	done
fi
umount /tlbb-io 2>/dev/null
power_off "$status"
