#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A compute node in a box: a Debian kernel under QEMU TCG with real KVM.

The node boots one of Debian's kernels (tools/kernels/fetch.sh) under
``qemu-system-x86_64 -accel tcg -cpu max``. Its root file system is this
machine's own ``/``, shared read-only over 9p, with a tmpfs overlay on top:
libvirt, QEMU and Debian's python3 are the host's packages, and the working
tree (the Python package, the hook, the payload) is seen at its own path, so
a test always runs the current code. Inside, node-init.sh loads kvm-amd
(nested paging: real stage-2 mappings), tlbbalance.ko built from the working
tree for that kernel, mounts hugetlbfs, installs the libvirt hook and starts
virtlogd and libvirtd; agent.py then runs commands sent over virtio-serial.

Python API (what tests and the demo use)::

    with Node(kernel='6.1') as node:
        res = node.run('virsh list --all')      # Result(rc, stdout, ...)
        node.check('tlbbalance status --json')  # raises on rc != 0
    # leaving the block powers the node off; node.exit_status is its status

CLI::

    tools/node/node.py run [options] -- virsh list     # exit status of CMD
    tools/node/node.py shell [options]                 # commands from stdin
    tools/node/node.py build [options]                 # artifacts only

Only the standard library: it runs under any python3 >= 3.8.
"""

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))    # tools/

from _repo import REPO  # noqa: E402  (the checkout on sys.path)
from kernels import boot  # noqa: E402  (the one boot stack)
from tlbbwait import wait_until  # noqa: E402
CACHE = boot.default_cache()

# Modules the initramfs needs to mount the 9p root with an overlay.
INITRAMFS_MODULES = ('virtio_pci', '9pnet_virtio', '9p', 'overlay')
# ... and with a disk (Node(disk=)): the overlay's upper layer on ext4 on
# a virtio disk (crc32c: ext4's checksums, a soft dependency modules.dep
# does not list).
DISK_MODULES = ('virtio_blk', 'crc32c_generic', 'ext4')
# What the node itself loads with modprobe (node-init.sh, libvirtd, QEMU,
# tlbbalance.ko's dependencies): a module subset (module_subset()) holds
# these and what they need.
NODE_MODULES = INITRAMFS_MODULES + DISK_MODULES + (
    'virtio_console', 'virtio_net', 'kvm_amd', 'configfs', 'tun',
    'vhost_net', 'loop', 'fuse', 'nbd', 'dm_mod')
# The agent answers a command that outlives its limit with timed_out; no
# answer this long after that limit means the node is hung (run()).
GRACE_S = 30
# what the kernel prints for a bug of its own or of a module (the
# agent's own console lines name commands, never these)
KERNEL_BUG = re.compile(r'blocked for more than|BUG:|Oops|Call Trace|'
                        r'WARNING:')
# A node whose kernel reports a CPU stuck this long is wedged (the
# emulator's failure, docs/node.md): looked for every WEDGE_LOOK_S while
# a command waits for its answer.
SOFT_LOCKUP = re.compile(r'soft lockup - CPU#\d+ stuck for (\d+)s!')
WEDGED_S = 120
WEDGE_LOOK_S = 15
# isa-debug-exit statuses set by the initramfs / node-init.sh on failure.
EXIT_INITRAMFS = 120
EXIT_NO_IO = 121


class NodeError(Exception):
    """The node failed to boot, answer or power off; says why."""


class NodeDied(NodeError):
    """The node's QEMU is gone (guest panic, triple fault, emulator
    error): nothing more can run in this node."""


class CommandFailed(NodeError):
    def __init__(self, cmd, result):
        self.result = result
        super().__init__('command failed in the node (rc=%s): %s\n'
                         '--- stdout\n%s--- stderr\n%s'
                         % (result.rc, cmd, result.stdout, result.stderr))


def _exit_meaning(rc):
    if rc is None:
        return ' (still running)'
    if rc & 1:
        status = rc >> 1
        return ' (node exit status %d%s)' % (status, {
            EXIT_INITRAMFS: ': the initramfs failed',
            EXIT_NO_IO: ': node-init.sh could not mount the io share'}.get(
                status, ''))
    return ' (no exit status: panic or QEMU error)'


class Result:
    def __init__(self, reply):
        self.rc = reply.get('rc')
        self.stdout = reply.get('stdout', '')
        self.stderr = reply.get('stderr', '')
        self.secs = reply.get('secs')
        self.timed_out = reply.get('timed_out', False)

    def json(self):
        return json.loads(self.stdout)

    def __repr__(self):
        return 'Result(rc=%r, stdout=%r, stderr=%r)' % (
            self.rc, self.stdout[-200:], self.stderr[-200:])


def log(msg):
    print('node: %s' % msg, file=sys.stderr, flush=True)


def _run(argv, what, **kw):
    p = subprocess.run(argv, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise NodeError('%s failed (rc=%d): %s\n%s%s' % (
            what, p.returncode, ' '.join(map(shlex.quote, argv)),
            p.stdout[-3000:], p.stderr[-3000:]))
    return p.stdout


@contextlib.contextmanager
def _locked(path):
    """An exclusive lock on path + '.lock': several launches (other clones
    of the repo, parallel CI jobs) share the cache."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + '.lock', 'w') as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


# --------------------------------------------------------------- artifacts

class Kernel(boot.Kernel):
    """A kernel from tools/kernels/fetch.sh's cache (tools/kernels/boot)."""

    def __init__(self, line):
        try:
            super().__init__(line)
        except boot.BootError as e:
            raise NodeError(str(e))

    def module_deps(self, names):
        try:
            return super().module_deps(names)
        except boot.BootError as e:
            raise NodeError(str(e))


def build_initramfs(kernel, disk=False):
    """busybox + the 9p/overlay modules (disk: and the virtio disk's and
    ext4's) + initramfs-init.sh, cached."""
    with open(os.path.join(HERE, 'initramfs-init.sh'), 'rb') as f:
        init = f.read()
    mods = kernel.module_deps(INITRAMFS_MODULES +
                              (DISK_MODULES if disk else ()))
    try:
        busybox = kernel.busybox()
    except boot.BootError as e:
        raise NodeError(str(e))
    with open(busybox, 'rb') as f:
        bb = f.read(65536)
    key = hashlib.sha256(init + bb + repr(mods).encode()).hexdigest()[:16]
    path = os.path.join(CACHE, 'node', kernel.abi, 'initramfs-%s.cpio' % key)
    if os.path.exists(path):
        return path
    return boot.write_initramfs(path, boot.initramfs_entries(
        kernel, init, mods))


def module_subset(kernel, dest, names=NODE_MODULES):
    """A /lib/modules/<abi> tree at dest/<abi> with only the modules in
    names and what they need (from the kernel cache), plus the kernel's
    modules.order, modules.builtin* and the modules.* files depmod
    writes for that subset (depmod run here, on this machine, in
    seconds); returns its path.

    Why: the node's root is this machine's over 9p, and in the node a
    depmod over a whole Debian tree (~4000 modules) takes ~2 min under
    TCG; DKMS runs one at each install and each remove. A subset holds
    what the node loads (NODE_MODULES); tests/ansible boots its node with
    one (Node(moddir=); docs/node.md, "Module subsets")."""
    tree = os.path.join(dest, kernel.abi)
    shutil.rmtree(tree, ignore_errors=True)
    os.makedirs(tree)
    for mod in kernel.module_deps(names):
        os.makedirs(os.path.join(tree, os.path.dirname(mod)), exist_ok=True)
        shutil.copy2(os.path.join(kernel.modules, mod),
                     os.path.join(tree, mod))
    for name in ('modules.order', 'modules.builtin',
                 'modules.builtin.modinfo'):
        src = os.path.join(kernel.modules, name)
        if os.path.exists(src):
            shutil.copy2(src, os.path.join(tree, name))
    # depmod -b ROOT expects ROOT/lib/modules/<abi>: a link farm of one
    root = tempfile.mkdtemp(prefix='tlbb-depmod-')
    try:
        os.makedirs(os.path.join(root, 'lib', 'modules'))
        os.symlink(tree, os.path.join(root, 'lib', 'modules', kernel.abi))
        _run(['depmod', '-b', root, kernel.abi], 'depmod of %s' % tree)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return tree


def make_disk(path, size_mib=4096):
    """A sparse raw image with an empty ext4 file system: the node's
    persistent upper layer (Node(disk=))."""
    with open(path, 'wb') as f:
        f.truncate(size_mib << 20)
    _run(['mkfs.ext4', '-q', '-F', '-L', 'tlbb-upper', path],
         'mkfs.ext4 of %s' % path)
    return path


def build_module(kernel):
    """tlbbalance.ko from the working tree for kernel, built as the
    in-kernel tests build it (tools/kernels/boot/module.py: W=1, no
    warning, cached by sources and kernel); its path.

    The sources are copied to a build dir under the cache: the working
    tree is shared and never gets objects.
    """
    # One build dir per working tree (clones in CI share the cache).
    out = os.path.join(CACHE, 'node', kernel.abi, 'module-%s' % (
        hashlib.sha1(REPO.encode()).hexdigest()[:10]))
    t0 = time.monotonic()
    with _locked(out):
        try:
            ko = boot.build_module(kernel, out, cache=CACHE, say=log)
        except boot.BootError as e:
            raise NodeError(str(e))
    log('tlbbalance.ko for %s in %.1f s' % (
        kernel.abi, time.monotonic() - t0))
    return ko


def build_payload():
    """The tiny guest payload (tools/payload), built into the cache, in a
    directory named by its sources' hash: make judges by timestamps, and
    another checkout (older sources, newer objects) would otherwise leave
    its build in place of this one's."""
    src = os.path.join(REPO, 'tools', 'payload')
    h = hashlib.sha256()
    for name in sorted(os.listdir(src)):
        path = os.path.join(src, name)
        if os.path.isfile(path):
            with open(path, 'rb') as f:
                h.update(name.encode() + b'\0' + f.read())
    out = os.path.join(CACHE, 'payload-' + h.hexdigest()[:12])
    with _locked(out):
        _run(['make', '-s', '-C', os.path.join(REPO, 'tools', 'payload'),
              'O=' + out], 'building the payload')
    return os.path.join(out, 'tlbb-payload.elf')


def hook_install_cmd(log_file=None):
    """Shell command run in the node (before libvirtd starts) that installs
    the working tree's libvirt hook with its own installer (docs/hook.md),
    under Debian's python3, logging each phase to a file."""
    if not os.path.exists(os.path.join(REPO, 'libvirt-hooks', 'tlbbalance')):
        return None
    return ('/usr/bin/python3 -m nova_tlbbalance.hook.install '
            '--log-file %s --syslog ""'
            % shlex.quote(log_file or '/var/log/tlbbalance-hook.log'))


# -------------------------------------------------------------------- node

def _die_with_parent():
    """In the child before exec: SIGKILL when the parent exits."""
    import ctypes
    import signal
    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig,
                                            signal.SIGKILL, 0, 0, 0)


class Node:
    """One booted node. Use as a context manager (boots, powers off)."""

    def __init__(self, kernel='6.1', mem_mb=2048, smp=None, libvirt=True,
                 module=True, module_params='allow_inject=1', hook=True,
                 hugepages=0, thp='always', keep=False, boot_timeout=600,
                 ssh_port=None, netns=None, hostname=None, shares=(),
                 libvirt_relay=None, hook_log=None, run_dir=None,
                 own_session=False, disk=None, moddir=None, guestfwd=()):
        self.kernel_line = kernel
        self.mem_mb = mem_mb
        self.smp = smp or int(os.environ.get('TLBB_NODE_SMP', '2'))
        self.libvirt = libvirt
        self.module = module
        self.module_params = module_params
        self.hook = hook
        self.hugepages = hugepages
        self.thp = thp
        self.keep = keep
        self.boot_timeout = boot_timeout
        # ssh_port: a NIC on QEMU's user network, isolated (restrict=on:
        # no route out of the node), its port 22 forwarded to
        # 127.0.0.1:ssh_port of the network namespace netns (None: this
        # machine's loopback), where QEMU is started.
        self.ssh_port = ssh_port
        self.netns = netns
        # guestfwd: ('ADDR:PORT', 'HOST:HPORT') pairs on that user
        # network: the node's TCP connections to ADDR:PORT reach
        # HOST:HPORT as seen from netns, one socat per connection (the
        # only way out of the restricted network, e.g. to an apt archive
        # served on the controller).
        self.guestfwd = list(guestfwd)
        # tools/cloud's kvm host: the node's host name (what libvirt and
        # nova call the hypervisor), writable host directories mounted at
        # their own path in the node with caching off ((host path, node
        # path) pairs), a host unix socket relayed to the node's libvirtd
        # over a virtio-serial port, where the hook logs, and a fixed
        # run dir (console, io share) instead of a temporary one.
        self.hostname = hostname
        self.shares = list(shares)
        self.libvirt_relay = libvirt_relay
        self.hook_log = hook_log
        self.fixed_run_dir = run_dir
        # QEMU in a session of its own, killed when its parent dies: a
        # signal to the launcher's process group (tools/cloud stops its
        # processes that way) must not end the node before poweroff().
        self.own_session = own_session
        # disk: a raw image with an ext4 file system (make_disk()) holding
        # the overlay's upper layer instead of a tmpfs: what the node
        # writes to its root survives a power-off, so a node booted again
        # on the same disk (another kernel, too) is the same machine
        # rebooted (LiveNode.reboot()). libvirt's configuration and
        # domains (/etc/libvirt, /var/lib/libvirt) then persist as well.
        self.disk = disk
        # moddir: None: the kernel cache's /lib/modules/<abi>, bind-mounted
        # at /lib/modules/<abi>; a path: that tree instead (a
        # module_subset()), which on a disk is copied onto the root once
        # (as a kernel package installs its modules) and stays there;
        # '': the node's own /lib/modules/<abi>, already installed on its
        # (persistent) root.
        if moddir == '' and not disk:
            raise ValueError("Node(moddir=''): the node's own /lib/modules "
                             "is on a disk's root; no disk was given")
        self.moddir = moddir
        self.proc = None
        self.sock = None
        self.exit_status = None
        self.timings = {}
        self.ready = None
        self._next_id = 1
        self._buf = b''

    # -- set-up
    def prepare(self):
        t0 = time.monotonic()
        self.kernel = Kernel(self.kernel_line)
        self.initramfs = build_initramfs(self.kernel, disk=bool(self.disk))
        self.ko = build_module(self.kernel) if self.module else ''
        self.hook_cmd = (hook_install_cmd(self.hook_log) or '') \
            if self.hook else ''
        if self.hook and self.libvirt and not self.hook_cmd:
            raise NodeError('no libvirt hook in the working tree '
                            '(libvirt-hooks/): pass hook=False to boot '
                            'without it')
        self.timings['prepare'] = time.monotonic() - t0

    def start(self):
        if not hasattr(self, 'kernel'):
            self.prepare()
        if self.fixed_run_dir:
            self.run_dir = self.fixed_run_dir
            shutil.rmtree(self.run_dir, ignore_errors=True)
            os.makedirs(self.run_dir)
        else:
            self.run_dir = tempfile.mkdtemp(prefix='tlbb-node-')
        self.io_dir = os.path.join(self.run_dir, 'io')
        os.makedirs(self.io_dir)
        self.console = os.path.join(self.run_dir, 'console.log')
        self.qemu_log = os.path.join(self.run_dir, 'qemu.log')
        caps = os.path.join(CACHE, 'node', self.kernel.abi, 'capabilities')
        env = {
            'TLBB_REPO': REPO, 'TLBB_KVER': self.kernel.abi,
            'TLBB_MODDIR': self.kernel.modules if self.moddir is None
            else self.moddir,
            'TLBB_PERSIST': '1' if self.disk else '0',
            'TLBB_KO': self.ko,
            'TLBB_KO_PARAMS': self.module_params if self.ko else '',
            'TLBB_LIBVIRT': '1' if self.libvirt else '0',
            'TLBB_HOOK_CMD': self.hook_cmd, 'TLBB_CAPS_DIR': caps,
            'TLBB_HUGEPAGES': str(self.hugepages), 'TLBB_THP': self.thp,
            'TLBB_NET': '1' if self.ssh_port else '0',
            'TLBB_HOSTNAME': self.hostname or '',
            'TLBB_SHARES': ' '.join('tlbbshare%d:%s' % (i, guest)
                                    for i, (_, guest) in
                                    enumerate(self.shares)),
            'TLBB_LIBVIRT_RELAY': '1' if self.libvirt_relay else '',
        }
        with open(os.path.join(self.io_dir, 'node.env'), 'w') as f:
            for k, v in env.items():
                f.write('%s=%s\n' % (k, shlex.quote(v)))
        sock_path = os.path.join(self.run_dir, 'agent.sock')
        # Multi-threaded TCG (one host thread per vCPU): the node runs a
        # nested KVM guest, QEMU and libvirtd at once, and with
        # thread=single the first nested guest printed nothing in 300 s.
        # The kernel-test harness uses thread=single instead (an orphaned
        # int3 Oops was once seen under MTTCG there); TLBB_NODE_ACCEL
        # overrides this.
        argv = boot.qemu_argv(
            self.kernel, self.initramfs, mem=self.mem_mb, smp=self.smp,
            accel=os.environ.get('TLBB_NODE_ACCEL', 'tcg'),
            append='panic=-1 loglevel=4 %stlbb_repo=%s%s' % (
                os.environ.get('TLBB_NODE_APPEND', '') + ' ', REPO,
                ' tlbb_upper=/dev/vda' if self.disk else ''),
            serial='file:' + self.console, extra=[
                # A triple fault or a guest error ends the node without a
                # word on its console: QEMU's own log says which it was.
                '-d', 'guest_errors,cpu_reset', '-D', self.qemu_log,
                '-virtfs', 'local,path=/,mount_tag=hostroot,'
                           'security_model=none,readonly=on,multidevs=remap',
                '-virtfs', 'local,path=%s,mount_tag=tlbbio,'
                           'security_model=none,multidevs=remap'
                           % self.io_dir,
                '-device', 'virtio-serial-pci',
                '-chardev', 'socket,id=agent,path=%s,server=on,wait=off'
                            % sock_path,
                '-device', 'virtserialport,chardev=agent,name=tlbb.agent',
            ])
        if self.disk:
            # cache=unsafe: a test's disk; the node syncs before its
            # power-off and QEMU's writes reach the file all the same
            argv += ['-drive', 'file=%s,if=none,id=upper,format=raw,'
                     'cache=unsafe' % self.disk,
                     '-device', 'virtio-blk-pci,drive=upper']
        for i, (host_path, _) in enumerate(self.shares):
            argv += ['-virtfs', 'local,path=%s,mount_tag=tlbbshare%d,'
                     'security_model=none,multidevs=remap' % (host_path, i)]
        if self.libvirt_relay:
            # docs/design/platform.md#driving-a-nodes-libvirtd-from-the-host:
            # one long-lived client (nova-compute) per port.
            argv += ['-chardev', 'socket,id=libvirt,path=%s,server=on,'
                     'wait=off' % self.libvirt_relay,
                     '-device', 'virtserialport,chardev=libvirt,'
                     'name=tlbb.libvirt']
        if self.ssh_port:
            netdev = ('user,id=net0,restrict=on,'
                      'hostfwd=tcp:127.0.0.1:%d-:22' % self.ssh_port)
            for guest, host in self.guestfwd:
                netdev += (',guestfwd=tcp:%s-cmd:socat - TCP:%s'
                           % (guest, host))
            argv += ['-netdev', netdev,
                     '-device', 'virtio-net-pci,netdev=net0']
        if self.netns:
            argv = ['ip', 'netns', 'exec', self.netns] + argv
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, start_new_session=self.own_session,
            preexec_fn=_die_with_parent if self.own_session else None)
        try:
            self._connect(sock_path)
            self.ready = self._recv(self.boot_timeout)
        except NodeError:
            self._kill()
            raise
        self.timings['boot'] = time.monotonic() - t0
        if self.ready.get('event') != 'ready':
            self._kill()
            raise NodeError('unexpected first message: %r' % self.ready)
        steps = ', '.join('%s %.1f' % (w, t) for t, w in self.ready['boot'])
        log('ready in %.1f s (kernel %s; uptime %s)' % (
            self.timings['boot'], self.ready['kernel'], steps))
        if self.ready['errors']:
            errors = self.ready['errors']
            self.poweroff()
            raise NodeError('node came up with errors:\n  ' +
                            '\n  '.join(errors))
        return self

    def _connect(self, path):
        def connected():
            sock = socket.socket(socket.AF_UNIX)
            try:
                sock.connect(path)
            except OSError:
                sock.close()
                raise
            return sock

        def qemu_alive():
            if self.proc.poll() is not None:
                raise NodeError('QEMU did not start (rc %s): %s' % (
                    self.proc.returncode,
                    self.proc.stdout.read().decode(errors='replace')))
        try:
            self.sock = wait_until("QEMU's agent socket %s accepts" % path,
                                   connected, 30, 0.05, retry_on=OSError,
                                   on_wait=qemu_alive)
        except TimeoutError as e:
            self.proc.kill()
            raise NodeError('QEMU did not start: %s: %s' % (
                e, self.proc.communicate()[0].decode(errors='replace')))

    def _console_size(self):
        try:
            return os.path.getsize(self.console)
        except OSError:
            return 0

    def console_since(self, since=0):
        """The console's text after offset ``since`` ('' if unreadable)."""
        try:
            with open(self.console, 'rb') as f:
                f.seek(since)
                return f.read().decode(errors='replace')
        except OSError:
            return ''

    def wedged(self, since=0):
        """The kernel's own word that the node is wedged: a soft lockup
        of WEDGED_S or more on its console after offset ``since`` (the
        line, or None). Shorter ones happen when the host starves the
        emulator of CPU, and pass."""
        for m in SOFT_LOCKUP.finditer(self.console_since(since)):
            if int(m.group(1)) >= WEDGED_S:
                return m.group(0)
        return None

    def kernel_bug(self, since=0):
        """The first line after console offset ``since`` where the kernel
        reports a bug (a blocked task, an Oops, a warning; a soft lockup,
        what a starved emulator causes, is not one), or None."""
        for line in self.console_since(since).splitlines():
            if KERNEL_BUG.search(line) and 'soft lockup' not in line:
                return line.strip()
        return None

    def _recv(self, timeout, hung_is_dead=False):
        """The agent's next answer. hung_is_dead: no answer in timeout
        means the node is hung (run(): the agent answers a command that
        outlives its own limit with timed_out, GRACE_S before this
        timeout): QEMU is stopped and NodeDied raised, as for a wedge."""
        deadline = time.monotonic() + timeout
        since = self._console_size()
        look = time.monotonic() + WEDGE_LOOK_S
        while b'\n' not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                tail = self.console_tail()
                # nothing of an answer yet (one still arriving is a slow
                # node, not a hung one)
                if hung_is_dead and not self._buf:
                    self._kill()
                    bug = self.kernel_bug(since)
                    if bug:
                        # the kernel's own word on a bug (a task blocked
                        # in it, an Oops): a failure, not a rerun
                        raise NodeError(
                            'node hung with a kernel report (%s); QEMU '
                            'stopped\n%s' % (bug, tail))
                    raise NodeDied(
                        'node hung: its agent answered nothing in %d s, '
                        'past the command\'s own limit; QEMU stopped\n%s'
                        % (timeout, tail))
                raise NodeError('no answer from the node in %d s\n%s' % (
                    timeout, tail))
            self.sock.settimeout(min(left, 1.0))
            try:
                chunk = self.sock.recv(1 << 20)
            except socket.timeout:
                if self.proc.poll() is not None:
                    raise NodeDied('QEMU exited (rc=%s)\n%s' % (
                        self.proc.returncode, self.console_tail()))
                if time.monotonic() >= look:
                    # a wedged node answers nothing more: stopped here
                    # and reported as dead (a new one is booted, the
                    # test runs once more: docs/node.md)
                    look = time.monotonic() + WEDGE_LOOK_S
                    line = self.wedged(since)
                    if line:
                        tail = self.console_tail()
                        self._kill()
                        raise NodeDied('node wedged (%s); QEMU stopped\n%s'
                                       % (line, tail))
                continue
            if not chunk:
                try:
                    rc = self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    rc = None
                raise NodeDied('agent connection closed, QEMU exit %s%s\n'
                               '%s' % (rc, _exit_meaning(rc),
                                       self.console_tail()))
            self._buf += chunk
        line, self._buf = self._buf.split(b'\n', 1)
        return json.loads(line)

    def _send(self, obj):
        obj['id'] = self._next_id
        self._next_id += 1
        try:
            self.sock.sendall((json.dumps(obj) + '\n').encode())
        except OSError as e:
            # A node that died between two commands: the same NodeDied
            # as one that dies during a command (the session boots a new
            # node and pytest reruns the test), not a broken pipe.
            if self.proc is not None:
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
            if not self.alive():
                raise NodeDied('QEMU exited (rc=%s) before a command '
                               'could be sent (%s)\n%s' % (
                                   self.proc.returncode, e,
                                   self.console_tail())) from e
            raise NodeError('cannot send to the node agent: %s' % e) from e
        return obj['id']

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def console_tail(self, lines=40):
        try:
            with open(self.console, errors='replace') as f:
                text = f.read().splitlines()[-lines:]
        except OSError:
            return '(no console log)'
        return '--- node console (last %d lines)\n%s%s' % (
            lines, '\n'.join(text), self.qemu_events())

    def qemu_events(self, lines=20):
        """QEMU's own word on how the node ended: the lines of its log
        that are not register dumps (a CPU reset at boot is normal; a
        "Triple fault" or a guest error is not)."""
        try:
            with open(self.qemu_log, errors='replace') as f:
                text = [ln for ln in f.read().splitlines()
                        if ln and '=' not in ln]
        except (OSError, AttributeError):
            return ''
        if not text:
            return ''
        return '\n--- QEMU log (%d event lines, last %d)\n%s' % (
            len(text), lines, '\n'.join(text[-lines:]))

    # -- commands
    def run(self, cmd, timeout=300, input='', hung_is_dead=True):
        """Run cmd in the node (a string: through bash; a list: argv).
        hung_is_dead: no answer GRACE_S past timeout stops the node and
        raises NodeDied (False: NodeError, the node left running)."""
        req = {'op': 'run', 'timeout': timeout, 'input': input}
        if isinstance(cmd, str):
            req['sh'] = cmd
        else:
            req['argv'] = list(cmd)
        rid = self._send(req)
        reply = self._recv(timeout + GRACE_S, hung_is_dead=hung_is_dead)
        if reply.get('id') != rid:
            raise NodeError('agent answered %r to request %d'
                            % (reply.get('id'), rid))
        return Result(reply)

    def check(self, cmd, timeout=300, input=''):
        """run(), raising CommandFailed unless rc == 0; returns stdout."""
        res = self.run(cmd, timeout=timeout, input=input)
        if res.rc != 0:
            raise CommandFailed(cmd, res)
        return res.stdout

    def write_file(self, path, text):
        self.check(['/bin/sh', '-c', 'cat > "$1"', 'sh', path], input=text)

    # -- power
    def poweroff(self, status=0, timeout=90):
        """Stop the domains and daemons, power off; returns the status
        QEMU reported (the one given here when all went well)."""
        if self.proc is None or self.proc.poll() is not None:
            return self.exit_status
        t0 = time.monotonic()
        try:
            self._send({'op': 'poweroff', 'status': status})
            self._recv(30)
        except (NodeError, OSError) as e:
            log('power-off request failed: %s' % e)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self._kill()
            raise NodeError('the node did not power off in %d s\n%s'
                            % (timeout, self.console_tail()))
        self.timings['poweroff'] = time.monotonic() - t0
        self._save_capabilities()
        if rc & 1:
            self.exit_status = rc >> 1
        else:
            raise NodeDied('QEMU exited with %d without an exit status '
                           '(panic or crash?)\n%s' % (
                                rc, self.console_tail()))
        if not self.keep:
            shutil.rmtree(self.run_dir, ignore_errors=True)
        return self.exit_status

    def _save_capabilities(self):
        got = os.path.join(self.io_dir, 'capabilities')
        dest = os.path.join(CACHE, 'node', self.kernel.abi, 'capabilities')
        if os.path.isdir(got) and os.listdir(got) and \
                not os.path.isdir(dest):
            tmp = '%s.tmp.%d' % (dest, os.getpid())
            shutil.copytree(got, tmp)
            try:
                os.rename(tmp, dest)
                log('libvirt capability cache saved in %s' % dest)
            except OSError:     # another launch saved it first
                shutil.rmtree(tmp, ignore_errors=True)

    def _kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.sock:
            self.sock.close()
        log('node killed; run dir kept: %s' % self.run_dir)

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        if self.proc is not None and self.proc.poll() is None:
            self.poweroff(0 if exc_type is None else 1)
        return False


# --------------------------------------------------------------------- CLI

def _node_from_args(args):
    return Node(kernel=args.kernel, mem_mb=args.mem, smp=args.smp,
                libvirt=not args.no_libvirt, module=not args.no_module,
                module_params=args.module_params, hook=not args.no_hook,
                hugepages=args.hugepages, thp=args.thp, keep=args.keep)


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='node.py', description='A compute node in a box: a Debian '
        'kernel under QEMU TCG with real KVM, libvirtd, the hook and '
        'tlbbalance.ko from the working tree.')
    parser.add_argument('--kernel', default='6.1', choices=('6.1', '6.12'))
    parser.add_argument('--mem', type=int, default=2048, metavar='MIB')
    parser.add_argument('--smp', type=int, default=None,
                        help='vCPUs (default: $TLBB_NODE_SMP or 2)')
    parser.add_argument('--no-libvirt', action='store_true')
    parser.add_argument('--no-module', action='store_true',
                        help='do not build nor load tlbbalance.ko')
    parser.add_argument('--no-hook', action='store_true')
    parser.add_argument('--module-params', default='allow_inject=1')
    parser.add_argument('--hugepages', type=int, default=0,
                        help='2 MiB pages to reserve in the node')
    parser.add_argument('--thp', default='always',
                        choices=('always', 'madvise', 'never'))
    parser.add_argument('--keep', action='store_true',
                        help='keep the run dir (console log) afterwards')
    sub = parser.add_subparsers(dest='action', required=True)
    p_run = sub.add_parser('run', help='boot, run one command, power off '
                           'with its exit status')
    p_run.add_argument('cmd', nargs=argparse.REMAINDER)
    sub.add_parser('shell', help='boot, run each line of stdin')
    sub.add_parser('build', help='fetch the kernel, build the initramfs, '
                   'module and payload; do not boot')
    args = parser.parse_args(argv)

    node = _node_from_args(args)
    try:
        node.prepare()
        if args.action == 'build':
            print('kernel   %s\ninitramfs %s\nmodule   %s\npayload  %s' % (
                node.kernel.dir, node.initramfs, node.ko or '-',
                build_payload()))
            return 0
        node.start()
        status = 0
        if args.action == 'run':
            cmd = args.cmd[1:] if args.cmd[:1] == ['--'] else args.cmd
            if not cmd:
                parser.error('run: no command')
            res = node.run(cmd[0] if len(cmd) == 1 else cmd, timeout=3600)
            sys.stdout.write(res.stdout)
            sys.stderr.write(res.stderr)
            status = res.rc if 0 <= res.rc < 128 else 127
        else:
            for line in sys.stdin:
                if not line.strip():
                    continue
                res = node.run(line.strip(), timeout=3600)
                sys.stdout.write(res.stdout)
                sys.stderr.write(res.stderr)
                print('[rc=%d %.2fs]' % (res.rc, res.secs), flush=True)
                status = res.rc if 0 <= res.rc < 128 else 127
        got = node.poweroff(status)
        log('powered off in %.1f s, exit status %s' % (
            node.timings['poweroff'], got))
        return got
    except NodeError as e:
        log('error: %s' % e)
        return 125


if __name__ == '__main__':
    sys.exit(main())
