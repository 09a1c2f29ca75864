# SPDX-License-Identifier: Apache-2.0
"""The kernel-upgrade session: one compute node in a box on a disk.

The node (tools/node/node.py, docs/node.md "A node on a disk") boots
Debian's 6.1 under QEMU TCG with real KVM inside, libvirtd and the
working tree's hook; the overlay's upper layer is an ext4 file system on
a virtio disk, so the node can be rebooted into another kernel as the
same machine. tlbbalance-dkms (make deb of this tree) is installed in it
by the tests, as an operator installs it. Needs root, QEMU, libvirt and
the Debian packages of tools/ci/system-packages.txt (nothing here is
mocked: without them the session fails, it does not skip).

The run directory (the disk image, the .deb) is removed at the end
whatever happened (one a killed session left: at the start); the node's
console and QEMU logs of a failed run are kept in out/test-logs
(tools/node/live.py).
"""

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, 'tools', 'node'))

import live  # noqa: E402
import node as nodelib  # noqa: E402

LOG_DIR = os.path.join(REPO, 'out', 'test-logs')
# the kernel the node runs first and the one it is upgraded to
KERNEL = '6.1'
NEXT_KERNEL = '6.12'
# the package upgrade's version: the tree's changelog version + this
NEXT_SUFFIX = '+test1'
TIMINGS = {}
SESSION = {}
_T0 = time.monotonic()


@pytest.fixture(scope='session')
def run_dir():
    """Under out/ (the node sees this machine's root over 9p, not its
    private /tmp); removed at the end, passed or not."""
    out = os.path.join(REPO, 'out')
    os.makedirs(out, exist_ok=True)
    # a session killed by CI's limit (SIGTERM: no finalizer runs) left
    # its run dir, the disk image in it: gone before this one starts
    for old in glob.glob(os.path.join(out, 'kernel-upgrade-*')):
        shutil.rmtree(old, ignore_errors=True)
    d = tempfile.mkdtemp(prefix='kernel-upgrade-', dir=out)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def make_deb(out, *version):
    """tlbbalance-dkms of this tree built by make deb's script into out
    (version: its optional +SUFFIX or VERSION argument); the .deb's path,
    the build's time in the session's timings."""
    t0 = time.monotonic()
    p = subprocess.run([os.path.join(REPO, 'tools', 'deb', 'build.sh'),
                        out] + list(version), capture_output=True,
                       text=True, timeout=1200)
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    debs = [f for f in os.listdir(out) if f.startswith('tlbbalance-dkms_')
            and f.endswith('_all.deb')]
    assert len(debs) == 1, os.listdir(out)
    TIMINGS[' '.join(['make deb'] + list(version) + ['(host)'])] = \
        time.monotonic() - t0
    return os.path.join(out, debs[0])


@pytest.fixture(scope='session')
def deb(run_dir):
    """tlbbalance-dkms of this tree (make deb's script), built before the
    node boots so that the node's 9p view of out/ has it."""
    return make_deb(os.path.join(run_dir, 'deb'))


@pytest.fixture(scope='session')
def deb_next(run_dir, deb):
    """The same tree as the next version (make deb's +SUFFIX: the
    changelog's version +test1, the module's version with it), for the
    package upgrade under the running VMs."""
    path = make_deb(os.path.join(run_dir, 'deb-next'), NEXT_SUFFIX)
    assert NEXT_SUFFIX in os.path.basename(path), path
    return path


@pytest.fixture(scope='session')
def node(run_dir, deb, deb_next):
    disk = nodelib.make_disk(os.path.join(run_dir, 'disk.img'))
    kernel = nodelib.Kernel(KERNEL)
    n = live.LiveNode(LOG_DIR, 'kernel-upgrade-node', kernel=KERNEL,
                      module=False, disk=disk,
                      moddir=nodelib.module_subset(
                          kernel, os.path.join(run_dir, 'modules')))
    SESSION['node'] = n
    secs, _ = n.boot()
    TIMINGS['node start-up (%s)' % KERNEL] = secs
    try:
        yield n
    finally:
        status = n.poweroff()
    assert status == 0, 'the node powered off with status %s' % status


@pytest.fixture(scope='session')
def kernels():
    """(the kernel line the node boots first, the one it is upgraded
    to)"""
    return KERNEL, NEXT_KERNEL


@pytest.fixture(scope='session')
def timings():
    """{what: seconds}, printed at the session's end."""
    return TIMINGS


@pytest.fixture(autouse=True)
def _node_alive(request):
    """Before each test that uses the node: boot it again if it died
    (an emulator failure, docs/node.md "When the emulator fails"; the
    test that saw it runs once more, tox.ini). On its disk, so what the
    tests did before is there: the same machine after a crash."""
    if 'node' in request.fixturenames and SESSION.get('node'):
        SESSION['node'].revive()


def pytest_terminal_summary(terminalreporter):
    if SESSION.get('node'):
        SESSION['node'].report(terminalreporter)
    TIMINGS['kernel-upgrade in all'] = time.monotonic() - _T0
    terminalreporter.write_sep('-', 'kernel-upgrade timings')
    for what, secs in TIMINGS.items():
        terminalreporter.write_line('%-60s %7.1f s' % (what, secs))
