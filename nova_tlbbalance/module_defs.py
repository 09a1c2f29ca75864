# SPDX-License-Identifier: Apache-2.0
"""The kernel module's tunables, statistics, limits and modes, read from
their one source.

``kernel-module/core/tlbb_params.def``, ``tlbb_stats.def``,
``tlbb_limits.def`` and ``tlbb_modes.def`` are the single source of truth
(the C core, the module and tlbsim include them); this module parses the
same files, shipped as package data, so nothing is restated here. The
limits and modes are parsed by :mod:`nova_tlbbalance.module_iface` (light
enough for every libvirt hook phase) and offered here too.
"""

import dataclasses
import functools
import os
import re

from nova_tlbbalance.module_iface import limit  # noqa: F401
from nova_tlbbalance.module_iface import limits  # noqa: F401
from nova_tlbbalance.module_iface import mode_names  # noqa: F401
from nova_tlbbalance.module_iface import modes  # noqa: F401

_PARAM_RE = re.compile(
    r'^TLBB_PARAM\((?P<name>\w+),\s*(?P<default>\d+),\s*(?P<min>\d+),\s*'
    r'(?P<max>\d+),\s*"(?P<unit>[^"]*)",\s*"(?P<help>[^"]*)"\)\s*$')
_STAT_RE = re.compile(
    r'^TLBB_STAT\((?P<name>\w+),\s*(?P<kind>u64|milli|str|cpulist),\s*'
    r'"(?P<help>[^"]*)"\)\s*$')


@dataclasses.dataclass(frozen=True)
class Param:
    name: str
    default: int
    min: int
    max: int
    unit: str
    help: str

    def check(self, value):
        """Return ``value`` as int, or raise ValueError naming the param."""
        try:
            ivalue = int(str(value), 10)
        except ValueError:
            raise ValueError('%s: %r is not a decimal integer'
                             % (self.name, value)) from None
        if not self.min <= ivalue <= self.max:
            raise ValueError('%s: %d is outside %d..%d %s'
                             % (self.name, ivalue, self.min, self.max,
                                self.unit))
        return ivalue


@dataclasses.dataclass(frozen=True)
class Stat:
    name: str
    kind: str
    help: str


def _lines(filename):
    # A plain open next to this file: importlib.resources costs ~20 ms of
    # imports, and the libvirt hook pays it on every phase of a tagged VM.
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           'data', filename)) as f:
        text = f.read()
    return [ln.strip() for ln in text.splitlines()
            if ln.startswith(('TLBB_PARAM(', 'TLBB_STAT('))]


@functools.lru_cache(maxsize=None)
def params():
    """All tunables, in .def order, as a tuple of :class:`Param`."""
    out = []
    for ln in _lines('tlbb_params.def'):
        m = _PARAM_RE.match(ln)
        if not m:
            raise RuntimeError('tlbb_params.def: cannot parse %r' % ln)
        d = m.groupdict()
        out.append(Param(d['name'], int(d['default']), int(d['min']),
                         int(d['max']), d['unit'], d['help']))
    return tuple(out)


@functools.lru_cache(maxsize=None)
def stats():
    """All per-VM statistics, in .def order, as a tuple of :class:`Stat`."""
    out = []
    for ln in _lines('tlbb_stats.def'):
        m = _STAT_RE.match(ln)
        if not m:
            raise RuntimeError('tlbb_stats.def: cannot parse %r' % ln)
        out.append(Stat(**m.groupdict()))
    return tuple(out)


def param(name):
    """The :class:`Param` called ``name``; KeyError naming it otherwise."""
    for p in params():
        if p.name == name:
            return p
    raise KeyError('unknown tlbbalance parameter %r (known: %s)'
                   % (name, ', '.join(p.name for p in params())))
