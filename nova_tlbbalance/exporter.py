"""Prometheus text exposition of the ``tlbbalance status`` data.

Module statistics are named ``tlbbalance_<stat>`` after the lines of
kernel-module/core/tlbb_stats.def (via nova_tlbbalance.module_defs): u64 and
milli stats are numbers (milli divided by 1000), str and cpulist stats are
``tlbbalance_<stat>_info{value="..."} 1``. Host and VM facts measured here
are ``tlbbalance_host_*`` and ``tlbbalance_vm_*``.
"""

from nova_tlbbalance import module_defs

_HELP = {
    'tlbbalance_host_module_loaded':
        'the tlbbalance kernel module is loaded (configfs present)',
    'tlbbalance_host_dvmbm_enabled':
        'the host kernel limits TLBI broadcast per VM (DVMBM)',
    'tlbbalance_host_hpage_pmd_bytes': 'host PMD huge page size',
    'tlbbalance_vm_managed': 'the domain carries a tlbbalance policy',
    'tlbbalance_vm_ram_bytes': 'guest RAM',
    'tlbbalance_vm_huge_bytes':
        'guest RAM backed by huge pages on the host (AnonHugePages+hugetlb)',
    'tlbbalance_vm_huge_coverage_ratio': 'huge bytes / guest RAM',
    'tlbbalance_vm_misaligned_ranges':
        'guest RAM ranges whose HVA and GPA differ modulo the huge page',
    'tlbbalance_vm_stage2_pages': 'KVM stage-2 mappings by page size',
    'tlbbalance_vm_vcpus': 'vCPU threads',
    'tlbbalance_vm_vcpu_dies': 'dies the vCPU threads may run on',
    'tlbbalance_vm_vcpu_clusters': 'clusters the vCPU threads may run on',
    'tlbbalance_vm_vcpu_pin_mismatch':
        'vCPU threads whose affinity differs from <vcpupin>',
    'tlbbalance_vm_registered': 'registered with the kernel module',
    'tlbbalance_vm_verify_failures': 'reasons tlbbalance verify gives',
}


def _esc(value):
    return str(value).replace('\\', '\\\\').replace('"', '\\"').replace(
        '\n', '\\n')


def _labels(d):
    if not d:
        return ''
    return '{%s}' % ','.join('%s="%s"' % (k, _esc(v))
                             for k, v in sorted(d.items()))


class _Out:
    def __init__(self):
        self.samples = {}     # name -> [(labels, value)]
        self.help = dict(_HELP)
        self.types = {}

    def add(self, name, labels, value, help_=None, kind='gauge'):
        self.samples.setdefault(name, []).append((labels, value))
        if help_:
            self.help.setdefault(name, help_)
        self.types.setdefault(name, kind)

    def text(self):
        lines = []
        for name in sorted(self.samples):
            lines.append('# HELP %s %s' % (name, self.help.get(name, name)))
            lines.append('# TYPE %s %s' % (name, self.types[name]))
            for labels, value in self.samples[name]:
                lines.append('%s%s %s' % (name, _labels(labels), value))
        return '\n'.join(lines) + '\n'


def _num(text, kind):
    try:
        return float(text) if kind == 'milli' else int(text)
    except (TypeError, ValueError):
        return None


def render(host, reps, verdicts=None):
    """Metrics text for ``host`` (records.HostFacts) and VM reports
    (records.VmReport)."""
    o = _Out()
    o.add('tlbbalance_host_module_loaded', {}, int(host.module.loaded))
    o.add('tlbbalance_host_dvmbm_enabled', {}, int(host.dvmbm.enabled))
    if host.hpage_pmd_size is not None:
        o.add('tlbbalance_host_hpage_pmd_bytes', {}, host.hpage_pmd_size)
    for rep in reps:
        vm = {'vm': rep.name}
        o.add('tlbbalance_vm_managed', vm, int(rep.managed))
        if rep.memory is not None:
            o.add('tlbbalance_vm_ram_bytes', vm, rep.memory)
        cov = rep.coverage
        if cov is not None:
            o.add('tlbbalance_vm_huge_bytes', vm, cov.anon_huge + cov.hugetlb)
            o.add('tlbbalance_vm_huge_coverage_ratio', vm,
                  round(cov.coverage, 6))
        if rep.ranges is not None and rep.page_size is not None:
            o.add('tlbbalance_vm_misaligned_ranges', vm,
                  sum(1 for r in rep.ranges if r.misalignment))
        for k, v in sorted((rep.stage2 or {}).items()):
            o.add('tlbbalance_vm_stage2_pages', dict(vm, size=k), v)
        if rep.vcpus is not None:
            o.add('tlbbalance_vm_vcpus', vm, len(rep.vcpus))
            o.add('tlbbalance_vm_vcpu_dies', vm, rep.dies or 0)
            o.add('tlbbalance_vm_vcpu_clusters', vm, rep.clusters or 0)
            o.add('tlbbalance_vm_vcpu_pin_mismatch', vm,
                  sum(1 for v in rep.vcpus if not v.matches_pin))
        mod = rep.module
        if rep.managed and mod is not None:
            o.add('tlbbalance_vm_registered', vm, int(mod.registered))
            if mod.registered and mod.status:
                _module_stats(o, vm, mod.status)
        if verdicts is not None and rep.name in verdicts:
            o.add('tlbbalance_vm_verify_failures', vm,
                  len(verdicts[rep.name]))
    return o.text()


def _module_stats(o, vm, st):
    for stat in module_defs.stats():
        if stat.name not in st:
            continue
        name = 'tlbbalance_' + stat.name
        if stat.kind in ('u64', 'milli'):
            value = _num(st[stat.name], stat.kind)
            if value is not None:
                o.add(name, vm, value, stat.help)
        else:
            o.add(name + '_info', dict(vm, value=st[stat.name]), 1,
                  stat.help)
