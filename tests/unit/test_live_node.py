# SPDX-License-Identifier: Apache-2.0
"""tools/node/live.py: what a fixture built on a node is built again on
the node that replaced it after a crash (LiveNode.per_boot).

In CI of 2026-11-27 a node triple-faulted during an e2e test; the test was
rerun on a new node, but the module-scoped fixture that had started the
tagged VM kept its cached value, and five tests then failed on a domain
the new node never had. A stand-in replaces node.Node (no QEMU here: the
class below only says whether it is alive); revive() and per_boot() are
LiveNode's own."""

import os
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(TOP, 'tools', 'node'))

import live  # noqa: E402


class StandInNode:
    """node.Node's surface that LiveNode uses, without an emulator."""

    booted = []

    def __init__(self, **kwargs):
        self.up = False
        self.proc = type('P', (), {'returncode': 0})()
        self.console = self.qemu_log = '/nonexistent'

    def prepare(self):
        pass

    def start(self):
        self.up = True
        StandInNode.booted.append(self)

    def alive(self):
        return self.up

    def qemu_events(self):
        return 'Triple fault'


def test_per_boot_makes_again_on_the_node_that_replaced_a_dead_one(
        monkeypatch, tmp_path):
    monkeypatch.setattr(live.nodelib, 'Node', StandInNode)
    StandInNode.booted = []
    ln = live.LiveNode(str(tmp_path), 'unit')
    ln.boot()
    made = []

    def start_vm():
        made.append(ln.current)
        return 'vm on node %d' % len(StandInNode.booted)

    assert ln.per_boot('vm', start_vm) == 'vm on node 1'
    assert ln.per_boot('vm', start_vm) == 'vm on node 1'
    assert made == [StandInNode.booted[0]]
    ln.revive()                       # alive: nothing happens
    assert ln.per_boot('vm', start_vm) == 'vm on node 1'
    StandInNode.booted[0].up = False  # the node dies
    ln.revive()
    assert len(StandInNode.booted) == 2 and ln.crashes
    assert 'Triple fault' in ln.crashes[0]
    assert ln.per_boot('vm', start_vm) == 'vm on node 2'
    assert made == StandInNode.booted
    # Keys are separate.
    assert ln.per_boot('other', lambda: 7) == 7


def test_a_dead_nodes_logs_are_kept_and_its_run_dir_removed(
        monkeypatch, tmp_path):
    """Node keeps a killed node's run dir in /tmp (for a node run by
    hand); a session copies its console and QEMU log to its log dir and
    removes the run dir, so that nothing of it stays behind (the lanes
    trial of 2026-11-28 left one)."""
    monkeypatch.setattr(live.nodelib, 'Node', StandInNode)
    StandInNode.booted = []
    ln = live.LiveNode(str(tmp_path / 'logs'), 'unit')
    ln.boot()
    dead = ln.current
    dead.run_dir = str(tmp_path / 'tlbb-node-x')
    os.makedirs(dead.run_dir)
    dead.console = os.path.join(dead.run_dir, 'console.log')
    with open(dead.console, 'w') as f:
        f.write('tlbb-agent: run 14: virsh -q start vm\n')
    dead.keep = False
    dead.up = False
    ln.revive()
    assert not os.path.exists(dead.run_dir)
    with open(tmp_path / 'logs' / 'unit-crash1-console.log') as f:
        assert 'run 14' in f.read()
