# SPDX-License-Identifier: Apache-2.0
"""The e2e session: one compute node in a box for all tests.

The node (tools/node/node.py) boots a Debian kernel under QEMU TCG with real
KVM inside, tlbbalance.ko built from this working tree, the hook installed
and libvirtd running; every test acts inside it. Needs root, QEMU, libvirt
and the Debian packages of tools/ci/system-packages.txt (nothing here is
mocked: without them the session fails, it does not skip).

Environment: TLBB_E2E_KERNEL (6.1 or 6.12, default 6.1).
"""

import os
import subprocess
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, 'tools', 'node'))

import live  # noqa: E402
import node as nodelib  # noqa: E402

KERNEL = os.environ.get('TLBB_E2E_KERNEL', '6.1')
TIMINGS = {}
_T0 = time.monotonic()


LIVE = live.LiveNode(os.path.join(REPO, 'out', 'test-logs'), 'e2e-node',
                     kernel=KERNEL)


@pytest.fixture(scope='session')
def node():
    secs, n = LIVE.boot()
    TIMINGS['node prepare (kernel, initramfs, module build)'] = \
        n.timings['prepare']
    TIMINGS['node boot to ready'] = n.timings['boot']
    TIMINGS['node start-up in all'] = secs
    yield LIVE
    status = LIVE.poweroff()
    TIMINGS['node power-off'] = LIVE.current.timings.get('poweroff', 0)
    assert status == 0, 'the node powered off with status %s' % status


@pytest.fixture(autouse=True)
def _node_alive(request):
    """Before each test that uses the node (directly or through another
    fixture: fixturenames is the whole closure): boot a new one if it
    died."""
    if 'node' in request.fixturenames:
        LIVE.revive()


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
    LIVE.report(terminalreporter)
    terminalreporter.write_sep('-', 'e2e timings (kernel %s)' % KERNEL)
    for what, secs in TIMINGS.items():
        terminalreporter.write_line('%-50s %7.1f s' % (what, secs))
