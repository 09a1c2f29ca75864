# SPDX-License-Identifier: Apache-2.0
"""The host's facts, each read in one place (stdlib only).

The driver decides with these, the libvirt hook and ``tlbbalance status`` /
``verify`` judge with the same readers: the PMD huge page size, the host
THP mode, the hugetlbfs pools, the CPU topology and DVMBM detection.
Every reader takes the sysfs (procfs) root as a parameter (tests and the
functional harness point it at a temporary tree). A fact that cannot be
read is returned as None (or left out), never guessed; the caller decides
what an unknown fact means for it.
"""

import collections
import os
import re

SYS_ROOT = '/sys'
PROC_ROOT = '/proc'
HPAGE_PMD_SIZE = '/kernel/mm/transparent_hugepage/hpage_pmd_size'
THP_ENABLED = '/kernel/mm/transparent_hugepage/enabled'

# One host CPU's place: ids as sysfs gives them. A missing die_id or
# cluster_id (older kernels, no such level) counts as one die (cluster)
# per package (die): id 0.
CpuIds = collections.namedtuple('CpuIds', 'package die cluster core')


def hpage_pmd_size(sys_root=SYS_ROOT):
    """The host's PMD (THP) huge page size in bytes, None if unreadable."""
    try:
        with open(sys_root + HPAGE_PMD_SIZE) as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def thp_mode(sys_root=SYS_ROOT):
    """The active host THP mode (always/madvise/never) or ''."""
    try:
        with open(sys_root + THP_ENABLED) as f:
            m = re.search(r'\[(\w+)\]', f.read())
            return m.group(1) if m else ''
    except OSError:
        return ''


def default_hugepage_size(proc_root=PROC_ROOT):
    """The default hugetlbfs page size in bytes (``Hugepagesize`` of
    /proc/meminfo), None if not there."""
    try:
        with open(proc_root + '/meminfo') as f:
            for line in f:
                if line.startswith('Hugepagesize:'):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def guest_page_size(dom, proc_root=PROC_ROOT, sys_root=SYS_ROOT,
                    hugetlbfs=None):
    """The huge page size a domain's guest RAM must be aligned to on this
    host: its largest hugetlbfs page (the default hugetlbfs size when it
    names none) when ``hugetlbfs`` (default: the domain uses hugetlbfs),
    else the PMD size. None when the host does not say.
    ``dom``: a :class:`nova_tlbbalance.probes.domxml.Domain`."""
    if hugetlbfs is None:
        hugetlbfs = dom.uses_hugetlbfs
    if hugetlbfs:
        sizes = [s for s, _ in dom.hugepages if s]
        return max(sizes) if sizes else default_hugepage_size(proc_root)
    return hpage_pmd_size(sys_root)


def free_hugepages(size, sys_root=SYS_ROOT):
    """{host NUMA node: free huge pages of ``size`` bytes}.

    Falls back to the global pool as node 0 on a host without NUMA sysfs.
    """
    kb = size // 1024
    out = {}
    base = sys_root + '/devices/system/node'
    try:
        nodes = sorted(int(n[4:]) for n in os.listdir(base)
                       if re.match(r'^node\d+$', n))
    except OSError:
        nodes = []
    for n in nodes:
        path = '%s/node%d/hugepages/hugepages-%dkB/free_hugepages' % (
            base, n, kb)
        try:
            with open(path) as f:
                out[n] = int(f.read())
        except (OSError, ValueError):
            out[n] = 0
    if not nodes:
        path = '%s/kernel/mm/hugepages/hugepages-%dkB/free_hugepages' % (
            sys_root, kb)
        try:
            with open(path) as f:
                out[0] = int(f.read())
        except (OSError, ValueError):
            out[0] = 0
    return out


def _read_id(path):
    try:
        with open(path) as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def cpu_topology(sys_root=SYS_ROOT):
    """{cpu: :class:`CpuIds`} of the host's CPUs from sysfs.

    A CPU whose ``physical_package_id`` cannot be read is left out (its
    place is unknown); a missing die, cluster or core id counts as 0.
    """
    base = sys_root + '/devices/system/cpu'
    out = {}
    try:
        names = os.listdir(base)
    except OSError:
        return out
    for name in names:
        m = re.match(r'^cpu(\d+)$', name)
        if not m:
            continue
        topo = '%s/%s/topology/' % (base, name)
        package = _read_id(topo + 'physical_package_id')
        if package is None:
            continue
        out[int(m.group(1))] = CpuIds(
            package, *(_read_id(topo + f) or 0
                       for f in ('die_id', 'cluster_id', 'core_id')))
    return out


def span(cpus, topo):
    """How many dies and clusters the CPUs ``cpus`` cover (CPUs missing
    from ``topo``, of unknown place, are not counted)."""
    dies = set()
    clusters = set()
    for c in cpus:
        t = topo.get(c)
        if t is None:
            continue
        dies.add((t.package, t.die))
        clusters.add((t.package, t.die, t.cluster))
    return {'dies': len(dies), 'clusters': len(clusters)}


def dvmbm(proc=PROC_ROOT, sys_root=SYS_ROOT, kmsg_lines=None):
    """Whether the host kernel limits TLBI broadcast per VM (openEuler DVMBM).

    Returns {'enabled': True/False, 'source': why}. Checked in order:
    the kvm module parameter, the kernel command line, the kernel log
    ("KVM dvmbm enabled"; ``kmsg_lines`` for tests, else ``dmesg`` output
    from /dev/kmsg). False when none of them mentions DVMBM (any kernel
    but openEuler's arm64 KVM with CONFIG_KVM_HISI_VIRT).
    """
    for param in ('dvmbm_enabled',):
        path = '%s/module/kvm/parameters/%s' % (sys_root, param)
        try:
            with open(path) as f:
                val = f.read().strip()
            return {'enabled': val in ('Y', '1'), 'source': path}
        except OSError:
            pass
    try:
        with open(proc + '/cmdline') as f:
            cmd = f.read()
        m = re.search(r'kvm-arm\.dvmbm_enabled=(\S+)', cmd)
        if m:
            return {'enabled': m.group(1) in ('1', 'y', 'Y', 'true'),
                    'source': 'kernel command line'}
    except OSError:
        pass
    lines = kmsg_lines if kmsg_lines is not None else _kmsg()
    for line in lines:
        if 'KVM dvmbm enabled' in line:
            return {'enabled': True, 'source': 'kernel log'}
    return {'enabled': False,
            'source': 'no DVMBM support found (kvm parameter, command '
                      'line, kernel log)'}


def _kmsg(path='/dev/kmsg'):
    """The kernel log records, read without blocking; [] if unreadable."""
    out = []
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return out
    try:
        while True:
            try:
                rec = os.read(fd, 8192)
            except BlockingIOError:
                break
            except OSError:
                continue        # EPIPE: record overwritten; go on
            if not rec:
                break
            out.append(rec.decode('utf-8', 'replace'))
    finally:
        os.close(fd)
    return out
