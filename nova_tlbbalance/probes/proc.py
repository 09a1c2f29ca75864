# SPDX-License-Identifier: Apache-2.0
"""QEMU process facts from /proc (stdlib only); host-wide facts are
:mod:`nova_tlbbalance.hostfacts`."""

import os
import re

_VCPU_RE = re.compile(r'^CPU (\d+)/(\w+)$')
_ALL_RE = re.compile(r'^ALL CPUs/(\w+)$')

# libvirt (9.0) names the pid file after the domain name XML-escaped:
# q'uo"te -> q&apos;uo&quot;te.pid
_PIDFILE_ESCAPES = (('&', '&amp;'), ('<', '&lt;'), ('>', '&gt;'),
                    ('"', '&quot;'), ("'", '&apos;'))


def pidfile_names(name):
    """The pid file names libvirt may use for ``name``: XML-escaped (what
    libvirt writes), then raw if different and free of '&' (a raw name
    holding '&amp;' could be another domain's escaped file name)."""
    esc = name
    for ch, ent in _PIDFILE_ESCAPES:
        esc = esc.replace(ch, ent)
    raw = [name + '.pid'] if esc != name and '&' not in name else []
    return [esc + '.pid'] + raw


def qemu_pid(name, run_dir='/run/libvirt/qemu'):
    """The QEMU pid libvirt recorded for domain ``name``."""
    for fname in pidfile_names(name):
        path = os.path.join(run_dir, fname)
        try:
            with open(path) as f:
                text = f.read().strip()
            break
        except FileNotFoundError:
            continue
    else:
        raise LookupError('domain %r: no pid file %s in %s'
                          % (name, ' nor '.join(pidfile_names(name)),
                             run_dir)) from None
    try:
        return int(text)
    except ValueError:
        raise LookupError('domain %r: pid file %s is not a number'
                          % (name, path)) from None


def vcpu_threads(pid, proc='/proc'):
    """[(vcpu index or None, tid, accel)] from the threads' names.

    QEMU names vCPU threads ``CPU <n>/<accel>`` (KVM, TCG); single-threaded
    TCG runs all vCPUs on one thread ``ALL CPUs/TCG`` (index None).
    """
    out = []
    task = '%s/%d/task' % (proc, pid)
    for tid in os.listdir(task):
        try:
            with open('%s/%s/comm' % (task, tid)) as f:
                comm = f.read().strip()
        except OSError:
            continue
        m = _VCPU_RE.match(comm)
        if m:
            out.append((int(m.group(1)), int(tid), m.group(2)))
            continue
        m = _ALL_RE.match(comm)
        if m:
            out.append((None, int(tid), m.group(1)))
    out.sort(key=lambda t: (t[0] is None, t[0] or 0))
    return out


def affinity(tid):
    """The CPUs thread ``tid`` may run on (sorted tuple)."""
    return tuple(sorted(os.sched_getaffinity(tid)))


_SMAPS_VMA = re.compile(r'^([0-9a-f]+)-([0-9a-f]+) ', re.M)
_SMAPS_FLAGS = re.compile(r'^VmFlags:(.*)$', re.M)
_SMAPS_KEYS = re.compile(r'^(AnonHugePages|Private_Hugetlb|Shared_Hugetlb|'
                         r'Rss|KernelPageSize):\s+(\d+) kB', re.M)


def _sections(text, want):
    """(start, end) offsets in smaps ``text`` of the VMAs overlapping the
    [lo, hi) ranges in ``want``. Ranges that begin a VMA (guest RAM blocks
    do) are found by a plain substring search; otherwise every header is
    scanned (a QEMU smaps has thousands of lines)."""
    out = []
    for lo, hi in want:
        head = '%08x-' % lo
        pos = 0 if text.startswith(head) else text.find('\n' + head) + 1
        if pos <= 0 and not text.startswith(head):
            break
        m = _SMAPS_VMA.match(text, pos)
        if not m or int(m.group(2), 16) < hi:
            break       # the range spans several VMAs: scan them all
        nxt = _SMAPS_VMA.search(text, m.end())     # a few lines on
        out.append((m.end(), nxt.start() if nxt else len(text)))
    else:
        return out
    heads = list(_SMAPS_VMA.finditer(text))
    out = []
    for i, m in enumerate(heads):
        s, e = int(m.group(1), 16), int(m.group(2), 16)
        if any(s < hi and lo < e for lo, hi in want):
            out.append((m.end(), heads[i + 1].start() if i + 1 < len(heads)
                        else len(text)))
    return out


def vmas_with_flag(pid, ranges, flag, proc='/proc'):
    """How many VMAs of ``pid`` overlapping ``ranges`` ([(hva, length)])
    carry ``flag`` among their smaps VmFlags (``nh``: VM_NOHUGEPAGE)."""
    want = [(h, h + n) for h, n in ranges]
    with open('%s/%d/smaps' % (proc, pid)) as f:
        text = f.read()
    n = 0
    for start, stop in _sections(text, want):
        m = _SMAPS_FLAGS.search(text, start, stop)
        n += bool(m and flag in m.group(1).split())
    return n


def smaps_huge(pid, ranges, proc='/proc'):
    """Huge-page bytes backing the given host ranges.

    ``ranges``: [(hva, length)]. Returns dict with ``size`` (bytes asked
    for), ``anon_huge`` (AnonHugePages), ``hugetlb`` (Private_ and
    Shared_Hugetlb), ``rss`` and ``kernel_page`` (largest KernelPageSize
    seen) summed over the VMAs overlapping them, each VMA counted once,
    ``coverage`` = huge bytes / size and ``resident_coverage`` = huge bytes
    / resident bytes (Rss, which counts AnonHugePages but not hugetlb
    pages, plus hugetlb), None when nothing is resident.
    """
    want = [(h, h + n) for h, n in ranges]
    res = {'size': sum(n for _, n in ranges), 'anon_huge': 0, 'hugetlb': 0,
           'rss': 0, 'kernel_page': 0}
    with open('%s/%d/smaps' % (proc, pid)) as f:
        text = f.read()
    for start, stop in _sections(text, want):
        for key, kb in _SMAPS_KEYS.findall(text, start, stop):
            b = int(kb) * 1024
            if key == 'AnonHugePages':
                res['anon_huge'] += b
            elif key == 'Rss':
                res['rss'] += b
            elif key == 'KernelPageSize':
                res['kernel_page'] = max(res['kernel_page'], b)
            else:
                res['hugetlb'] += b
    huge = res['anon_huge'] + res['hugetlb']
    res['coverage'] = huge / res['size'] if res['size'] else 0.0
    resident = res['rss'] + res['hugetlb']
    res['resident_coverage'] = huge / resident if resident else None
    return res
