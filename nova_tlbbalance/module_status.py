# SPDX-License-Identifier: Apache-2.0
"""A VM's ``status`` attribute, parsed once into typed values.

The module prints one ``key value`` line per fact (docs/kernel-module.md,
"configfs"): a header (:data:`HEADER`), every statistic of
tlbb_stats.def and every tunable of tlbb_params.def. :func:`parse` is the
only reader of that text; everything downstream (``tlbbalance status``
and its JSON, ``verify``, the exporter, ``collapse``) takes the typed
values from here and never parses a number again.

Types, from the .def files' columns: a statistic of kind ``u64`` is an
int, ``milli`` a float (three decimals), ``str`` and ``cpulist`` text (a
CPU list stays in the kernel's own ``0-3,8`` form; :func:`cpu_count`
counts it); a tunable is an int. A key this release does not know (a
newer module's: names only grow, docs/upgrade.md) is kept as text. A
value that does not parse as its kind is left out and named in
:attr:`ModuleStatus.problems`, so one odd line costs that fact, not the
report.
"""

import errno
import functools
import os

from nova_tlbbalance.shown import shown

# The header lines before the statistics: name -> type. limiter_error is a
# negative errno (0: none), the others are counts or flags.
HEADER = {
    'mode': str,
    'pid': int,
    'inject_enabled': int,
    'limiter_error': int,
    'limiter_stuck': int,
    'staging': int,
}


class ModuleStatus(dict):
    """key -> typed value (see the module docstring), in the module's
    order; ``problems``: one text per line that could not be typed, naming
    the key and the value. ``pid``/``mode``: the registered process (0:
    none) and the mode, None when the module did not print them."""

    def __init__(self, *args, problems=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.problems = list(problems)

    @property
    def pid(self):
        return self.get('pid')

    @property
    def mode(self):
        return self.get('mode')


@functools.lru_cache(maxsize=None)
def _kinds():
    """{key: parser} for every key of this release (once: the exporter
    parses every registered VM's status at every collection)."""
    from nova_tlbbalance import module_defs
    out = dict(HEADER)
    for stat in module_defs.stats():
        out[stat.name] = _STAT_KINDS[stat.kind]
    for param in module_defs.params():
        out[param.name] = int
    return out


def _u64(text):
    value = int(text, 10)
    if value < 0:
        raise ValueError(text)
    return value


def _milli(text):
    return round(float(text), 3)


def _cpulist(text):
    if text:
        cpu_count(text)      # checks it
    return text


_STAT_KINDS = {'u64': _u64, 'milli': _milli, 'str': str, 'cpulist': _cpulist}
_KIND_NAMES = {int: 'an integer', _u64: 'an unsigned integer',
               _milli: 'a number', _cpulist: 'a CPU list', str: 'text'}


def parse(text):
    """The ``status`` attribute's text -> :class:`ModuleStatus`."""
    kinds = _kinds()
    values, problems = {}, []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        key, _, raw = line.partition(' ')
        raw = raw.strip()
        kind = kinds.get(key, str)
        try:
            values[key] = kind(raw)
        except ValueError:
            problems.append('module status: %s %s is not %s' % (
                key, shown(raw), _KIND_NAMES[kind]))
    return ModuleStatus(values, problems=problems)


def cpu_count(text):
    """How many CPUs the kernel's CPU list ``text`` (``0-3,8``) names."""
    from nova_tlbbalance.probes import domxml
    return len(domxml.parse_cpuset(text)) if text.strip() else 0


def limiter_problem(status):
    """Why the module's limiter cannot hold a VM at its limit, or None.

    ``status``: a :class:`ModuleStatus`. The module reports
    ``limiter_stuck`` (huge pages over the limit it could not split at the
    last tick) and ``limiter_error`` (the last error it met, as a negative
    errno), see docs/kernel-module.md.
    """
    stuck = status.get('limiter_stuck', 0)
    err = -status.get('limiter_error', 0)
    if stuck <= 0:
        return None
    why = ''
    if err > 0:
        why = ' (%s: %s)' % (errno.errorcode.get(err, 'errno %d' % err),
                             os.strerror(err))
        if err == errno.EFAULT:
            why += '; part of the guest RAM is not accessible to the ' \
                'limiter (made PROT_NONE?)'
    return ('limiter stuck: %d huge page(s) above the limit %s could not '
            'be split%s' % (stuck, status.get('huge_limit', '?'), why))
