# SPDX-License-Identifier: Apache-2.0
"""The kernel module's tunables, statistics, limits and modes, read from
their one source.

``kernel-module/core/tlbb_params.def``, ``tlbb_choices.def`` (the names of
the enumerated tunables' values), ``tlbb_stats.def``, ``tlbb_limits.def``
and ``tlbb_modes.def`` are the single source of truth
(the C core, the module and tlbsim include them); this module parses the
same files, shipped as package data, so nothing is restated here. The
limits and modes are parsed by :mod:`nova_tlbbalance.module_iface` (light
enough for every libvirt hook phase) and offered here too.
"""

import functools
import os
import re

from nova_tlbbalance import record
from nova_tlbbalance.module_iface import limit  # noqa: F401
from nova_tlbbalance.module_iface import limits  # noqa: F401
from nova_tlbbalance.module_iface import mode_names  # noqa: F401
from nova_tlbbalance.module_iface import modes  # noqa: F401

_PARAM_RE = re.compile(
    r'^TLBB_PARAM\((?P<name>\w+),\s*(?P<default>\d+),\s*(?P<min>\d+),\s*'
    r'(?P<max>\d+),\s*"(?P<unit>[^"]*)",\s*"(?P<help>[^"]*)"\)\s*$')
_CHOICE_RE = re.compile(
    r'^TLBB_CHOICE\((?P<param>\w+),\s*(?P<id>[A-Z_]+),\s*(?P<value>\d+),\s*'
    r'"(?P<name>[a-z]+)",\s*"(?P<help>[^"]*)"\)\s*$')
_STAT_RE = re.compile(
    r'^TLBB_STAT\((?P<name>\w+),\s*(?P<kind>\w+),\s*(?P<type>\w+),\s*'
    r'(?P<unit>\w+),\s*"(?P<help>[^"]*)"\)\s*$')
# tlbb_stats.def's columns: how the module prints a stat (kind), what a
# monitoring system makes of it (type) and what it counts (unit)
STAT_KINDS = ('u64', 'milli', 'str', 'cpulist')
STAT_TYPES = ('counter', 'gauge', 'info')
STAT_UNITS = ('pages', 'refills', 'ticks', 'cpus', 'permille', 'none')


@record.record(frozen=True)
class Choice:
    """One named value of an enumerated tunable (tlbb_choices.def)."""
    value: int
    name: str
    help: str


@record.record(frozen=True)
class Param:
    name: str
    default: int
    min: int
    max: int
    unit: str
    help: str
    choices: tuple = ()   # of Choice, by value: an enumerated tunable

    def names(self):
        """The names of the values, by value (empty: not enumerated)."""
        return tuple(c.name for c in self.choices)

    def allowed(self):
        """The allowed values, as words for an error message or a doc."""
        words = '%d..%d %s' % (self.min, self.max, self.unit)
        if self.choices:
            words = '%s (%s)' % (' | '.join(self.names()), words)
        return words

    def check(self, value):
        """Return ``value`` (a number, or a name of :attr:`choices`) as
        int, or raise ValueError naming the param."""
        text = str(value).strip()
        for c in self.choices:
            if text == c.name:
                return c.value
        try:
            ivalue = int(text, 10)
        except ValueError:
            want = 'a decimal integer'
            if self.choices:
                want = 'one of %s or %d..%d' % (
                    ', '.join(self.names()), self.min, self.max)
            raise ValueError('%s: %r is not %s'
                             % (self.name, value, want)) from None
        if not self.min <= ivalue <= self.max:
            raise ValueError('%s: %d is outside %s'
                             % (self.name, ivalue, self.allowed()))
        return ivalue

    def name_of(self, value):
        """The name of ``value``, or ``value`` itself when it has none."""
        for c in self.choices:
            if c.value == value:
                return c.name
        return value


@record.record(frozen=True)
class Stat:
    """One per-VM statistic (tlbb_stats.def): ``kind`` how the module
    prints it, ``type`` counter, gauge or info, ``unit`` what it counts."""
    name: str
    kind: str
    type: str
    unit: str
    help: str


def _lines(filename):
    # A plain open next to this file: importlib.resources costs ~20 ms of
    # imports, and the libvirt hook pays it on every phase of a tagged VM.
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           'data', filename)) as f:
        text = f.read()
    return [ln.strip() for ln in text.splitlines()
            if ln.startswith(('TLBB_PARAM(', 'TLBB_STAT(', 'TLBB_CHOICE('))]


@functools.lru_cache(maxsize=None)
def _choices():
    """{param name: (Choice, ...)} from tlbb_choices.def."""
    out = {}
    for ln in _lines('tlbb_choices.def'):
        m = _CHOICE_RE.match(ln)
        if not m:
            raise RuntimeError('tlbb_choices.def: cannot parse %r' % ln)
        d = m.groupdict()
        out.setdefault(d['param'], []).append(
            Choice(int(d['value']), d['name'], d['help']))
    return {k: tuple(v) for k, v in out.items()}


@functools.lru_cache(maxsize=None)
def params():
    """All tunables, in .def order, as a tuple of :class:`Param`; an
    enumerated one carries its named values (tlbb_choices.def)."""
    out = []
    named = _choices()
    for ln in _lines('tlbb_params.def'):
        m = _PARAM_RE.match(ln)
        if not m:
            raise RuntimeError('tlbb_params.def: cannot parse %r' % ln)
        d = m.groupdict()
        p = Param(d['name'], int(d['default']), int(d['min']),
                  int(d['max']), d['unit'], d['help'],
                  named.pop(d['name'], ()))
        if p.choices and [c.value for c in p.choices] != list(
                range(p.min, p.max + 1)):
            raise RuntimeError('tlbb_choices.def: %s: the values must be '
                               '%d..%d in order' % (p.name, p.min, p.max))
        out.append(p)
    if named:
        raise RuntimeError('tlbb_choices.def: not tunables of '
                           'tlbb_params.def: %s' % ', '.join(sorted(named)))
    return tuple(out)


def choice_names(name):
    """The names of tunable ``name``'s values, by value (tlbb_choices.def:
    ``choice_names('method')``: paper, hill, safe)."""
    return param(name).names()


@functools.lru_cache(maxsize=None)
def stats():
    """All per-VM statistics, in .def order, as a tuple of :class:`Stat`."""
    out = []
    for ln in _lines('tlbb_stats.def'):
        m = _STAT_RE.match(ln)
        if not m:
            raise RuntimeError('tlbb_stats.def: cannot parse %r' % ln)
        stat = Stat(**m.groupdict())
        for column, allowed in (('kind', STAT_KINDS), ('type', STAT_TYPES),
                                ('unit', STAT_UNITS)):
            if getattr(stat, column) not in allowed:
                raise RuntimeError(
                    'tlbb_stats.def: %s: %s %r is not one of %s' % (
                        stat.name, column, getattr(stat, column),
                        ', '.join(allowed)))
        out.append(stat)
    return tuple(out)


def param(name):
    """The :class:`Param` called ``name``; KeyError naming it otherwise."""
    for p in params():
        if p.name == name:
            return p
    raise KeyError('unknown tlbbalance parameter %r (known: %s)'
                   % (name, ', '.join(p.name for p in params())))
