"""verify's reasons and the exporter's text, from synthetic VM reports."""

import copy
import dataclasses

from nova_tlbbalance import exporter
from nova_tlbbalance import modclient
from nova_tlbbalance import module_defs
from nova_tlbbalance.cli import status
from nova_tlbbalance.probes import records
from nova_tlbbalance.probes import verdict
from nova_tlbbalance.probes import vmreport

MiB = 1 << 20

HOST = records.HostFacts(
    thp='madvise', hpage_pmd_size=2 * MiB, cpus=8, dies=2, clusters=4,
    dvmbm=records.Dvmbm(enabled=True, source='kernel log'),
    module=records.ModulePresence(loaded=True, configfs='/cfs'))

GOOD = records.VmReport(
    name='vm1', managed=True, memory=256 * MiB,
    backing='anonymous immediate', page_size=2 * MiB, pid=7,
    policy=records.PolicyView(mode='balance', backing='thp',
                              tlbi_scope='die', strict=False, params={}),
    ranges=[records.RamRange(
        block='pc.ram', gpa=0, hva=0x7f0000000000, gpa2hva=0x7f0000000000,
        length=256 * MiB, misalignment=0, ambiguous=False,
        hva_source='maps')],
    aligned=True,
    coverage=records.Coverage(anon_huge=255 * MiB, hugetlb=0,
                              size=256 * MiB, coverage=255 / 256,
                              rss=256 * MiB, kernel_page=4096),
    vcpus=[records.Vcpu(vcpu=0, tid=8, accel='KVM', affinity='0',
                        pinned='0', matches_pin=True)],
    cpus_allowed='0', dies=1, clusters=1,
    stage2={'pages_4k': 160, 'pages_2m': 127},
    module=records.ModuleState(registered=True, dir='vm1', status={
        'huge_pages': '127', 'huge_limit': '128', 'load': '12.500',
        'state': 'idle', 'cpus_allowed': '0', 'pid': '7'}))


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
    assert why[3].startswith('scope wider than asked: tlbi_scope=die')
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


STUCK_STATUS = {'huge_pages': '128', 'huge_limit': '0', 'state': 'lowering',
                'pid': '7', 'limiter_stuck': '128', 'limiter_error': '-14'}


def test_limiter_stuck_is_reported():
    """A range the limiter cannot split (PROT_NONE: EFAULT) is named by
    status and fails verify; the module's own status format."""
    problem = modclient.limiter_problem(STUCK_STATUS)
    assert problem == (
        'limiter stuck: 128 huge page(s) above the limit 0 could not be '
        'split (EFAULT: Bad address); part of the guest RAM is not '
        'accessible to the limiter (made PROT_NONE?)')
    assert modclient.limiter_problem(GOOD.module.status) is None
    assert modclient.limiter_problem(
        {'limiter_stuck': '0', 'limiter_error': '-14'}) is None
    assert 'unreadable' in modclient.limiter_problem({'limiter_stuck': 'x'})

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
        '%s %s\n' % kv for kv in STUCK_STATUS.items()))

    class Dom:
        name, uuid = 'vm1', None
    rep = records.VmReport(name='vm1')
    vmreport._module(rep, Dom, 7, modclient.Client(str(tmp_path)))
    assert rep.module.registered
    assert rep.module.limiter.startswith('limiter stuck: 128')


def test_exporter_uses_stat_names_from_def():
    text = exporter.render(HOST, [GOOD], {'vm1': []})
    assert 'tlbbalance_host_dvmbm_enabled 1\n' in text
    assert 'tlbbalance_vm_huge_coverage_ratio{vm="vm1"} 0.996094' in text
    assert 'tlbbalance_vm_stage2_pages{size="pages_2m",vm="vm1"} 127' in text
    assert 'tlbbalance_huge_pages{vm="vm1"} 127' in text
    assert 'tlbbalance_load{vm="vm1"} 12.5' in text
    assert 'tlbbalance_state_info{value="idle",vm="vm1"} 1' in text
    assert 'tlbbalance_vm_verify_failures{vm="vm1"} 0' in text
    kinds = {s.name: s.kind for s in module_defs.stats()}
    assert kinds['load'] == 'milli' and kinds['state'] == 'str'
    # every sample line belongs to a declared metric
    declared = {ln.split()[2] for ln in text.splitlines()
                if ln.startswith('# TYPE')}
    for ln in text.splitlines():
        if not ln.startswith('#'):
            assert ln.split('{')[0].split(' ')[0] in declared, ln
    assert exporter._labels({'vm': 'a"b\\c'}) == '{vm="a\\"b\\\\c"}'


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
