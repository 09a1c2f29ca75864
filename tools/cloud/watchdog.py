# SPDX-License-Identifier: Apache-2.0
"""A process of the cloud died: say which, why (its log), and stop the run.

``run_tempest.py`` runs tempest beside a ``Watchdog``: it polls the
cloud's recorded processes (cloud.processes: services, libvirtds, the
kvm host's node keeper) every few seconds while tempest runs; when one
dies it prints a report naming it, with the end of its log, and stops
tempest's process group: the cloud is broken, the run fails now instead
of test after test waiting out its timeouts (a server on a dead host
takes tempest's build_timeout, 300 s). ``death_report`` also serves the
check after the run.

Only the standard library (run_tempest.py runs under tox's python).
"""

import os
import signal
import threading
import time

import cloud
import procs

# Poll period: a death is reported within this (plus one poll's cost).
INTERVAL = 5
# tempest (stestr and its workers) gets this long to exit on SIGTERM.
STOP_GRACE = 30

WHAT = {
    'node-': "the kvm host's node (QEMU TCG with nested KVM, tools/node) "
             "of compute host %s, or its keeper (nodekeeper.py)",
    'nova-compute-': 'nova-compute of compute host %s',
    'libvirtd-': 'libvirtd of compute host %s',
    'virtlogd-': 'virtlogd of compute host %s',
    'ns-': 'the namespace holder of compute host %s',
    'sshd-': 'the sshd of compute host %s (the SSH pass, sshaccess.py)',
}


def describe(name):
    for prefix, text in WHAT.items():
        if name.startswith(prefix):
            return text % name[len(prefix):]
    return 'a service of the cloud'


def dead(state_path):
    """Names of the cloud's processes that are no longer running."""
    state = procs.State(state_path)
    return [n for n, _, alive in cloud.processes(state) if not alive]


def death_report(state_path, names):
    """What died and the end of its logs: the one recorded with the
    process (its stdout) and the service's own ``log/<name>.log``."""
    state = procs.State(state_path)
    recorded = {r['name']: r.get('log') for r in state.procs}
    out = []
    for n in names:
        logs = [recorded.get(n), os.path.join(
            os.path.dirname(state_path), 'log', n + '.log')]
        logs = [p for i, p in enumerate(logs) if p and os.path.exists(p)
                and p not in logs[:i]]
        out.append('%s died: %s; its log: %s' % (
            n, describe(n), ', '.join(logs) or '(none)'))
        for log in logs:
            out.append('  ' + procs.tail(log, 15).rstrip().replace(
                '\n', '\n  '))
    return '\n'.join(out)


def stop_group(proc, grace=STOP_GRACE):
    """SIGTERM proc's process group, SIGKILL after grace seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        end = time.monotonic() + wait
        while time.monotonic() < end:
            if proc.poll() is not None:
                return
            time.sleep(0.5)


class Watchdog(threading.Thread):
    """Watch the cloud while ``proc`` (started with start_new_session)
    runs; on a death, print the report and stop proc's group."""

    def __init__(self, state_path, proc, interval=INTERVAL, out=print):
        super().__init__(daemon=True)
        self.state_path = state_path
        self.proc = proc
        self.interval = interval
        self.out = out
        self.dead = []
        self.t0 = time.monotonic()

    def run(self):
        while self.proc.poll() is None:
            gone = dead(self.state_path)
            if gone:
                self.dead = gone
                self.out('tempest: STOPPED %.0f s into the run: a process '
                         'of the cloud died (the cloud is broken; a rerun '
                         'starts it afresh)\n%s' % (
                             time.monotonic() - self.t0,
                             death_report(self.state_path, gone)))
                stop_group(self.proc)
                return
            time.sleep(self.interval)
