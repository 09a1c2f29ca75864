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


class LiveNode:
    """The session's node. If its QEMU dies (a guest panic, a triple
    fault, an emulator error), the next test boots a fresh one: the crash
    is recorded (console and QEMU log in out/test-logs, a line in the
    summary) and the test that saw it is rerun once (--reruns 1
    --only-rerun NodeDied in tox.ini), so one emulator crash costs a
    reboot, not the rest of the session, and a second one fails."""

    def __init__(self):
        self.current = None
        self.crashes = []

    def boot(self):
        """Boot a node; a boot that hangs or dies (seen under multi-threaded
        TCG: both vCPUs in soft lockup before the agent starts) is
        recorded and tried again, BOOT_ATTEMPTS in all."""
        t0 = time.monotonic()
        for attempt in range(1, BOOT_ATTEMPTS + 1):
            n = nodelib.Node(kernel=KERNEL, boot_timeout=BOOT_TIMEOUT)
            n.prepare()
            try:
                n.start()
                break
            except nodelib.NodeError as e:
                logs = _keep_node_logs(n, 'e2e-node-boot%d' % attempt)
                self.crashes.append('boot attempt %d failed: %s; logs: %s'
                                    % (attempt, str(e).splitlines()[0],
                                       ', '.join(logs)))
                if attempt == BOOT_ATTEMPTS:
                    raise
        self.current = n
        return time.monotonic() - t0, n

    def revive(self):
        if self.current is None or self.current.alive():
            return
        dead = self.current
        k = len(self.crashes) + 1
        logs = _keep_node_logs(dead, 'e2e-node-crash%d' % k)
        self.crashes.append('node crash %d: QEMU exit %s; %s; logs: %s' % (
            k, dead.proc.returncode,
            dead.qemu_events().strip().replace('\n', ' | ')[-300:]
            or 'QEMU logged no event', ', '.join(logs)))
        self.boot()

    def __getattr__(self, name):
        return getattr(self.current, name)


# A boot reaches "ready" in 15-60 s; a hung one is given up after this.
BOOT_TIMEOUT = 240
BOOT_ATTEMPTS = 3
LIVE = LiveNode()


@pytest.fixture(scope='session')
def node():
    secs, n = LIVE.boot()
    TIMINGS['node prepare (kernel, initramfs, module build)'] = \
        n.timings['prepare']
    TIMINGS['node boot to ready'] = n.timings['boot']
    TIMINGS['node start-up in all'] = secs
    yield LIVE
    n = LIVE.current
    try:
        status = n.poweroff()
    finally:
        if n.exit_status != 0:
            _keep_node_logs(n, 'e2e-node')
    TIMINGS['node power-off'] = n.timings.get('poweroff', 0)
    assert status == 0, 'the node powered off with status %s' % status


@pytest.fixture(autouse=True)
def _node_alive(request):
    """Before each test that uses the node: boot a new one if it died."""
    if 'node' in request.fixturenames or 'balanced_vm' in \
            request.fixturenames:
        LIVE.revive()


def _keep_node_logs(n, prefix):
    """Copy the node's console and QEMU log next to the test logs, so a
    node that died mid-session can be read after CI."""
    out = os.path.join(REPO, 'out', 'test-logs')
    os.makedirs(out, exist_ok=True)
    kept = []
    for src, name in ((n.console, prefix + '-console.log'),
                      (n.qemu_log, prefix + '-qemu.log')):
        try:
            shutil.copyfile(src, os.path.join(out, name))
            kept.append(os.path.join('out', 'test-logs', name))
        except OSError:
            pass
    return kept


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
    if LIVE.crashes:
        terminalreporter.write_sep('-', 'node crashes and failed boots (a '
                                   'test that saw a crash was rerun on a '
                                   'new node)')
        for line in LIVE.crashes:
            terminalreporter.write_line(line)
    terminalreporter.write_sep('-', 'e2e timings (kernel %s)' % KERNEL)
    for what, secs in TIMINGS.items():
        terminalreporter.write_line('%-50s %7.1f s' % (what, secs))
