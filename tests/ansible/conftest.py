# SPDX-License-Identifier: Apache-2.0
"""The rollout session: three namespace hosts and one kernel node, all
reached over SSH from a controller namespace (tests/ansible/fleet.py).
Nothing is mocked and nothing skips; every process started is stopped by
pid at the end, also after a failure."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, 'tools', 'node'))
sys.path.insert(0, HERE)

import fleet as fleetlib  # noqa: E402
import live  # noqa: E402
import node as nodelib  # noqa: E402

LOG_DIR = os.path.join(REPO, 'out', 'test-logs')
SESSION = {}


@pytest.fixture(scope='session')
def fleet():
    f = fleetlib.Fleet()
    kernel = nodelib.Kernel(os.environ.get('TLBB_E2E_KERNEL', '6.1'))
    # The node's kernel modules are a subset (tools/node/node.py
    # module_subset: what the node loads and what that needs): every
    # depmod DKMS runs in the node (one per install and per remove) then
    # reads a few dozen modules, not ~4000 over 9p (~2 min each).
    node = live.LiveNode(LOG_DIR, 'ansible-node', kernel=kernel.line,
                         hook=False, module=False, ssh_port=f.node_port,
                         netns=f.ctl, moddir=nodelib.module_subset(
                             kernel, os.path.join(f.dir, 'modules')),
                         # the apt archive of test_rollout_deb.py, the
                         # node's only way out of its network
                         guestfwd=[(fleetlib.ARCHIVE_ADDR, '127.0.0.1:%d'
                                    % f.archive_port)])
    SESSION['fleet'] = f
    ok = False
    try:
        f.start_network()
        f.start_hosts()
        node.boot()
        # The node's kernel headers, as linux-headers-<abi> installs them
        # (the kernel cache holds them; the role's DKMS build uses them).
        node.check('ln -sfn %s /lib/modules/%s/build'
                   % (node.kernel.headers, node.kernel.abi))
        f.start_node_sshd(node)
        yield f
        ok = True
    finally:
        errors = []
        if node.current is not None:
            try:
                status = node.poweroff()
                if status != 0:
                    errors.append('node powered off with status %s'
                                  % status)
            except Exception as e:      # noqa: BLE001 - reported below
                errors.append('node power-off: %s' % e)
        errors += f.stop()
        # The run dir (the hosts' roots, the module sources, the play
        # logs) goes whatever happened: a failed run on a shared machine
        # must not leave hundreds of MB in /tmp. A failure's evidence is
        # in the test's output (the play's tail) and the node's logs in
        # out/test-logs; TLBB_KEEP_RUN_DIR=1 keeps the dir for a look.
        if os.environ.get('TLBB_KEEP_RUN_DIR') == '1' and \
                (not ok or errors or SESSION.get('failed')):
            print('fleet run dir kept (TLBB_KEEP_RUN_DIR=1): %s' % f.dir)
        else:
            f.cleanup_dir()
        assert not errors, errors


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    rep = (yield).get_result()
    if rep.failed:
        SESSION['failed'] = True     # TLBB_KEEP_RUN_DIR=1 keeps the dir


def pytest_terminal_summary(terminalreporter):
    f = SESSION.get('fleet')
    if not f or not f.runs:
        return
    terminalreporter.write_sep('-', 'ansible-playbook runs (play recaps, '
                               'whole-run and per-host wall times)')
    for name, run in zip(f.run_names, f.runs):
        terminalreporter.write_line(run.summary(name))
        for line in run.out.splitlines():
            if line.startswith('FLEET-SLOW '):
                terminalreporter.write_line('  ' + line)
