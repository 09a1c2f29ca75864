# SPDX-License-Identifier: Apache-2.0
"""Hook logging: syslog (/dev/log) or stderr, plus optional JSON lines.

Every phase ends with one record carrying its duration, so the time a hook
adds to a VM's lifecycle is visible in the host log (and, with
the ``log_file`` setting, machine-readable for tests and benchmarks).

The syslog summary is logfmt: ``key=value`` pairs separated by spaces, in
key order; a value that is empty or holds a space, ``"``, ``=``, a
backslash or a control character is written as a JSON string (double
quotes, backslash escapes), so :func:`parse_summary` (or any logfmt
parser) gives every value back. Its level says how the phase went
(:func:`summary_level`). Every line is cut to ``shown.LINE_MAX``
characters, each field of the JSON record too: a bad value of a megabyte
in a domain's XML never makes a megabyte of log.
"""

import os
import re
import sys
import time

from nova_tlbbalance.shown import clip

_PRI = {'err': 3, 'warning': 4, 'info': 6, 'debug': 7}
_FACILITY_DAEMON = 3
TAG = 'tlbbalance-hook'
# results of a phase that did not do what the policy asked
FAILED = ('failed', 'timeout', 'error', 'bad policy')
_BARE = re.compile(r'^[^\s"=\\\x00-\x1f\x7f]+$')
_PAIR = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)')


def summary_level(fields):
    """err when the phase refused the VM (rc != 0), warning when it failed
    without refusing it (not strict), info otherwise."""
    if fields.get('rc'):
        return 'err'
    if str(fields.get('result', '')).startswith(FAILED):
        return 'warning'
    return 'info'


def _value(v):
    text = str(v)
    if _BARE.match(text):
        return text
    # what json.dumps(text) gives, without importing json (its decoder,
    # scanner and their regular expressions) on the hook's start-up
    from _json import encode_basestring_ascii
    return encode_basestring_ascii(text)


def format_summary(fields):
    return ' '.join('%s=%s' % (k, _value(fields[k])) for k in sorted(fields)
                    if k != 'time')


def parse_summary(line):
    """The fields of a summary line (all values as strings)."""
    import json
    return {k: json.loads(v) if v.startswith('"') else v
            for k, v in _PAIR.findall(line)}


class Log:
    def __init__(self, config):
        self.config = config
        self._sock = None
        if config.syslog:
            # _socket, not socket: the hook's start-up skips socket.py's
            # imports (selectors, enum classes); a datagram is all it sends
            import _socket
            try:
                s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_DGRAM)
                s.connect(config.syslog)
                self._sock = s
            except OSError:
                self._sock = None

    def __call__(self, level, msg):
        line = '%s[%d]: %s' % (TAG, os.getpid(), clip(msg))
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
        """One JSON line to the log_file setting (if set) and a syslog
        summary."""
        fields.setdefault('time', time.time())
        for k, v in fields.items():
            if isinstance(v, str):
                fields[k] = clip(v)
        self(summary_level(fields), format_summary(fields))
        if self.config.log_file:
            import json
            try:
                with open(self.config.log_file, 'a') as f:
                    f.write(json.dumps(fields, sort_keys=True) + '\n')
            except OSError as exc:
                self('warning', 'cannot write %s: %s'
                     % (self.config.log_file, exc))
