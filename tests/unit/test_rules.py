# SPDX-License-Identifier: Apache-2.0
"""The rules module: each finding worded once, whoever judges.

The driver (nova's pins), the hook (the CPUs a running guest's vCPU
threads may use) and ``verify`` (a VM report) give the same TLBI-scope
finding; the hook and ``verify`` the same misalignment finding.
"""

import copy
import logging

import pytest

from nova_tlbbalance import guest_config
from nova_tlbbalance import hostfacts
from nova_tlbbalance import preconditions
from nova_tlbbalance import rules
from nova_tlbbalance.policy import Policy
from nova_tlbbalance.probes import memmap
from nova_tlbbalance.probes import verdict

import test_verdict_exporter as tve  # tests/unit is on sys.path
from fake_module import fake_module_tree

# 4 CPUs: 0-1 on die 0, 2-3 on die 1 (one cluster per die).
TOPO = {c: hostfacts.CpuIds(0, c // 2, c // 2, c) for c in range(4)}
FINDING = ('tlbbalance:tlbi_scope=die: the vCPUs %s host CPUs 1-2, which '
           'span 2 dies; the TLBI broadcast cannot be scoped')


def test_scope_one_wording_driver_hook_verify(caplog):
    strict = Policy(mode='monitor', tlbi_scope='die', strict=True)
    with pytest.raises(rules.Conflict) as exc:
        rules.check_pins({0: {1}, 1: {2}}, 2, strict, TOPO)
    assert str(exc.value).startswith(FINDING % 'are pinned to')
    assert str(exc.value).endswith('(tlbbalance:strict=true)')
    loose = Policy(mode='monitor', tlbi_scope='die', strict=False)
    with caplog.at_level(logging.WARNING):
        rules.check_pins({0: {1}, 1: {2}}, 2, loose, TOPO)
    assert FINDING % 'are pinned to' in caplog.text
    assert rules.scope_problem('die', {1, 2}, TOPO) == \
        FINDING % 'may run on'
    assert rules.scope_problem('die', {2, 3}, TOPO) is None
    rep = copy.deepcopy(tve.GOOD)
    rep.dies, rep.cpus_allowed = 2, '1-2'
    assert verdict.reasons(rep) == [FINDING % 'may run on']
    # guest_config keeps its names for the same judgments
    assert guest_config.check_pins is rules.check_pins
    assert guest_config.PolicyConflict is rules.Conflict
    assert preconditions.Unmet is rules.Unmet


def test_misalignment_one_wording_hook_verify():
    ranges = [memmap.Range(block='ram-node1', hva=0x7f0000000000,
                           length=0x200000, gpa=0x8100000)]
    hook = rules.misaligned(ranges, 2 << 20)
    rep = copy.deepcopy(tve.GOOD)
    rep.ranges[0].misalignment = 0x100000
    rep.ranges[0].gpa2hva = None
    rep.ranges[0].gpa = 0x8100000
    rep.ranges[0].block = 'ram-node1'
    rep.ranges[0].hva = 0x7f0000000000
    assert hook == verdict.reasons(rep)[:1] == [
        'misaligned: RAM block ram-node1 GPA 0x8100000 at HVA '
        '0x7f0000000000 is off by 0x100000 modulo the 2048 KiB huge page; '
        'stage 2 cannot map it huge']


def strict_host_tree(tmp_path, thp_enabled):
    """/sys with host THP ``thp_enabled`` and the module's configfs root
    (tests/fake_module.py); (its configfs root)."""
    thp = tmp_path / 'kernel' / 'mm' / 'transparent_hugepage'
    thp.mkdir(parents=True)
    (thp / 'enabled').write_text(thp_enabled)
    return fake_module_tree(tmp_path / 'configfs', vms=())


def test_strict_host(tmp_path):
    cfs = strict_host_tree(tmp_path, 'always madvise [never]\n')
    thp = tmp_path / 'kernel' / 'mm' / 'transparent_hugepage'
    pol = Policy(mode='monitor', strict=True)
    with pytest.raises(rules.Unmet, match='transparent huge pages are off'):
        preconditions.strict_host(pol, str(tmp_path), str(cfs))
    (thp / 'enabled').write_text('always [madvise] never\n')
    assert preconditions.strict_host(pol, str(tmp_path), str(cfs)) == [
        'thp madvise', 'module loaded']
    with pytest.raises(rules.Unmet, match='kernel module is not loaded'):
        preconditions.strict_host(pol, str(tmp_path), str(tmp_path / 'absent'))
    # no THP check for hugetlbfs, no module for mode off
    off = Policy(mode='off', backing='hugetlbfs', strict=True)
    assert preconditions.strict_host(
        off, str(tmp_path), str(tmp_path / 'absent')) == [
            'mode off: no module needed']
    assert rules.strict_unmet('h1', 'x') == \
        'strict policy (tlbbalance:strict=true) not met on host h1: x'


def test_strict_host_module_broken(tmp_path):
    # a module whose interface cannot be read takes no VM: refused as the
    # trait is withdrawn (modclient.Client.usable)
    cfs = strict_host_tree(tmp_path, 'always [madvise] never\n')
    (cfs / 'version').unlink()
    pol = Policy(mode='monitor', strict=True)
    with pytest.raises(rules.Unmet, match='interface version cannot be read'):
        preconditions.strict_host(pol, str(tmp_path), str(cfs))
