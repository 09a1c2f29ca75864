# SPDX-License-Identifier: Apache-2.0
"""A test session's node that survives emulator failures.

Multi-threaded TCG running nested KVM sometimes kills the node (QEMU exits
0 with nothing on the console) or hangs a boot (both vCPUs in soft lockup
while libvirtd starts); see docs/node.md, "When the emulator fails".
LiveNode boots with retries, boots a fresh node before the next test when
the current one died, records every such event with the dead node's
console and QEMU log, and otherwise forwards every attribute to the
current node.Node. The test that saw a death is rerun by pytest
(--reruns 1 --only-rerun NodeDied, in tox.ini).
"""

import os
import shutil
import time

import node as nodelib

# A boot reaches "ready" in 15-60 s; a hung one is given up after this.
BOOT_TIMEOUT = 240
BOOT_ATTEMPTS = 3


class LiveNode:

    def __init__(self, log_dir, prefix, **node_kwargs):
        self.log_dir = log_dir
        self.prefix = prefix
        self.node_kwargs = node_kwargs
        self.current = None
        self.crashes = []
        # Counts the nodes booted; state built on one node (a started VM)
        # is gone once a new one replaces it: see per_boot().
        self.generation = 0
        self._made = {}

    def boot(self):
        """Boot a node, up to BOOT_ATTEMPTS times; returns (seconds, node)."""
        t0 = time.monotonic()
        for attempt in range(1, BOOT_ATTEMPTS + 1):
            n = nodelib.Node(boot_timeout=BOOT_TIMEOUT, **self.node_kwargs)
            n.prepare()
            try:
                n.start()
                break
            except nodelib.NodeError as e:
                logs = self.keep_logs(n, '%s-boot%d' % (self.prefix, attempt))
                self.drop_run_dir(n)
                self.crashes.append('boot attempt %d failed: %s; logs: %s'
                                    % (attempt, str(e).splitlines()[0],
                                       ', '.join(logs)))
                if attempt == BOOT_ATTEMPTS:
                    raise
        self.current = n
        self.generation += 1
        return time.monotonic() - t0, n

    def per_boot(self, key, make):
        """make()'s result, made once per node booted: what a fixture
        built on a node that died (a domain, a file) has to be built again
        on the node that replaced it. A module-scoped pytest fixture is
        not: pytest keeps its cached value across the rerun, and the tests
        after it then name a domain the new node never had."""
        gen, value = self._made.get(key, (None, None))
        if gen != self.generation:
            value = make()
            self._made[key] = (self.generation, value)
        return value

    def revive(self):
        """Boot a new node if the current one died."""
        if self.current is None or self.current.alive():
            return
        dead = self.current
        k = len(self.crashes) + 1
        logs = self.keep_logs(dead, '%s-crash%d' % (self.prefix, k))
        self.drop_run_dir(dead)
        self.crashes.append('node crash %d: QEMU exit %s; %s; logs: %s' % (
            k, dead.proc.returncode,
            dead.qemu_events().strip().replace('\n', ' | ')[-300:]
            or 'QEMU logged no event', ', '.join(logs)))
        self.boot()

    def reboot(self, **changes):
        """Power the current node off and boot it again with changes to
        its Node arguments (e.g. kernel='6.12', moddir=''): on a
        persistent disk (disk=) this is the same machine rebooted, into
        another kernel if asked. Returns (power-off seconds, boot
        seconds)."""
        if not self.node_kwargs.get('disk'):
            raise nodelib.NodeError('reboot needs a node on a disk (disk=):'
                                    ' a tmpfs root would come back empty')
        t0 = time.monotonic()
        status = self.poweroff()
        if status != 0:
            raise nodelib.NodeError('the node powered off with status %s'
                                    % status)
        down = time.monotonic() - t0
        self.node_kwargs.update(changes)
        up, _ = self.boot()
        return down, up

    def poweroff(self):
        """Power the current node off; keep its logs unless all went well."""
        n = self.current
        try:
            return n.poweroff()
        finally:
            if n.exit_status != 0:
                self.keep_logs(n, self.prefix)
                self.drop_run_dir(n)

    @staticmethod
    def drop_run_dir(n):
        """Remove a stopped node's run dir in /tmp once keep_logs() has
        copied its logs (Node keeps it after a kill, for a node run by
        hand): a session leaves nothing behind."""
        if n.alive():
            n._kill()
        if getattr(n, 'run_dir', None) and not n.keep:
            shutil.rmtree(n.run_dir, ignore_errors=True)

    def keep_logs(self, n, name):
        """Copy a node's console and QEMU log into log_dir."""
        os.makedirs(self.log_dir, exist_ok=True)
        kept = []
        for src, suffix in ((n.console, '-console.log'),
                            (n.qemu_log, '-qemu.log')):
            dest = os.path.join(self.log_dir, name + suffix)
            try:
                shutil.copyfile(src, dest)
                kept.append(dest)
            except (OSError, AttributeError):
                pass
        return kept

    def report(self, terminalreporter):
        """List the crashes and failed boots at the end of the session."""
        if not self.crashes:
            return
        terminalreporter.write_sep('-', 'node crashes and failed boots (a '
                                   'test that saw a crash was rerun on a '
                                   'new node)')
        for line in self.crashes:
            terminalreporter.write_line(line)

    def __getattr__(self, name):
        return getattr(self.current, name)
