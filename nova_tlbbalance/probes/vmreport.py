# SPDX-License-Identifier: Apache-2.0
"""Everything ``tlbbalance status``/``verify``/``exporter`` know of a VM.

:func:`host_facts` once per run, :func:`vm_report` per running domain;
they return the typed records of :mod:`nova_tlbbalance.probes.records`
(``records.document`` is the ``--json`` output). A fact that cannot be
read is None with the reason in ``errors``, never guessed.
"""

import os

from nova_tlbbalance import hostfacts
from nova_tlbbalance import modclient
from nova_tlbbalance import module_status
from nova_tlbbalance import policy as policy_mod
from nova_tlbbalance.probes import domxml
from nova_tlbbalance.probes import memmap
from nova_tlbbalance.probes import proc
from nova_tlbbalance.probes import records

STAGE2_KEYS = ('pages_4k', 'pages_2m', 'pages_1g', 'pages', 'hugepages')


class Roots:
    """Where /proc, /sys and libvirt's run dir are (tests move them)."""

    def __init__(self, proc='/proc', sys='/sys',
                 run_dir='/run/libvirt/qemu', configfs=None):
        self.proc = proc
        self.sys = sys
        self.run_dir = run_dir
        self.configfs = configfs


def host_facts(roots, client):
    """The :class:`records.HostFacts` of this host."""
    topo = hostfacts.cpu_topology(roots.sys)
    span = hostfacts.span(topo, topo)
    return records.HostFacts(
        thp=hostfacts.thp_mode(roots.sys),
        hpage_pmd_size=hostfacts.hpage_pmd_size(roots.sys),
        cpus=len(topo), dies=span['dies'], clusters=span['clusters'],
        dvmbm=records.Dvmbm(**hostfacts.dvmbm(roots.proc, roots.sys)),
        module=records.ModulePresence(loaded=client.present(),
                                      configfs=client.root),
        topology=topo)


def describe_backing(dom):
    if dom.uses_hugetlbfs:
        sizes = sorted({s for s, _ in dom.hugepages if s})
        return 'hugetlbfs' + (' %s' % ','.join(
            '%dK' % (s // 1024) for s in sizes) if sizes else '')
    kind = dom.source_type or 'anonymous'
    return kind + (' immediate' if dom.allocation == 'immediate' else '')


def vm_report(name, xml, host, roots, client, monitor=None,
              tagged_only=False, vm_stats=None):
    """The :class:`records.VmReport` of one running domain; ``monitor`` (a
    libvirt_conn.Monitor) adds gpa2hva cross-checks and stage-2 stats.
    ``tagged_only``: no monitor command to a domain without a tlbbalance
    policy (a tenant's VM the operator did not tag). ``vm_stats``: the
    domain's KVM statistics from libvirt's domain statistics
    (libvirt_conn.Connection.vm_stats), used for stage 2 instead of a
    monitor query."""
    rep = records.VmReport(name=name)
    try:
        dom = domxml.parse(xml)
    except ValueError as exc:
        rep.errors.append(str(exc))
        return rep
    rep.uuid, rep.virt_type = dom.uuid, dom.virt_type
    rep.machine, rep.memory = dom.machine, dom.memory
    rep.backing = describe_backing(dom)
    try:
        pol = policy_mod.Policy.from_domain_xml(xml)
    except ValueError as exc:
        pol = None
        rep.errors.append('policy: %s' % exc)
    rep.managed = pol is not None
    if tagged_only and not rep.managed:
        monitor = None
    if pol is not None:
        # names of a newer release: managed without them (docs/upgrade.md)
        rep.notes.extend(pol.compat_warnings())
        if pol.refusal():
            rep.errors.append(pol.refusal())
        rep.policy = pol
    try:
        pid = proc.qemu_pid(name, roots.run_dir)
    except LookupError as exc:
        rep.errors.append(str(exc))
        return rep
    rep.pid = pid
    _memory(rep, dom, pid, roots, monitor)
    _vcpus(rep, dom, pid, host, roots)
    _stage2(rep, dom, monitor, vm_stats)
    _module(rep, dom, pid, client)
    return rep


def _from_monitor(dom, monitor):
    """(blocks, ranges) with each block's HVA asked of QEMU (gpa2hva of
    its first byte): for RAM /proc/<pid>/maps cannot place."""
    blocks = memmap.blocks_for(dom)
    mm = memmap.machine_map(dom.machine, dom.arch, dom.memory)
    for b in blocks:
        for space_off, length, gpa in mm:
            if space_off <= b.offset < space_off + length:
                got = monitor.gpa2hva(gpa + b.offset - space_off)
                if got is None:
                    raise ValueError('gpa2hva gave no address for %s' % b.id)
                b.hva = got[0]
                break
    return blocks, memmap.ranges_for(blocks, mm)


def _memory(rep, dom, pid, roots, monitor):
    source = 'maps'     # where each range's HVA comes from
    try:
        blocks, ranges = memmap.guest_ram(dom, pid, roots.proc)
    except (ValueError, OSError) as exc:
        if monitor is None:
            rep.errors.append('guest RAM: %s' % exc)
            return
        try:
            blocks, ranges = _from_monitor(dom, monitor)
        except Exception as exc2:
            rep.errors.append('guest RAM: %s; gpa2hva: %s' % (exc, exc2))
            return
        # the hook (no monitor access) could not place this RAM either
        rep.notes.append('guest RAM placed by gpa2hva only: %s' % exc)
        source = 'gpa2hva'
    page = hostfacts.guest_page_size(dom, roots.proc, roots.sys)
    rep.page_size = page
    if page is None:
        rep.errors.append('the host huge page size is unknown: '
                          'alignment not checked')
    rep.ranges = []
    for r in ranges:
        item = records.RamRange(
            block=r.block, gpa=r.gpa, hva=r.hva, length=r.length,
            misalignment=r.misalignment(page) if page else None,
            ambiguous=any(b.ambiguous for b in blocks if b.id == r.block),
            hva_source=source)
        # RAM read from maps is checked against QEMU's own gpa2hva; RAM
        # placed by gpa2hva already is QEMU's answer (asking again would
        # compare it with itself)
        if monitor is not None and source == 'maps':
            try:
                got = monitor.gpa2hva(r.gpa)
            except Exception as exc:    # monitor busy, QEMU gone...
                got = None
                rep.errors.append('gpa2hva 0x%x: %s' % (r.gpa, exc))
            if got is not None:
                item.gpa2hva, item.gpa2hva_region = got[0], got[1]
                # QEMU's answer is authoritative for the alignment
                if page:
                    item.misalignment = (got[0] - r.gpa) % page
        rep.ranges.append(item)
    if page:
        rep.aligned = all(i.misalignment == 0 for i in rep.ranges)
    try:
        cov = proc.smaps_huge(pid, [(b.hva, b.size) for b in blocks],
                              roots.proc)
    except OSError as exc:
        rep.errors.append('smaps: %s' % exc)
        return
    rep.coverage = records.Coverage(**cov)


def _vcpus(rep, dom, pid, host, roots):
    try:
        threads = proc.vcpu_threads(pid, roots.proc)
    except OSError as exc:
        rep.errors.append('vCPU threads: %s' % exc)
        return
    vcpus = []
    allowed = set()
    for idx, tid, accel in threads:
        try:
            aff = proc.affinity(tid)
        except OSError:
            continue
        allowed.update(aff)
        pinned = dom.vcpupin.get(idx, dom.vcpu_cpuset or None)
        vcpus.append(records.Vcpu(
            vcpu=idx, tid=tid, accel=accel,
            affinity=domxml.format_cpuset(aff),
            pinned=domxml.format_cpuset(pinned) if pinned else None,
            matches_pin=pinned is None or tuple(pinned) == tuple(aff)))
    rep.vcpus = vcpus
    rep.accel = threads[0][2] if threads else None
    rep.cpus_allowed = domxml.format_cpuset(allowed)
    span = hostfacts.span(allowed, host.topology)
    rep.dies, rep.clusters = span['dies'], span['clusters']


def _stage2(rep, dom, monitor, vm_stats=None):
    if rep.accel == 'TCG' or dom.virt_type == 'qemu':
        rep.stage2_unavailable = 'TCG'
        return
    if vm_stats is not None:
        stats = vm_stats        # libvirt's domain statistics
    elif monitor is None:
        rep.stage2_unavailable = 'no monitor access'
        return
    else:
        try:
            stats = monitor.vm_stats()
        except Exception as exc:
            rep.stage2_unavailable = 'query-stats: %s' % exc
            return
    found = {k: stats[k] for k in STAGE2_KEYS if k in stats}
    if found:
        rep.stage2 = found
    else:
        rep.stage2_unavailable = 'KVM reports no page-size stats'


def _module(rep, dom, pid, client):
    if not client.present():
        rep.module = records.ModuleState(registered=False,
                                         reason='module not loaded')
        return
    try:
        vm = modclient.vm_dir_name(dom.name, dom.uuid)
    except ValueError as exc:
        rep.module = records.ModuleState(registered=False, reason=str(exc))
        return
    st = client.status(vm)
    if st is None:
        rep.module = records.ModuleState(registered=False, dir=vm,
                                         reason='no directory %s' % vm)
        return
    rep.errors.extend(st.problems)
    ok = st.pid == pid
    rep.module = records.ModuleState(
        registered=ok, dir=vm, status=st,
        limiter=module_status.limiter_problem(st))
    if not ok:
        rep.module.reason = ('registered pid %s is not QEMU pid %d'
                             % (st.pid, pid))


# Reports built at once when QEMU monitor queries are on: each VM's
# gpa2hva round trips (libvirt RPC, the domain's job lock, QEMU's monitor)
# are waits, not CPU; libvirt-python releases the GIL and libvirtd serves
# a connection's calls in parallel (max_workers 20 by default).
WORKERS = 16


def collect(roots=None, uri=None, monitor=True, conn=None, workers=WORKERS,
            host=None, tagged_only=False, monitor_for=None,
            domain_stats=False):
    """(:class:`records.HostFacts`, [:class:`records.VmReport`]) for
    every running domain, over one libvirt connection, in domain name
    order. ``conn``: an open libvirt_conn.Connection to use (and leave
    open); ``host``: host facts already read; ``tagged_only`` as in
    :func:`vm_report`; ``monitor_for(dom)``: the Monitor of a domain
    (default ``conn.monitor``); ``domain_stats``: stage 2 from libvirt's
    domain statistics where libvirt has them."""
    from nova_tlbbalance.probes import libvirt_conn
    roots = roots or Roots(configfs=os.environ.get(modclient.ENV_ROOT))
    client = modclient.Client(roots.configfs)
    if host is None:
        host = host_facts(roots, client)
    own = conn is None
    if own:
        conn = libvirt_conn.Connection(uri or libvirt_conn.DEFAULT_URI)
    monitor_for = monitor_for or conn.monitor
    stats = None

    def one(item):
        name, xml, dom = item
        mon = monitor_for(dom) if monitor else None
        vms = None if stats is None else stats.get(dom.UUIDString(), {})
        return vm_report(name, xml, host, roots, client, mon,
                         tagged_only=tagged_only, vm_stats=vms)
    try:
        doms = conn.running()
        if domain_stats:
            try:
                stats = conn.vm_stats()
            except Exception:   # a busy or older libvirtd: no stage 2
                stats = None
        if monitor and workers > 1 and len(doms) > 1:
            from concurrent.futures import ThreadPoolExecutor
            with ThreadPoolExecutor(min(workers, len(doms))) as pool:
                reps = list(pool.map(one, doms))
        else:
            reps = [one(d) for d in doms]
    finally:
        if own:
            conn.close()
    return host, reps
