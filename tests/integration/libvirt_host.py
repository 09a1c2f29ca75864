"""A real virtlogd + libvirtd on this host, started and stopped by hand.

platform.md: no systemd here; hooks are only seen if present when libvirtd
starts; hugetlbfs must be mounted (and the pool sized) before it starts;
the first capability probe takes ~12 s. Used by tests/integration and by
the benchmarks in tools/bench (run as root).
"""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time

HOOK_DEST = '/etc/libvirt/hooks/qemu.d/tlbbalance'
URI = 'qemu:///system'
SOCK = '/run/libvirt/libvirt-sock'
HUGETLBFS = '/dev/hugepages'


def _alive(pid):
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().split(') ', 1)[1][0] != 'Z'
    except OSError:
        return False


def _sock_answers(path=SOCK):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


class LibvirtHost:
    """Start/stop the daemons; install/remove the hook around them."""

    def __init__(self, workdir, hook=True, hook_settings=None,
                 hugepages=0, python=None):
        self.workdir = workdir
        self.hook = hook
        self.hook_settings = dict(hook_settings or {})
        self.hugepages = hugepages
        self.python = python or sys.executable
        self.pids = {}
        self.defined = []
        self._mounted = False
        self._old_nr = None
        self.start_seconds = None

    # -- daemons -------------------------------------------------------------

    def start(self):
        if os.geteuid() != 0:
            raise RuntimeError('the integration tests run a real libvirtd '
                               'and must run as root')
        if _sock_answers():
            raise RuntimeError('a libvirtd already answers on %s: stop it '
                               'first (these tests start their own)' % SOCK)
        os.makedirs(self.workdir, exist_ok=True)
        if self.hugepages:
            self._setup_hugepages()
        if self.hook:
            from nova_tlbbalance.hook import install
            install.install(HOOK_DEST, self.python, self.hook_settings)
        elif os.path.exists(HOOK_DEST):
            os.unlink(HOOK_DEST)
        t0 = time.monotonic()
        for name in ('virtlogd', 'libvirtd'):
            pidfile = os.path.join(self.workdir, name + '.pid')
            if os.path.exists(pidfile):
                os.unlink(pidfile)
            subprocess.run([name, '-d', '-p', pidfile], check=True)
            for _ in range(100):
                if os.path.exists(pidfile) and \
                        open(pidfile).read().strip():
                    break
                time.sleep(0.05)
            self.pids[name] = int(open(pidfile).read())
        # the first call waits for the QEMU capability probe
        self.virsh('version', timeout=120)
        self.start_seconds = time.monotonic() - t0
        return self

    def restart_libvirtd(self):
        """Stop and start libvirtd only (running domains stay up); it
        reconnects to them and runs the hook's `reconnect` phase."""
        pid = self.pids.pop('libvirtd')
        os.kill(pid, signal.SIGTERM)
        for _ in range(300):
            if not _alive(pid) and not _sock_answers():
                break
            time.sleep(0.1)
        pidfile = os.path.join(self.workdir, 'libvirtd.pid')
        with contextlib.suppress(FileNotFoundError):
            os.unlink(pidfile)
        subprocess.run(['libvirtd', '-d', '-p', pidfile], check=True)
        for _ in range(100):
            if os.path.exists(pidfile) and open(pidfile).read().strip():
                break
            time.sleep(0.05)
        self.pids['libvirtd'] = int(open(pidfile).read())
        self.virsh('version', timeout=120)

    def stop(self):
        if self.defined and self.pids:
            # one virsh process for all: each connection costs ~0.5 s here
            self.virsh(' ; '.join('destroy %s ; undefine %s' % (n, n)
                                  for n in self.defined),
                       check=False, timeout=600)
        self.defined = []
        for name in ('libvirtd', 'virtlogd'):
            pid = self.pids.pop(name, None)
            if pid is None:
                continue
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
            for _ in range(100):
                if not _alive(pid):
                    break
                time.sleep(0.1)
            else:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
        if self.hook and os.path.exists(HOOK_DEST):
            os.unlink(HOOK_DEST)
        self._teardown_hugepages()

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()

    # -- hugetlbfs -----------------------------------------------------------

    def _setup_hugepages(self):
        if not os.path.ismount(HUGETLBFS):
            os.makedirs(HUGETLBFS, exist_ok=True)
            subprocess.run(['mount', '-t', 'hugetlbfs', 'hugetlbfs',
                            HUGETLBFS], check=True)
            self._mounted = True
        with open('/proc/sys/vm/nr_hugepages') as f:
            self._old_nr = int(f.read())
        with open('/proc/sys/vm/nr_hugepages', 'w') as f:
            f.write(str(self.hugepages))

    def _teardown_hugepages(self):
        if self._old_nr is not None:
            with open('/proc/sys/vm/nr_hugepages', 'w') as f:
                f.write(str(self._old_nr))
            self._old_nr = None
        if self._mounted:
            subprocess.run(['umount', HUGETLBFS], check=False)
            self._mounted = False

    # -- domains -------------------------------------------------------------

    def virsh(self, *args, check=True, timeout=60):
        """One virsh process; a single argument may hold several commands
        separated by ' ; ' (virsh runs them in order)."""
        p = subprocess.run(['virsh', '-q', '-c', URI] + list(args),
                           capture_output=True, text=True, timeout=timeout)
        if check and p.returncode:
            raise RuntimeError('virsh %s failed (%d): %s'
                               % (' '.join(args), p.returncode,
                                  p.stderr.strip()))
        return p

    def define(self, xml, name, start_paused=False):
        path = os.path.join(self.workdir, name + '.xml')
        with open(path, 'w') as f:
            f.write(xml)
        cmd = 'define %s' % path
        if start_paused:
            cmd += ' ; start --paused %s' % name
        self.defined.append(name)
        self.virsh(cmd)

    def start_domain(self, name, check=True):
        t0 = time.monotonic()
        p = self.virsh('start', name, check=check)
        return time.monotonic() - t0, p

    def destroy(self, name):
        self.virsh('destroy', name, check=False)


def plain_domain(name, memory_mib=256, vcpus=2, pins=None, cells=None,
                 machine='pc'):
    """A tiny TCG domain: no disk, nothing bootable (SeaBIOS keeps retrying
    while QEMU holds the guest RAM). ``pins``: vcpu -> cpuset string;
    ``cells``: [MiB per guest NUMA cell]."""
    pin = ''.join("<vcpupin vcpu='%d' cpuset='%s'/>" % (v, c)
                  for v, c in sorted((pins or {}).items()))
    numa = ''
    if cells:
        per = max(1, vcpus // len(cells))
        numa = '<cpu><numa>%s</numa></cpu>' % ''.join(
            "<cell id='%d' cpus='%d-%d' memory='%d' unit='MiB'/>"
            % (i, i * per, min(vcpus, (i + 1) * per) - 1, m)
            for i, m in enumerate(cells))
    return ("""<domain type='qemu'>
  <name>%s</name>
  <memory unit='MiB'>%d</memory>
  <vcpu placement='static'>%d</vcpu>
  %s
  %s
  <os><type arch='x86_64' machine='%s'>hvm</type><boot dev='network'/></os>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <console type='pty'/>
  </devices>
</domain>
""" % (name, sum(cells) if cells else memory_mib, vcpus,
       '<cputune>%s</cputune>' % pin if pin else '', numa, machine))
