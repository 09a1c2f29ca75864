# SPDX-License-Identifier: Apache-2.0
"""The rules a tagged guest is judged by, each finding in one wording.

Three judgments, whoever asks:

- **alignment**: guest RAM must sit at host virtual addresses congruent to
  its guest-physical addresses modulo the huge page size, or stage 2 cannot
  map it huge (:func:`misalignment`, :func:`misaligned`);
- **TLBI scope**: with ``tlbi_scope`` die or cluster, the vCPUs must keep
  to one die (cluster) of the host (:func:`check_pins` for nova's pins,
  :func:`scope_span` / :func:`scope_wider` for the CPUs a running guest may
  use);
- **strict preconditions**: what the host must offer before a strict guest
  starts there, or moves there (:func:`check_file_backing`,
  :func:`check_destination`; the host, memory and module checks,
  ``preconditions.strict_host`` among them, live in
  :mod:`nova_tlbbalance.preconditions`, which imports this module, and
  raise :class:`Unmet` from here).

Callers: the nova driver plugin at boot (``_get_guest_xml``) and at every
move (the live migration pre-checks on the source and the destination),
the libvirt hook and ``tlbbalance verify``. A finding raised here reads the
same in a nova instance fault, a hook refusal and a ``verify`` line.

Standard library only (the libvirt hook imports this module).
"""

from nova_tlbbalance import hostfacts
from nova_tlbbalance.probes import domxml


def _warning(msg, *args):
    """A warning in the caller's log (nova-compute's, verify's). logging
    (and the threading it brings) is imported only here: both hook phases
    of a tagged start import this module, and logging is ~5 ms of their
    start-up that a check which finds nothing never needs."""
    import logging
    logging.getLogger(__name__).warning(msg, *args)


SCOPES = ('die', 'cluster')


class Conflict(ValueError):
    """The policy contradicts the domain, the flavor or the host; the
    message names the flavor keys involved. Raised strict or not."""


class Unmet(Exception):
    """A strict precondition is not met; the message says which and by
    how much."""


def strict_unmet(host, reason):
    """The one wording of a strict precondition not met on ``host``."""
    return ('strict policy (tlbbalance:strict=true) not met on host %s: %s'
            % (host, reason))


# -- alignment ---------------------------------------------------------------

def misalignment(block, gpa, hva, off, page):
    """The finding for RAM block ``block`` (GPA ``gpa`` mapped at HVA
    ``hva``) off by ``off`` bytes modulo the ``page``-byte huge page."""
    return ('misaligned: RAM block %s GPA 0x%x at HVA 0x%x is off by 0x%x '
            'modulo the %d KiB huge page; stage 2 cannot map it huge'
            % (block, gpa, hva, off, page // 1024))


def misaligned(ranges, page):
    """[finding] for each of ``ranges`` (objects with ``block``, ``gpa``,
    ``hva`` and ``misalignment(page)``) not aligned to ``page`` bytes."""
    out = []
    for r in ranges:
        off = r.misalignment(page)
        if off:
            out.append(misalignment(r.block, r.gpa, r.hva, off, page))
    return out


def page_size_unknown(sys_root):
    """The finding when the huge page size cannot be read."""
    return ('the host huge page size is unknown (%s%s unreadable): '
            'alignment not checked' % (sys_root, hostfacts.HPAGE_PMD_SIZE))


# -- TLBI scope --------------------------------------------------------------

def scope_span(scope, cpus, topology):
    """How many dies (``scope`` die) or clusters (cluster) the host CPUs
    ``cpus`` cover in ``topology`` ({cpu: hostfacts.CpuIds}); CPUs of
    unknown place are not counted."""
    return hostfacts.span(cpus, topology)[
        'dies' if scope == 'die' else 'clusters']


def scope_wider(scope, cpus, count, pinned=False):
    """The finding: the vCPUs of a ``tlbi_scope=scope`` guest are pinned
    to (``pinned``) or may run on host CPUs ``cpus`` (a set, or a cpuset
    string such as ``0-1,4``), ``count`` dies (clusters)."""
    if not isinstance(cpus, str):
        cpus = domxml.format_cpuset(cpus)
    return ('tlbbalance:tlbi_scope=%s: the vCPUs %s host CPUs %s, which '
            'span %d %ss; the TLBI broadcast cannot be scoped'
            % (scope, 'are pinned to' if pinned else 'may run on', cpus,
               count, scope))


def scope_problem(scope, cpus, topology):
    """:func:`scope_wider` for CPUs ``cpus`` a running guest may use, or
    None when they keep to one die (cluster)."""
    count = scope_span(scope, cpus, topology)
    return scope_wider(scope, cpus, count) if count > 1 else None


def _refuse_or_warn(policy, msg):
    if policy.strict:
        raise Conflict(msg + ' (tlbbalance:strict=true)')
    _warning('%s', msg)


def check_pins(pins, nvcpu, policy, topology=None):
    """tlbi_scope die/cluster: every vCPU pinned to one CPU, one die/cluster.

    ``pins``: {vCPU: set of host CPUs}, as nova pinned them (on this host);
    ``nvcpu``: the guest's vCPU count; ``topology``: {cpu:
    hostfacts.CpuIds}, None to read this host's. nova does the pinning
    (hw:cpu_policy=dedicated); this only checks it. Raises Conflict when a
    vCPU is not pinned to one CPU, and, with ``policy.strict``, when the
    pins span several dies (clusters); otherwise logs a warning.
    """
    if policy.tlbi_scope not in SCOPES:
        return
    loose = [v for v in range(nvcpu) if len(pins.get(v, ())) != 1]
    if loose:
        raise Conflict(
            'tlbbalance:tlbi_scope=%s needs hw:cpu_policy=dedicated (every '
            'vCPU pinned to one host CPU); vCPU(s) %s are not'
            % (policy.tlbi_scope, ','.join(map(str, loose))))
    cpus = sorted(set().union(*pins.values())) if pins else []
    if topology is None:
        topology = hostfacts.cpu_topology()
    unknown = [c for c in cpus if topology.get(c) is None]
    if unknown:
        _warning('tlbbalance: host CPU(s) %s have no topology in sysfs; '
                 'cannot check tlbi_scope=%s', unknown, policy.tlbi_scope)
        return
    count = scope_span(policy.tlbi_scope, cpus, topology)
    if count > 1:
        _refuse_or_warn(policy, scope_wider(
            policy.tlbi_scope, cpus, count, pinned=True) +
            '. Confine hw:cpu_policy=dedicated instances to one %s (e.g. '
            'hw:numa_nodes=1 with one NUMA node per %s)'
            % (policy.tlbi_scope, policy.tlbi_scope))


# -- strict preconditions and moves ------------------------------------------

def file_backing_conflict(policy, what):
    """The Conflict for guest memory backed by files (``what`` says how)."""
    need = {'thp': 'THP backing needs anonymous memory',
            'hugetlbfs': 'hugetlbfs backing needs hugetlbfs pages (nova '
                         'refuses hw:mem_page_size with file-backed '
                         'memory too)'}
    return Conflict('tlbbalance:backing=%s conflicts with %s; %s'
                    % (policy.backing, what, need[policy.backing]))


FILE_BACKED_HOST = ("this host's [libvirt] file_backed_memory (the guest's "
                    "memory would be file-backed here)")


def check_file_backing(policy, file_backed_memory):
    """Raise Conflict when a host backing guest memory with files
    (``file_backed_memory``) is to run a guest with huge-page backing."""
    if policy is not None and file_backed_memory and \
            policy.backing != 'none':
        raise file_backing_conflict(policy, FILE_BACKED_HOST)


def check_destination(policy, file_backed_memory=False, pins=None, nvcpu=0,
                      topology=None):
    """Check a move's destination host against ``policy``.

    ``policy``: the policy the guest *runs* with (its domain
    ``<metadata>`` on the source), which is what the destination XML keeps;
    None for an unmanaged guest. Runs on the destination before anything is
    moved. ``file_backed_memory``: the destination backs guest memory with
    files (``[libvirt] file_backed_memory``); ``pins``: {vCPU: set of host
    CPUs} nova claimed on the destination, or None when nova claimed none
    (then a tlbi_scope cannot be checked: refused when strict, else a
    warning); ``nvcpu``: the guest's vCPU count. Raises Conflict as the
    same policy would at boot on this host (see :func:`check_pins`).
    """
    if policy is None:
        return
    check_file_backing(policy, file_backed_memory)
    if policy.tlbi_scope not in SCOPES:
        return
    if pins is None:
        _refuse_or_warn(policy, (
            'tlbbalance:tlbi_scope=%s: nova claimed no vCPU pins on this '
            'host for the migration (NUMA-aware live migration not in '
            'use), so the scope cannot be checked' % policy.tlbi_scope))
        return
    check_pins(pins, nvcpu, policy, topology)


# -- a running guest ---------------------------------------------------------

class NoVcpuThreads(LookupError):
    """The QEMU process has no vCPU threads to judge (yet, or any more)."""


def running(dom, pol, config):
    """(pid, vcpu threads, ranges, problems) of the running domain ``dom``
    under policy ``pol``: its QEMU pid, vCPU threads and guest RAM ranges
    as the host shows them (``config``: run_dir, proc, sys), and what the
    alignment and TLBI-scope rules find wrong with them, in this module's
    wording. The libvirt hook's ``started`` and reconcile judge a running
    guest through this one call. Raises NoVcpuThreads, LookupError (no
    QEMU pid) or OSError (/proc unreadable)."""
    from nova_tlbbalance.probes import memmap
    from nova_tlbbalance.probes import proc
    pid = proc.qemu_pid(dom.name, config.run_dir)
    threads = proc.vcpu_threads(pid, config.proc)
    if not threads:
        raise NoVcpuThreads('QEMU pid %d has no vCPU threads ("CPU n/KVM")'
                            % pid)
    blocks, ranges = memmap.guest_ram(dom, pid, config.proc)
    page = hostfacts.guest_page_size(
        dom, config.proc, config.sys,
        hugetlbfs=pol.backing == 'hugetlbfs' or dom.uses_hugetlbfs)
    problems = []
    if page is None:
        problems.append(page_size_unknown(config.sys))
    else:
        problems.extend(misaligned(ranges, page))
    if pol.tlbi_scope in ('die', 'cluster'):
        allowed = set()
        for _, tid, _ in threads:
            allowed.update(proc.affinity(tid))
        problem = scope_problem(pol.tlbi_scope, allowed,
                                hostfacts.cpu_topology(config.sys))
        if problem:
            problems.append(problem)
    return pid, threads, ranges, problems
