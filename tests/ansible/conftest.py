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
    # The node is a machine with a disk (the overlay's upper layer on
    # it): test_rollout_deb.py's d2 installs another kernel in it and
    # reboots it. Its kernel's modules are a subset (tools/node/node.py
    # module_subset: what the node loads and what that needs), installed
    # on that disk at the first boot as a kernel package would: every
    # depmod DKMS runs in the node (one per install and per remove) then
    # reads a few dozen modules, not ~4000 over 9p (~2 min each).
    disk = nodelib.make_disk(os.path.join(f.dir, 'qnode-disk.img'))
    node = live.LiveNode(LOG_DIR, 'ansible-node', kernel=kernel.line,
                         hook=False, module=False, ssh_port=f.node_port,
                         netns=f.ctl, disk=disk,
                         moddir=nodelib.module_subset(
                             kernel, os.path.join(f.dir, 'modules')))
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
        if ok and not errors and not SESSION.get('failed'):
            f.cleanup_dir()
        else:
            print('fleet run dir kept: %s' % f.dir)
        assert not errors, errors


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    rep = (yield).get_result()
    if rep.failed:
        SESSION['failed'] = True     # keep the run dir for a look


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
