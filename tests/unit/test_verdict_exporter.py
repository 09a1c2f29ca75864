# SPDX-License-Identifier: Apache-2.0
"""verify's reasons and the exporter's text, from synthetic VM reports."""

import copy
import dataclasses
import os

from prometheus_client.openmetrics import exposition as om_exposition
from prometheus_client.openmetrics import parser as om_parser
from prometheus_client import parser as prom_parser
import pytest

from nova_tlbbalance import exporter
from nova_tlbbalance import policy
from nova_tlbbalance import modclient
from nova_tlbbalance import module_defs
from nova_tlbbalance import module_status
from nova_tlbbalance import record
from nova_tlbbalance.cli import status
from nova_tlbbalance.probes import records
from nova_tlbbalance.probes import verdict
from nova_tlbbalance.probes import vmreport

MiB = 1 << 20
TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))

HOST = records.HostFacts(
    thp='madvise', hpage_pmd_size=2 * MiB, cpus=8, dies=2, clusters=4,
    dvmbm=records.Dvmbm(enabled=True, source='kernel log'),
    module=records.ModulePresence(loaded=True, configfs='/cfs'))


def typed(text_values):
    """A status as the module prints it (``key value`` lines), typed by
    the one reader of that text."""
    return module_status.parse(''.join('%s %s\n' % kv
                                       for kv in text_values.items()))


UUID = '8b9e5b8e-2f4c-4f35-9a52-3c1d8f0e7a11'

GOOD = records.VmReport(
    name='vm1', uuid=UUID, managed=True, memory=256 * MiB,
    backing='anonymous immediate', page_size=2 * MiB, pid=7,
    policy=policy.Policy(mode='balance', backing='thp', tlbi_scope='die',
                         strict=False, prefault=True, params={}),
    ranges=[records.RamRange(
        block='pc.ram', gpa=0, hva=0x7f0000000000, gpa2hva=0x7f0000000000,
        length=256 * MiB, misalignment=0, ambiguous=False,
        hva_source='maps')],
    aligned=True,
    coverage=records.Coverage(anon_huge=255 * MiB, hugetlb=0,
                              size=256 * MiB, coverage=255 / 256,
                              rss=256 * MiB, kernel_page=4096,
                              resident_coverage=255 / 256),
    vcpus=[records.Vcpu(vcpu=0, tid=8, accel='KVM', affinity='0',
                        pinned='0', matches_pin=True)],
    cpus_allowed='0', dies=1, clusters=1,
    stage2={'pages_4k': 160, 'pages_2m': 127},
    module=records.ModuleState(registered=True, dir='vm1', status=typed({
        'huge_pages': '127', 'huge_limit': '128', 'load': '12.500',
        'state': 'idle', 'cpus_allowed': '0', 'pid': '7'})))


def test_good_vm_passes():
    assert verdict.reasons(GOOD) == []
    unmanaged = dataclasses.replace(GOOD, managed=False, policy=None,
                                    aligned=False)
    assert verdict.reasons(unmanaged) == []


def test_each_failure_is_named():
    bad = copy.deepcopy(GOOD)
    bad.ranges[0].misalignment = 0x1000
    bad.ranges[0].gpa2hva = 0x7f0000001000
    bad.coverage.coverage = 0.5
    bad.dies = 2
    bad.cpus_allowed = '0,7'
    bad.vcpus[0].affinity, bad.vcpus[0].matches_pin = '0,7', False
    bad.module = records.ModuleState(registered=False,
                                     reason='module not loaded')
    why = verdict.reasons(bad)
    assert len(why) == 6, why
    assert why[0].startswith('misaligned: RAM block pc.ram GPA 0x0 at HVA '
                             '0x7f0000001000 is off by 0x1000')
    assert 'not at 0x7f0000000000 as read from /proc' in why[1]
    assert why[2].startswith('under-covered: 50.0 %')
    assert why[3] == ('tlbbalance:tlbi_scope=die: the vCPUs may run on host '
                      'CPUs 0,7, which span 2 dies; the TLBI broadcast '
                      'cannot be scoped')
    assert 'pinned to 0' in why[4]
    assert why[5] == ('not registered with the tlbbalance module: module '
                      'not loaded')
    assert len(verdict.reasons(bad, min_coverage=0.4,
                               need_module=False)) == 4


def test_status_table():
    text = status.table(HOST, [GOOD])
    assert 'DVMBM enabled (kernel log), module loaded' in text
    line = text.splitlines()[2].split()
    assert line[:5] == ['vm1', 'balance/thp/die', 'anonymous', 'immediate',
                        '99.6%']
    assert 'pages_2m=127' in text and 'idle 127/128' in text


STUCK_TEXT = {'huge_pages': '128', 'huge_limit': '0', 'state': 'lowering',
              'pid': '7', 'limiter_stuck': '128', 'limiter_error': '-14'}
STUCK_STATUS = typed(STUCK_TEXT)


def test_limiter_stuck_is_reported():
    """A range the limiter cannot split (PROT_NONE: EFAULT) is named by
    status and fails verify; the module's own status format."""
    problem = module_status.limiter_problem(STUCK_STATUS)
    assert problem == (
        'limiter stuck: 128 huge page(s) above the limit 0 could not be '
        'split (EFAULT: Bad address); part of the guest RAM is not '
        'accessible to the limiter (made PROT_NONE?)')
    assert module_status.limiter_problem(GOOD.module.status) is None
    assert module_status.limiter_problem(
        typed({'limiter_stuck': '0', 'limiter_error': '-14'})) is None
    odd = typed({'limiter_stuck': 'x', 'limiter_error': '-14'})
    assert module_status.limiter_problem(odd) is None
    assert odd.problems == [
        "module status: limiter_stuck 'x' is not an integer"]

    rep = copy.deepcopy(GOOD)
    rep.module.status = STUCK_STATUS
    rep.module.limiter = problem
    assert verdict.reasons(rep) == [problem]
    text = status.table(HOST, [rep])
    assert 'lowering 128/0 STUCK' in text
    assert 'vm1: limiter stuck: 128 huge page(s)' in text


def test_vmreport_names_a_stuck_limiter(tmp_path):
    vm = tmp_path / 'vms' / 'vm1'
    vm.mkdir(parents=True)
    vm.joinpath('status').write_text(''.join(
        '%s %s\n' % kv for kv in STUCK_TEXT.items()))

    class Dom:
        name, uuid = 'vm1', None
    rep = records.VmReport(name='vm1')
    vmreport._module(rep, Dom, 7, modclient.Client(str(tmp_path)))
    assert rep.module.registered
    assert rep.module.limiter.startswith('limiter stuck: 128')


def test_vmreport_names_a_status_line_it_cannot_type(tmp_path):
    vm = tmp_path / 'vms' / 'vm1'
    vm.mkdir(parents=True)
    vm.joinpath('status').write_text(''.join(
        '%s %s\n' % kv for kv in dict(STUCK_TEXT, huge_pages='many').items()))

    class Dom:
        name, uuid = 'vm1', None
    rep = records.VmReport(name='vm1')
    vmreport._module(rep, Dom, 7, modclient.Client(str(tmp_path)))
    assert rep.module.registered
    assert 'huge_pages' not in rep.module.status
    assert rep.errors == ["module status: huge_pages 'many' is not an "
                          "unsigned integer"]


# A registered VM's status as the module prints it: every stat of
# tlbb_stats.def (module_defs), values in the module's own units.
FULL_STATUS = typed({
    'huge_pages': '96', 'huge_limit': '100', 'total_pages': '128',
    'refills_huge': '43600', 'refills_small': '8',
    'refills_huge_total': '872000', 'refills_small_total': '160',
    'load': '109.020', 'load_count': '3', 'imbalance': '174400.000',
    'dominant': 'huge', 'state': 'lowering', 'splits': '32',
    'restores': '2', 'ticks': '20', 'backend': 'inject',
    'cpus_allowed': '0-1', 'cpus_ran': '1', 'pid': '7',
})


def _families(text, parser=prom_parser):
    return {f.name: f for f in parser.text_string_to_metric_families(text)}


def _sample(fam, name, **labels):
    found = [s for s in fam.samples if s.name == name and s.labels == labels]
    assert len(found) == 1, (name, labels, fam.samples)
    return found[0].value


def test_exporter_types_and_values_by_prometheus_parser():
    """The exposition, read back with prometheus_client's own parser:
    counters for what only grows (with _total), gauges in base units
    (ratios 0-1, bytes), info for the text stats."""
    rep = copy.deepcopy(GOOD)
    rep.module.status = FULL_STATUS
    assert set(FULL_STATUS) - {'pid'} == {
        s.name for s in module_defs.stats()}
    text = exporter.render(HOST, [rep], {'vm1': ['one reason']})
    fams = _families(text)
    vm = {'vm': 'vm1', 'uuid': UUID}

    def check(name, typ, want, sample=None, **labels):
        fam = fams[name]
        assert fam.type == typ, (name, fam.type)
        got = _sample(fam, sample or name, **labels)
        assert got == pytest.approx(want), (name, got, want)

    check('tlbbalance_host_module_loaded', 'gauge', 1)
    check('tlbbalance_host_dvmbm_enabled', 'gauge', 1)
    check('tlbbalance_host_hpage_pmd_bytes', 'gauge', 2 * MiB)
    check('tlbbalance_vm_managed', 'gauge', 1, **vm)
    check('tlbbalance_vm_ram_bytes', 'gauge', 256 * MiB, **vm)
    check('tlbbalance_vm_huge_bytes', 'gauge', 255 * MiB, **vm)
    check('tlbbalance_vm_huge_coverage_ratio', 'gauge', 255 / 256, **vm)
    check('tlbbalance_vm_huge_resident_coverage_ratio', 'gauge', 255 / 256,
          **vm)
    check('tlbbalance_vm_misaligned_ranges', 'gauge', 0, **vm)
    check('tlbbalance_vm_stage2_pages', 'gauge', 127, size='pages_2m', **vm)
    check('tlbbalance_vm_stage2_pages', 'gauge', 160, size='pages_4k', **vm)
    check('tlbbalance_vm_vcpus', 'gauge', 1, **vm)
    check('tlbbalance_vm_vcpu_pin_mismatch', 'gauge', 0, **vm)
    check('tlbbalance_vm_registered', 'gauge', 1, **vm)
    check('tlbbalance_vm_verify_failures', 'gauge', 1, **vm)
    check('tlbbalance_huge_pages', 'gauge', 96, **vm)
    check('tlbbalance_huge_limit', 'gauge', 100, **vm)
    check('tlbbalance_total_pages', 'gauge', 128, **vm)
    check('tlbbalance_refills_huge_last_tick', 'gauge', 43600, **vm)
    check('tlbbalance_refills_small_last_tick', 'gauge', 8, **vm)
    check('tlbbalance_refills_huge', 'counter', 872000,
          'tlbbalance_refills_huge_total', **vm)
    check('tlbbalance_refills_small', 'counter', 160,
          'tlbbalance_refills_small_total', **vm)
    check('tlbbalance_splits', 'counter', 32, 'tlbbalance_splits_total', **vm)
    check('tlbbalance_restores', 'counter', 2, 'tlbbalance_restores_total',
          **vm)
    check('tlbbalance_ticks', 'counter', 20, 'tlbbalance_ticks_total', **vm)
    # 109.020 permille of vCPU time
    check('tlbbalance_load_ratio', 'gauge', 0.10902, **vm)
    check('tlbbalance_imbalance', 'gauge', 174400.0, **vm)
    # C_L: not tlbbalance_load_count (_count is reserved for histograms
    # and summaries; promtool check metrics refuses it)
    check('tlbbalance_load_sustain_ticks', 'gauge', 3, **vm)
    # text with a fixed set of values: one series per value, 1 for the
    # current one (no new series at a state change)
    check('tlbbalance_controller_state', 'gauge', 1, state='lowering', **vm)
    check('tlbbalance_controller_state', 'gauge', 0, state='idle', **vm)
    check('tlbbalance_dominant_group', 'gauge', 1, group='huge', **vm)
    check('tlbbalance_dominant_group', 'gauge', 0, group='small', **vm)
    # CPU lists: how many CPUs
    check('tlbbalance_cpus_allowed', 'gauge', 2, **vm)
    check('tlbbalance_cpus_ran', 'gauge', 1, **vm)
    # the counting backend changes only at registration: info
    check('tlbbalance_backend_info', 'gauge', 1, value='inject', **vm)
    # the old names are gone (docs/cli.md lists old -> new)
    for old in ('tlbbalance_load', 'tlbbalance_refills_huge_total',
                'tlbbalance_splits_total', 'tlbbalance_load_count',
                'tlbbalance_state_info', 'tlbbalance_cpus_ran_info'):
        assert old not in fams
    # unregistered, unmanaged VMs have no module stats
    bare = dataclasses.replace(GOOD, name='vm2', managed=False, module=None)
    fams = _families(exporter.render(HOST, [bare]))
    assert 'tlbbalance_huge_pages' not in fams
    assert _sample(fams['tlbbalance_vm_managed'], 'tlbbalance_vm_managed',
                   vm='vm2', uuid=UUID) == 0
    assert 'tlbbalance_vm_verify_failures' not in fams


def test_exporter_openmetrics_keeps_info_and_counter_types():
    rep = copy.deepcopy(GOOD)
    rep.module.status = FULL_STATUS
    reg = exporter.registry(lambda: (HOST, [rep], {'vm1': []}))
    text = om_exposition.generate_latest(reg).decode()
    fams = _families(text, om_parser)
    assert fams['tlbbalance_backend'].type == 'info'
    assert _sample(fams['tlbbalance_backend'], 'tlbbalance_backend_info',
                   vm='vm1', uuid=UUID, value='inject') == 1
    assert fams['tlbbalance_refills_huge'].type == 'counter'
    assert fams['tlbbalance_vm_ram_bytes'].unit == 'bytes'
    assert fams['tlbbalance_vm_huge_coverage_ratio'].unit == 'ratio'
    assert fams['tlbbalance_load_ratio'].unit == 'ratio'


def test_exporter_table_covers_every_module_stat(monkeypatch):
    """A statistic added to tlbb_stats.def without a line in
    STAT_METRICS is an error naming it, not a silently dropped metric."""
    assert [s.name for s, _ in exporter.stat_metrics()] == [
        s.name for s in module_defs.stats()]
    table = dict(exporter.STAT_METRICS)
    del table['splits']
    monkeypatch.setattr(exporter, 'STAT_METRICS', table)
    with pytest.raises(LookupError, match="'splits' of tlbb_stats.def"):
        exporter.render(HOST, [GOOD])


def test_stat_types_and_units_come_from_the_def(monkeypatch):
    """tlbb_stats.def's type and unit columns decide the metric's type and
    unit: the exporter restates neither. A stat made a gauge in the table
    (here: splits) is exposed as one; a unit the exporter has no base unit
    for is an error naming the stat."""
    stats = {s.name: s for s in module_defs.stats()}
    assert (stats['splits'].type, stats['splits'].unit) == ('counter',
                                                            'pages')
    assert (stats['load'].type, stats['load'].unit) == ('gauge', 'permille')
    assert stats['backend'].type == 'info'
    rep = copy.deepcopy(GOOD)
    rep.module.status = FULL_STATUS

    def families():
        reg = exporter.registry(lambda: (HOST, [rep], {'vm1': []}))
        return _families(om_exposition.generate_latest(reg).decode(),
                         om_parser)
    fams = families()
    for stat, sm in exporter.stat_metrics():
        want = {'counter': 'counter', 'gauge': 'gauge',
                'info': 'info'}[stat.type]
        assert fams[sm.name].type == want, stat.name
    assert fams['tlbbalance_load_ratio'].unit == 'ratio'
    assert fams['tlbbalance_splits'].type == 'counter'

    def with_splits(**columns):
        table = tuple(type(s)(**dict(record.asdict(s), **columns))
                      if s.name == 'splits' else s
                      for s in module_defs.stats())
        monkeypatch.setattr(module_defs, 'stats', lambda: table)
    with_splits(type='gauge')
    assert families()['tlbbalance_splits'].type == 'gauge'
    with_splits(unit='furlongs')
    with pytest.raises(LookupError, match="'splits' of tlbb_stats.def: "
                                          "unit 'furlongs'"):
        exporter.render(HOST, [rep])


def test_stats_def_columns_checked(monkeypatch):
    """A type or unit tlbb_stats.def does not define is an error naming
    the stat and the column, not a metric of a made-up type."""
    good = module_defs._lines('tlbb_stats.def')
    for bad, column in (('TLBB_STAT(splits, u64, rate, pages, "x")', 'type'),
                        ('TLBB_STAT(splits, u64, counter, furlongs, "x")',
                         'unit'),
                        ('TLBB_STAT(splits, u32, counter, pages, "x")',
                         'kind')):
        monkeypatch.setattr(module_defs, '_lines',
                            lambda name, bad=bad: good + [bad])
        with pytest.raises(RuntimeError,
                           match=r'tlbb_stats.def: splits: %s ' % column):
            module_defs.stats.__wrapped__()


def test_state_change_keeps_the_same_series():
    """A controller state change moves the 1 between series of one
    family; it does not start a new series (as the info metric did)."""
    def series(state):
        rep = copy.deepcopy(GOOD)
        rep.module.status = dict(FULL_STATUS, state=state)
        fams = _families(exporter.render(HOST, [rep]))
        return {tuple(sorted(s.labels.items())): s.value
                for f in fams.values() for s in f.samples}
    a, b = series('lowering'), series('idle')
    assert set(a) == set(b)
    assert a != b


def test_enum_values_are_the_modules():
    """ENUM_VALUES lists every state and group name the module prints."""
    import re
    src = {}
    for rel in ('kernel-module/core/tlbb_ctrl.c', 'kernel-module/tlbb_vm.c'):
        with open(os.path.join(TOP, rel)) as f:
            src[rel] = f.read()

    def names(rel, func):
        body = re.search(r'\n[^\n]*\b%s\([^)]*\)\n\{(.*?)\n\}' % func,
                         src[rel], re.S).group(1)
        return set(re.findall(r'return "([a-z_]+)";', body)) - {'unknown'}
    states = (names('kernel-module/core/tlbb_ctrl.c', 'tlbb_state_name')
              | names('kernel-module/tlbb_vm.c', 'tlbb_vm_state_name'))
    assert states == set(exporter.ENUM_VALUES['state'][1])
    assert names('kernel-module/core/tlbb_ctrl.c', 'tlbb_group_name') == \
        set(exporter.ENUM_VALUES['dominant'][1])


def lazy_vm(anon_huge, rss):
    """GOOD, not pre-faulted (prefault=false): 256 MiB guest RAM of which
    ``rss`` bytes are resident, ``anon_huge`` of them huge."""
    rep = copy.deepcopy(GOOD)
    rep.policy.prefault = False
    rep.backing = 'anonymous'
    rep.coverage = records.Coverage(
        size=256 * MiB, anon_huge=anon_huge, hugetlb=0, rss=rss,
        kernel_page=4096, coverage=anon_huge / (256 * MiB),
        resident_coverage=anon_huge / rss if rss else None)
    return rep


def test_prefault_false_is_judged_on_resident_ram():
    # 40 MiB touched, 39 MiB of it huge: 15 % of the RAM, 97.5 % of the
    # resident RAM. Not a fault for a VM that is not pre-faulted.
    rep = lazy_vm(39 * MiB, 40 * MiB)
    assert verdict.reasons(rep, host=HOST) == []
    assert status.row(rep)[3] == '15.2% (res 97.5%)'
    # nothing resident yet: nothing to judge
    assert verdict.reasons(lazy_vm(0, 0), host=HOST) == []
    # the same figures with pre-faulting on are under-covered
    eager = copy.deepcopy(rep)
    eager.policy.prefault = True
    eager.backing = 'anonymous immediate'
    assert verdict.reasons(eager, host=HOST)[0].startswith(
        'under-covered: 15.2 % of guest RAM')
    assert status.row(eager)[3] == '15.2%'


def test_prefault_false_low_resident_coverage_is_named():
    rep = lazy_vm(10 * MiB, 40 * MiB)
    never = dataclasses.replace(HOST, thp='never')
    assert verdict.reasons(rep, host=never) == [
        'under-covered: 25.0 % of the resident guest RAM is on huge pages '
        '(AnonHugePages), below 95.0 % (tlbbalance:prefault=false); host '
        'transparent huge pages are off (/sys/kernel/mm/transparent_hugepage'
        '/enabled: never)']
    # on-demand allocation is what the flavor asked: not named as a cause
    assert verdict.coverage_causes(rep, rep.policy, HOST) == []


def test_undercovered_names_the_cause():
    """Host THP `never`: the reason says so, not only a
    figure; likewise on-demand allocation."""
    low = copy.deepcopy(GOOD)
    low.coverage.coverage = 0.0
    never = dataclasses.replace(HOST, thp='never')
    why = verdict.reasons(low, host=never)
    assert why == ['under-covered: 0.0 % of guest RAM is on huge pages '
                   '(AnonHugePages), below 95.0 %; host transparent huge '
                   'pages are off (/sys/kernel/mm/transparent_hugepage/'
                   'enabled: never)'], why
    low.backing = 'anonymous'
    why = verdict.reasons(low, host=HOST)
    assert why[0].endswith("; guest RAM is allocated on demand (no "
                           "<allocation mode='immediate'/>): only what the "
                           "guest touched is backed"), why
    # hugetlbfs backing: neither THP nor allocation is the cause
    huge = copy.deepcopy(low)
    huge.policy.backing = 'hugetlbfs'
    huge.backing = 'hugetlbfs 2048K'
    assert verdict.coverage_causes(huge, huge.policy, never) == []
