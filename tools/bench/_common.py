# SPDX-License-Identifier: Apache-2.0
"""Shared by the benchmarks: repo on sys.path, tagged TCG domain XML."""

import os
import statistics
import sys

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
for _p in (TOP, os.path.join(TOP, 'tools')):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import libvirthost  # noqa: E402,F401
from nova_tlbbalance import guest_config  # noqa: E402
from nova_tlbbalance import hostfacts  # noqa: E402
from nova_tlbbalance.policy import Policy  # noqa: E402


def tagged_xml(name, memory_mib, mode='monitor', prefault=None):
    """What the driver plugin would define: plain TCG guest + its XML code.
    prefault: the flavor's ``tlbbalance:prefault`` (None: the default)."""
    ncpu = os.cpu_count()
    plain = libvirthost.plain_domain(
        name, memory_mib=memory_mib, vcpus=2,
        pins={0: '0', 1: str(min(1, ncpu - 1))})
    specs = {'tlbbalance:mode': mode, 'tlbbalance:backing': 'thp'}
    if prefault is not None:
        specs['tlbbalance:prefault'] = 'true' if prefault else 'false'
    pol = Policy.from_extra_specs(specs)
    return guest_config.apply_to_domain_xml(
        plain, pol, huge_page_kib=hostfacts.hpage_pmd_size() // 1024)


def workdir(prefix):
    """A temporary directory for this run under $TMPDIR, removed when the
    benchmark exits, passed or not (``TLBB_KEEP_BENCH=1`` keeps it and
    says where): its libvirtds' trees and logs."""
    import atexit
    import shutil
    import tempfile
    path = tempfile.mkdtemp(prefix=prefix)

    def remove():
        if os.environ.get('TLBB_KEEP_BENCH') == '1':
            sys.stderr.write('kept %s (TLBB_KEEP_BENCH=1)\n' % path)
        else:
            shutil.rmtree(path, ignore_errors=True)
    atexit.register(remove)
    return path


def fmt(values, unit='s', scale=1.0):
    v = [x * scale for x in values]
    return 'median %.3f %s (min %.3f, max %.3f, n=%d)' % (
        statistics.median(v), unit, min(v), max(v), len(v))


def loadavg():
    """1, 5 and 15 minute load averages (the machine is shared)."""
    with open('/proc/loadavg') as f:
        return ' '.join(f.read().split()[:3])
