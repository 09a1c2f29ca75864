"""Prometheus metrics of the ``tlbbalance status`` data (prometheus_client).

:class:`Collector` is a custom collector: every scrape asks its ``source``
for the host facts and the VM reports (records.HostFacts and
records.VmReport, from probes/vmreport) and verify's verdicts,
and turns them into metric families through two tables, the one place that
knows which report field becomes which metric:

- :data:`HOST_METRICS` and :data:`VM_METRICS`: host and VM facts measured
  here (``tlbbalance_host_*``, ``tlbbalance_vm_*``), each a family name, a
  type, help and a function reading the value from the report;
- :data:`STAT_METRICS`: the module's per-VM statistics, one entry per line
  of kernel-module/core/tlbb_stats.def (read through module_defs, which
  gives their help text and kind): the metric name, its type and the
  factor from the module's unit to the base unit. ``str`` and ``cpulist``
  stats are info metrics (``tlbbalance_<stat>_info{value="..."} 1``).

Types follow Prometheus's conventions: what only grows is a counter
(exposed with ``_total``), values are in base units (ratios 0-1, bytes).
The renames this brought are listed in docs/cli.md.
"""

import collections

from prometheus_client import core
from prometheus_client import exposition
from prometheus_client import registry as prom_registry

from nova_tlbbalance import module_defs

GAUGE = 'gauge'
COUNTER = 'counter'
INFO = 'info'

Metric = collections.namedtuple('Metric', 'name type help value unit',
                                defaults=('',))
Metric.__doc__ = """A host or VM metric; ``value(report)`` gives a number,
a ``{label value: number}`` dict for its extra label (EXTRA_LABEL), or None
when the report does not have the fact; ``unit`` (OpenMetrics) ends the
name."""


def _huge_bytes(rep):
    cov = rep.coverage
    return None if cov is None else cov.anon_huge + cov.hugetlb


def _coverage(rep):
    return None if rep.coverage is None else rep.coverage.coverage


def _resident_coverage(rep):
    return None if rep.coverage is None else rep.coverage.resident_coverage


def _misaligned(rep):
    if rep.ranges is None or rep.page_size is None:
        return None
    return sum(1 for r in rep.ranges if r.misalignment)


def _vcpu_fact(field):
    return lambda rep: (None if rep.vcpus is None
                        else getattr(rep, field) or 0)


def _pin_mismatch(rep):
    if rep.vcpus is None:
        return None
    return sum(1 for v in rep.vcpus if not v.matches_pin)


def _registered(rep):
    if not rep.managed or rep.module is None:
        return None
    return int(rep.module.registered)


HOST_METRICS = (
    Metric('tlbbalance_host_module_loaded', GAUGE,
           'the tlbbalance kernel module is loaded (configfs present)',
           lambda h: int(h.module.loaded)),
    Metric('tlbbalance_host_dvmbm_enabled', GAUGE,
           'the host kernel limits TLBI broadcast per VM (DVMBM)',
           lambda h: int(bool(h.dvmbm.enabled))),
    Metric('tlbbalance_host_hpage_pmd_bytes', GAUGE,
           'host PMD huge page size', lambda h: h.hpage_pmd_size,
           'bytes'),
)

# The label of a dict-valued VM metric (besides vm).
EXTRA_LABEL = {'tlbbalance_vm_stage2_pages': 'size'}

VM_METRICS = (
    Metric('tlbbalance_vm_managed', GAUGE,
           'the domain carries a tlbbalance policy',
           lambda rep: int(rep.managed)),
    Metric('tlbbalance_vm_ram_bytes', GAUGE, 'guest RAM',
           lambda rep: rep.memory, 'bytes'),
    Metric('tlbbalance_vm_huge_bytes', GAUGE,
           'guest RAM backed by huge pages on the host '
           '(AnonHugePages+hugetlb)', _huge_bytes, 'bytes'),
    Metric('tlbbalance_vm_huge_coverage_ratio', GAUGE,
           'huge bytes / guest RAM', _coverage, 'ratio'),
    Metric('tlbbalance_vm_huge_resident_coverage_ratio', GAUGE,
           'huge bytes / resident guest RAM (what judges a VM that is not '
           'pre-faulted, tlbbalance:prefault=false)', _resident_coverage,
           'ratio'),
    Metric('tlbbalance_vm_misaligned_ranges', GAUGE,
           'guest RAM ranges whose HVA and GPA differ modulo the huge page',
           _misaligned),
    Metric('tlbbalance_vm_stage2_pages', GAUGE,
           'KVM stage-2 mappings by page size', lambda rep: rep.stage2),
    Metric('tlbbalance_vm_vcpus', GAUGE, 'vCPU threads',
           lambda rep: None if rep.vcpus is None else len(rep.vcpus)),
    Metric('tlbbalance_vm_vcpu_dies', GAUGE,
           'dies the vCPU threads may run on', _vcpu_fact('dies')),
    Metric('tlbbalance_vm_vcpu_clusters', GAUGE,
           'clusters the vCPU threads may run on', _vcpu_fact('clusters')),
    Metric('tlbbalance_vm_vcpu_pin_mismatch', GAUGE,
           'vCPU threads whose affinity differs from <vcpupin>',
           _pin_mismatch),
    Metric('tlbbalance_vm_registered', GAUGE,
           'registered with the kernel module', _registered),
)

VERIFY_METRIC = Metric('tlbbalance_vm_verify_failures', GAUGE,
                       'reasons tlbbalance verify gives', None)

Stat = collections.namedtuple('Stat', 'name type scale help unit',
                              defaults=('',))
Stat.__doc__ = """How a module statistic is exposed: metric ``name``,
``type``, ``scale`` (module value x scale = base unit), ``help`` (None:
the .def's) and ``unit``."""

STAT_METRICS = {
    'huge_pages': Stat('tlbbalance_huge_pages', GAUGE, 1, None),
    'huge_limit': Stat('tlbbalance_huge_limit', GAUGE, 1, None),
    'total_pages': Stat('tlbbalance_total_pages', GAUGE, 1, None),
    'refills_huge': Stat('tlbbalance_refills_huge_last_tick', GAUGE, 1,
                         None),
    'refills_small': Stat('tlbbalance_refills_small_last_tick', GAUGE, 1,
                          None),
    'refills_huge_total': Stat('tlbbalance_refills_huge', COUNTER, 1,
                               'huge-group refills since registration'),
    'refills_small_total': Stat('tlbbalance_refills_small', COUNTER, 1,
                                'small-group refills since registration'),
    # the module prints permille with three decimals: /1000 -> ratio
    'load': Stat('tlbbalance_load_ratio', GAUGE, 0.001,
                 'share of vCPU time estimated spent on refills in the '
                 'last tick, 0-1', 'ratio'),
    'load_count': Stat('tlbbalance_load_count', GAUGE, 1, None),
    'imbalance': Stat('tlbbalance_imbalance', GAUGE, 1, None),
    'dominant': Stat('tlbbalance_dominant', INFO, None, None),
    'state': Stat('tlbbalance_state', INFO, None, None),
    'splits': Stat('tlbbalance_splits', COUNTER, 1, None),
    'restores': Stat('tlbbalance_restores', COUNTER, 1, None),
    'ticks': Stat('tlbbalance_ticks', COUNTER, 1, None),
    'backend': Stat('tlbbalance_backend', INFO, None, None),
    'cpus_allowed': Stat('tlbbalance_cpus_allowed', INFO, None, None),
    'cpus_ran': Stat('tlbbalance_cpus_ran', INFO, None, None),
}


def _family(name, typ, help_, labels, unit=''):
    if typ == COUNTER:
        return core.CounterMetricFamily(name, help_, labels=labels,
                                        unit=unit)
    if typ == INFO:
        return core.InfoMetricFamily(name, help_, labels=labels)
    return core.GaugeMetricFamily(name, help_, labels=labels, unit=unit)


def _number(text, kind, scale):
    """A module stat's text as a number in the base unit, or None."""
    try:
        value = float(text) if kind == 'milli' else int(text)
    except (TypeError, ValueError):
        return None
    if scale == 1:
        return value
    # milli stats have three decimals: round off the float product's noise
    return round(value * scale, 9)


def stat_metrics():
    """(module_defs.Stat, Stat) for every .def line, in .def order; a stat
    the table does not know is an error naming it."""
    out = []
    for stat in module_defs.stats():
        if stat.name not in STAT_METRICS:
            raise LookupError('exporter: statistic %r of tlbb_stats.def has '
                              'no entry in STAT_METRICS' % stat.name)
        out.append((stat, STAT_METRICS[stat.name]))
    return out


def families(host, reps, verdicts=None):
    """The metric families for ``host`` facts, VM reports and verify's
    ``{vm name: [reasons]}``."""
    out = []
    for m in HOST_METRICS:
        fam = _family(m.name, m.type, m.help, [], m.unit)
        value = m.value(host)
        if value is not None:
            fam.add_metric([], value)
        out.append(fam)

    for m in VM_METRICS:
        extra = EXTRA_LABEL.get(m.name)
        fam = _family(m.name, m.type, m.help,
                      ['vm', extra] if extra else ['vm'], m.unit)
        for rep in reps:
            value = m.value(rep)
            if value is None:
                continue
            if extra:
                for key, v in sorted(value.items()):
                    fam.add_metric([rep.name, key], v)
            else:
                fam.add_metric([rep.name], value)
        out.append(fam)

    fam = _family(VERIFY_METRIC.name, VERIFY_METRIC.type, VERIFY_METRIC.help,
                  ['vm'])
    for rep in reps:
        if verdicts is not None and rep.name in verdicts:
            fam.add_metric([rep.name], len(verdicts[rep.name]))
    out.append(fam)

    statuses = [(rep.name, _module_status(rep)) for rep in reps]
    for stat, sm in stat_metrics():
        fam = _family(sm.name, sm.type, sm.help or stat.help, ['vm'],
                      sm.unit)
        for vm, st in statuses:
            if not st or stat.name not in st:
                continue
            if sm.type == INFO:
                fam.add_metric([vm], {'value': st[stat.name]})
                continue
            value = _number(st[stat.name], stat.kind, sm.scale)
            if value is not None:
                fam.add_metric([vm], value)
        out.append(fam)
    return [fam for fam in out if fam.samples]


def _module_status(rep):
    mod = rep.module
    if not rep.managed or mod is None or not mod.registered:
        return None
    return mod.status


class Collector(prom_registry.Collector):
    """Collects afresh on every scrape: ``source()`` returns
    ``(host, reports, verdicts)``."""

    def __init__(self, source):
        self.source = source

    def collect(self):
        return iter(families(*self.source()))


def registry(source):
    """A registry holding only our collector (no process/GC metrics)."""
    reg = prom_registry.CollectorRegistry(auto_describe=False)
    reg.register(Collector(source))
    return reg


def render(host, reps, verdicts=None):
    """The text exposition format (0.0.4) for one set of data."""
    return exposition.generate_latest(
        registry(lambda: (host, reps, verdicts))).decode()
