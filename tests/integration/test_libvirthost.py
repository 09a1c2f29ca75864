# SPDX-License-Identifier: Apache-2.0
"""tools/libvirthost.py: a libvirtd of its own that leaves the host alone.

Each test starts a second LibvirtHost beside the session's (two libvirtds
side by side, each in its own mount namespace), breaks it or makes its
start fail, and checks that stop() leaves nothing: no process, no mount,
no file outside its workdir, vm.nr_hugepages as found, and the host's own
/etc/libvirt (an installed tlbbalance hook included) untouched.
"""

import contextlib
import os
import signal
import subprocess
import sys

import pytest

from tlbbwait import wait_until

from .conftest import libvirthost, new_host

HOST_HOOK = '/etc/libvirt/hooks/qemu.d/tlbbalance'
SENTINEL = '#!/bin/sh\n# sentinel of tests/integration/test_libvirthost\n'


def tree(top):
    """Every path under ``top`` with its mtime and size (or None)."""
    out = {}
    for d, dirs, files in os.walk(top):
        for n in dirs + files:
            p = os.path.join(d, n)
            with contextlib.suppress(OSError):
                st = os.lstat(p)
                out[p] = (st.st_mtime_ns, st.st_size)
    return out


def nr_hugepages():
    with open(libvirthost.NR_HUGEPAGES) as f:
        return int(f.read())


@pytest.fixture
def host_hook():
    """An installed host hook: the real one if there is one (read only),
    else a sentinel made here and removed after (with the directories
    made for it)."""
    made = []
    d = os.path.dirname(HOST_HOOK)
    if not os.path.lexists(HOST_HOOK):
        for p in (os.path.dirname(d), d):
            if not os.path.isdir(p):
                os.mkdir(p)
                made.append(p)
        with open(HOST_HOOK, 'x') as f:
            f.write(SENTINEL)
        made.append(HOST_HOOK)
    with open(HOST_HOOK, 'rb') as f:
        before = f.read()
    yield before
    for p in reversed(made):
        if p == HOST_HOOK:
            os.unlink(p)
        else:
            os.rmdir(p)


@pytest.fixture
def snapshot():
    """What the host looks like before; check() compares after."""
    before = {'etc': tree('/etc/libvirt'),
              'run': os.path.lexists('/run/libvirt'),
              'nr': nr_hugepages()}

    def check(h, pids):
        assert not [p for p in pids if libvirthost._alive(p)], pids
        assert h.holder is None and h.in_namespace() == []
        with open('/proc/self/mountinfo') as f:
            mounts = [ln for ln in f if h.workdir in ln]
        assert mounts == []
        assert tree('/etc/libvirt') == before['etc']
        assert os.path.lexists('/run/libvirt') == before['run']
        assert nr_hugepages() == before['nr']
    return check


def test_stop_after_libvirtd_killed(host, host_hook, snapshot, tmp_path):
    """Second libvirtd with the hook, a domain, a spawned process group
    that ignores SIGTERM; libvirtd then dies by SIGKILL; stop() cleans."""
    h = new_host(tmp_path / 'lv', hook=True,
                 hugepages=2,
                 hook_settings={'syslog': ''})
    h.term_wait = 3
    pids = []
    try:
        h.start()
        print('\nsecond libvirtd ready in %.1f s' % h.start_seconds)
        assert h.in_namespace()
        # the hook is in the private /etc/libvirt; the host's is as found
        assert os.path.isfile(h.hook_path)
        with open(HOST_HOOK, 'rb') as f:
            assert f.read() == host_hook
        h.define(libvirthost.plain_domain('tlbbit-ns', memory_mib=32),
                 'tlbbit-ns')
        h.start_domain('tlbbit-ns')
        with open(h.path('/run/libvirt/qemu/tlbbit-ns.pid')) as f:
            qemu = int(f.read())
        pids += [qemu, h.pids['libvirtd'], h.pids['virtlogd'],
                 h.holder.pid]
        # the URI works from the host's namespace: virsh and libvirt-python
        assert 'tlbbit-ns' in h.virsh('list', '--name').stdout
        py = subprocess.run(
            [sys.executable, '-c', 'import libvirt, sys; '
             'c = libvirt.open(sys.argv[1]); '
             'print(" ".join(d.name() for d in c.listAllDomains()))',
             h.uri], capture_output=True, text=True, timeout=60)
        assert py.stdout.split() == ['tlbbit-ns'], py.stderr
        # each libvirtd sees only its own domains
        assert 'tlbbit-ns' not in host.virsh('list', '--all').stdout
        # a process group inside that shrugs off SIGTERM
        p = h.spawn('stubborn', ['sh', '-c', 'trap "" TERM; sleep 600 & '
                                 'echo $!; wait'],
                    str(tmp_path / 'stubborn.log'))
        child = wait_until('the stubborn group printed its child pid',
                           (tmp_path / 'stubborn.log').read_text, 30, 0.05,
                           error=AssertionError).strip()
        pids += [p.pid, int(child)]
        assert libvirthost._mnt_ns(p.pid) == h.ns
        os.kill(h.pids['libvirtd'], signal.SIGKILL)
    finally:
        h.stop()
    snapshot(h, pids)
    # the session's libvirtd never noticed
    assert host.virsh('version').returncode == 0


def test_stop_after_failed_start(host_hook, snapshot, tmp_path,
                                 monkeypatch):
    """start() fails after virtlogd runs: it stops what it started."""
    real = libvirthost.LibvirtHost._start_daemon
    pids = []

    def fail_libvirtd(self, name):
        if name == 'libvirtd':
            pids.extend([self.pids['virtlogd'], self.holder.pid])
            raise RuntimeError('injected failure before libvirtd')
        real(self, name)

    monkeypatch.setattr(libvirthost.LibvirtHost, '_start_daemon',
                        fail_libvirtd)
    h = new_host(tmp_path / 'lv', hook=True,
                 hugepages=2)
    with pytest.raises(RuntimeError, match='injected failure'):
        with h:
            pass
    assert len(pids) == 2
    snapshot(h, pids)
    with open(HOST_HOOK, 'rb') as f:
        assert f.read() == host_hook
