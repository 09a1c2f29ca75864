"""Hook logging: syslog (/dev/log) or stderr, plus optional JSON lines.

Every phase ends with one record carrying its duration, so the time a hook
adds to a VM's lifecycle is visible in the host log (and, with
TLBB_HOOK_LOG, machine-readable for tests and benchmarks).
"""

import json
import os
import socket
import sys
import time

_PRI = {'err': 3, 'warning': 4, 'info': 6, 'debug': 7}
_FACILITY_DAEMON = 3
TAG = 'tlbbalance-hook'


class Log:
    def __init__(self, config):
        self.config = config
        self._sock = None
        if config.syslog:
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                s.connect(config.syslog)
                self._sock = s
            except OSError:
                self._sock = None

    def __call__(self, level, msg):
        line = '%s[%d]: %s' % (TAG, os.getpid(), msg)
        if self._sock is not None:
            pri = _FACILITY_DAEMON * 8 + _PRI.get(level, 6)
            try:
                self._sock.send(('<%d>%s' % (pri, line)).encode())
                return
            except OSError:
                pass
        if level != 'debug':
            sys.stderr.write(line + '\n')

    def record(self, **fields):
        """One JSON line to TLBB_HOOK_LOG (if set) and a syslog summary."""
        fields.setdefault('time', time.time())
        self('info', ' '.join('%s=%s' % (k, fields[k]) for k in sorted(fields)
                              if k != 'time'))
        if self.config.log_file:
            try:
                with open(self.config.log_file, 'a') as f:
                    f.write(json.dumps(fields, sort_keys=True) + '\n')
            except OSError as exc:
                self('warning', 'cannot write %s: %s'
                     % (self.config.log_file, exc))
