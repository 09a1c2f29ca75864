# SPDX-License-Identifier: Apache-2.0
"""tools/node/node.py: a node whose kernel reports a CPU stuck for 120 s
or more is wedged (the emulator's failure, docs/node.md "When the emulator
fails"): the command waiting on it stops, QEMU is stopped and NodeDied
raised, so that the session boots a new node and the test runs once more,
instead of every later command waiting out its timeout on a node that
answers nothing (the fresh-machine run of 2026-11-27: a soft lockup in
`virsh destroy` held e2e for its whole 1500 s limit).

A real process stands in for QEMU (``sleep``) and a socket pair for the
agent's channel, which never answers: the waiting loop, the console scan
and the kill are node.py's own."""

import os
import socket
import subprocess
import sys
import threading

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(TOP, 'tools', 'node'))

import node as nodelib  # noqa: E402

SHORT = ('[  208.525522] watchdog: BUG: soft lockup - CPU#1 stuck for 45s! '
         '[qemu-system-x86:368]\n')
LONG = ('[  300.526098] watchdog: BUG: soft lockup - CPU#1 stuck for 130s! '
        '[qemu-system-x86:368]\n')


@pytest.fixture
def quiet_node(tmp_path, monkeypatch):
    monkeypatch.setattr(nodelib, 'WEDGE_LOOK_S', 0.2)
    n = nodelib.Node()
    n.console = str(tmp_path / 'console.log')
    n.qemu_log = str(tmp_path / 'qemu.log')
    n.run_dir = str(tmp_path)
    with open(n.console, 'w') as f:
        f.write('[    1.0] booted\n')
    n.sock, peer = socket.socketpair()
    n.proc = subprocess.Popen(['sleep', '600'])
    yield n
    peer.close()
    if n.proc.poll() is None:
        n.proc.kill()
        n.proc.wait()


def add(n, text):
    with open(n.console, 'a') as f:
        f.write(text)


def test_a_lockup_before_the_command_is_not_its_wedge(quiet_node):
    """Lines already on the console when the command began (a stall the
    node recovered from) do not stop it."""
    n = quiet_node
    add(n, SHORT + LONG)
    with pytest.raises(nodelib.NodeError) as e:
        n._recv(1)
    assert not isinstance(e.value, nodelib.NodeDied), e.value
    assert n.alive()
    assert n.wedged() == 'soft lockup - CPU#1 stuck for 130s!'


def test_a_lockup_after_the_command_began_stops_it(quiet_node):
    n = quiet_node
    add(n, SHORT)                     # before: not counted, and too short
    threading.Timer(0.5, add, (n, LONG)).start()
    with pytest.raises(nodelib.NodeDied) as e:
        n._recv(60)
    msg = str(e.value)
    assert 'node wedged (soft lockup - CPU#1 stuck for 130s!)' in msg, msg
    assert n.proc.poll() is not None, 'QEMU was left running'
    assert not n.alive()


def test_short_lockups_pass(quiet_node):
    """45 s: the host starved the emulator; the node goes on (here it
    never answers, so the command's own timeout ends the wait)."""
    n = quiet_node
    threading.Timer(0.3, add, (n, SHORT)).start()
    with pytest.raises(nodelib.NodeError) as e:
        n._recv(2)
    assert not isinstance(e.value, nodelib.NodeDied), e.value
    assert 'no answer from the node in 2 s' in str(e.value)
    assert n.alive()


def test_a_node_dead_before_the_command_raises_node_died(quiet_node):
    """A node whose QEMU ended between two commands (its agent's socket
    closed): the next command raises NodeDied, which the e2e session
    reruns on a new node, not a BrokenPipeError, which it does not (an
    ad-hoc e2e run that killed QEMU between a fixture and the test saw
    the test fail instead of rerun)."""
    n = quiet_node
    n.proc.kill()
    n.proc.wait()
    n.sock.close()
    n.sock, peer = socket.socketpair()
    peer.close()
    with pytest.raises(nodelib.NodeDied, match='before a command could '
                       'be sent'):
        n.run('true', timeout=1)


def test_no_answer_past_the_commands_limit_is_a_hung_node(quiet_node,
                                                          monkeypatch):
    """The agent answers a command that outlives its limit (timed_out);
    nothing at all GRACE_S later is a hung node (the lanes trial of
    2026-11-28: `virsh start` under load, no console line for 210 s, no
    soft lockup printed): stopped and reported as dead, like a wedge."""
    monkeypatch.setattr(nodelib, 'GRACE_S', 0.5)
    n = quiet_node
    with pytest.raises(nodelib.NodeDied) as e:
        n.run('virsh -q start vm', timeout=0)
    msg = str(e.value)
    assert msg.startswith('node hung: its agent answered nothing in 0 s'), \
        msg
    assert '--- node console' in msg, msg
    assert n.proc.poll() is not None, 'QEMU was left running'
    assert not n.alive()


def test_a_hung_node_with_a_kernel_report_is_a_failure(quiet_node,
                                                       monkeypatch):
    """A hang the kernel explains (a task blocked in it: a module's
    deadlock) is not an emulator failure: QEMU is stopped and the test
    fails (NodeError, no rerun)."""
    monkeypatch.setattr(nodelib, 'GRACE_S', 0.5)
    n = quiet_node
    threading.Timer(0.1, add, (n, '[  250.1] INFO: task cat:412 blocked for '
                                  'more than 120 seconds.\n')).start()
    with pytest.raises(nodelib.NodeError) as e:
        n.run('cat /sys/kernel/config/tlbbalance/vms/a/status', timeout=0)
    assert not isinstance(e.value, nodelib.NodeDied), e.value
    assert 'node hung with a kernel report ([  250.1] INFO: task cat:412' \
        in str(e.value), e.value
    assert not n.alive()


def test_an_answer_still_arriving_is_not_a_hang(quiet_node, monkeypatch):
    """Part of an answer came: a slow node, not a hung one."""
    monkeypatch.setattr(nodelib, 'GRACE_S', 0.5)
    n = quiet_node
    n._buf = b'{"id": 1, "rc": 0, "stdout": "half'
    with pytest.raises(nodelib.NodeError) as e:
        n.run('true', timeout=0)
    assert not isinstance(e.value, nodelib.NodeDied), e.value
    assert n.alive()


def test_own_modules_need_a_disk():
    """moddir='' means the node's own /lib/modules on its persistent root:
    without a disk there is none, and the node says so before booting."""
    with pytest.raises(ValueError, match="moddir=''.*no disk"):
        nodelib.Node(moddir='')
