# SPDX-License-Identifier: Apache-2.0
"""The kernel module's interface limits and mode names, from their one
source: ``kernel-module/core/tlbb_limits.def`` and ``tlbb_modes.def``
(tlbb.h builds its constants and ``enum tlbb_mode`` from the same lines),
shipped as package data like the other tables (:mod:`module_defs`).

Standard library only and nothing imported beyond it: the libvirt hook
(:mod:`nova_tlbbalance.modclient`) checks VM names on every phase.
"""

import collections
import functools
import os
import re

_LIMIT_RE = re.compile(
    r'^TLBB_LIMIT\((?P<name>[A-Z_]+),\s*(?P<value>\d+),\s*'
    r'"(?P<help>[^"]*)"\)\s*$')
_MODE_RE = re.compile(
    r'^TLBB_MODE\((?P<id>[A-Z_]+),\s*"(?P<name>[a-z]+)",\s*'
    r'"(?P<help>[^"]*)"\)\s*$')

Mode = collections.namedtuple('Mode', 'name help')


def _parsed(filename, regex, prefix):
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           'data', filename)) as f:
        text = f.read()
    out = []
    for ln in text.splitlines():
        if not ln.startswith(prefix):
            continue
        m = regex.match(ln.strip())
        if not m:
            raise RuntimeError('%s: cannot parse %r' % (filename, ln))
        out.append(m.groupdict())
    return out


@functools.lru_cache(maxsize=None)
def limits():
    """The module's interface limits: {NAME: int} (``NAME_MAX``,
    ``MAX_RANGES``, ``MAX_VCPUS``), from tlbb_limits.def."""
    return {d['name']: int(d['value'])
            for d in _parsed('tlbb_limits.def', _LIMIT_RE, 'TLBB_LIMIT(')}


def limit(name):
    """One limit of tlbb_limits.def; KeyError naming it otherwise."""
    try:
        return limits()[name]
    except KeyError:
        raise KeyError('unknown tlbbalance limit %r (known: %s)'
                       % (name, ', '.join(limits()))) from None


@functools.lru_cache(maxsize=None)
def modes():
    """The per-VM modes, in .def order (the first is a new VM's), as a
    tuple of :class:`Mode` (name, help)."""
    return tuple(Mode(d['name'], d['help'])
                 for d in _parsed('tlbb_modes.def', _MODE_RE, 'TLBB_MODE('))


def mode_names():
    """The mode names (``off``, ``monitor``, ``balance``), in .def order."""
    return tuple(m.name for m in modes())
