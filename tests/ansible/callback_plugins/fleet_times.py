# SPDX-License-Identifier: Apache-2.0
"""Per-host wall time of a playbook run, for the rollout test's report:
from a host's first task start to its last result, printed after the
recap as "FLEET-TIME <host> <seconds>"; and each task that took a host
2 s or more, as "FLEET-SLOW <host> <seconds> <task>"."""

import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = '''
    name: fleet_times
    type: aggregate
    short_description: per-host wall time (tests/ansible)
    description: Prints FLEET-TIME <host> <seconds> after the play recap.
    requirements: [enabled in callbacks_enabled]
'''


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'fleet_times'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self.first = {}
        self.last = {}
        self.started = {}
        self.slow = []

    def v2_runner_on_start(self, host, task):
        now = time.monotonic()
        self.first.setdefault(host.get_name(), now)
        self.started[(host.get_name(), task._uuid)] = now

    def _end(self, result, *args, **kwargs):
        host = result._host.get_name()
        now = time.monotonic()
        self.last[host] = now
        t0 = self.started.pop((host, result._task._uuid), None)
        if t0 is not None and now - t0 >= 2:
            self.slow.append((host, now - t0, result._task.get_name()))

    v2_runner_on_ok = v2_runner_on_failed = v2_runner_on_skipped = _end
    v2_runner_on_unreachable = _end

    def v2_playbook_on_stats(self, stats):
        for host in sorted(self.first):
            self._display.display('FLEET-TIME %s %.1f' % (
                host, self.last.get(host, self.first[host]) -
                self.first[host]))
        for host, secs, name in self.slow:
            self._display.display('FLEET-SLOW %s %.1f %s' % (host, secs,
                                                             name))
