"""The e2e session: one compute node in a box for all tests.

The node (tools/node/node.py) boots a Debian kernel under QEMU TCG with real
KVM inside, tlbbalance.ko built from this working tree, the hook installed
and libvirtd running; every test acts inside it. Needs root, QEMU, libvirt
and the Debian packages of tools/ci/system-packages.txt (nothing here is
mocked: without them the session fails, it does not skip).

Environment: TLBB_E2E_KERNEL (6.1 or 6.12, default 6.1).
"""

import os
import shutil
import subprocess
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, 'tools', 'node'))

import node as nodelib  # noqa: E402

KERNEL = os.environ.get('TLBB_E2E_KERNEL', '6.1')
TIMINGS = {}
_T0 = time.monotonic()


@pytest.fixture(scope='session')
def node():
    n = nodelib.Node(kernel=KERNEL)
    t0 = time.monotonic()
    n.prepare()
    n.start()
    TIMINGS['node prepare (kernel, initramfs, module build)'] = \
        n.timings['prepare']
    TIMINGS['node boot to ready'] = n.timings['boot']
    TIMINGS['node start-up in all'] = time.monotonic() - t0
    yield n
    try:
        status = n.poweroff()
    finally:
        _keep_node_logs(n)
    TIMINGS['node power-off'] = n.timings.get('poweroff', 0)
    assert status == 0, 'the node powered off with status %s' % status


def _keep_node_logs(n):
    """Copy the node's console and QEMU log next to the test logs, so a
    node that died mid-session can be read after CI."""
    out = os.path.join(REPO, 'out', 'test-logs')
    os.makedirs(out, exist_ok=True)
    for src, name in ((n.console, 'e2e-node-console.log'),
                      (n.qemu_log, 'e2e-node-qemu.log')):
        try:
            shutil.copyfile(src, os.path.join(out, name))
        except OSError:
            pass


@pytest.fixture(scope='session')
def payload():
    return nodelib.build_payload()


@pytest.fixture(scope='session')
def misalign_so():
    """The LD_PRELOAD shim that places guest RAM at a chosen HVA offset."""
    out = os.path.join(nodelib.CACHE, 'misalign')
    os.makedirs(out, exist_ok=True)
    so = os.path.join(out, 'misalign.so')
    subprocess.run(['gcc', '-shared', '-fPIC', '-O2', '-Wall', '-Wextra',
                    '-Werror', '-o', so,
                    os.path.join(os.path.dirname(__file__), 'misalign',
                                 'misalign.c')], check=True)
    return so


def pytest_terminal_summary(terminalreporter):
    TIMINGS['e2e in all'] = time.monotonic() - _T0
    terminalreporter.write_sep('-', 'e2e timings (kernel %s)' % KERNEL)
    for what, secs in TIMINGS.items():
        terminalreporter.write_line('%-50s %7.1f s' % (what, secs))
