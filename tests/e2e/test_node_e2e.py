# SPDX-License-Identifier: Apache-2.0
"""End to end, in a compute node booted under QEMU (docs/node.md).

Order matters (pytest runs a file top to bottom): the module-unloaded case
comes last. The imbalance is fed through the module's injection backend:
no PMU here counts TLB refills by page size (the tests check that the
module says so: ``backend inject``, ``inject_enabled 1``).
"""

import contextlib
import json
import re
import time

import pytest

import scenario
from tlbbwait import WaitTimeout, wait_until

MIB = 1024 * 1024
VM = 'e2e-balance'
VM_MIB = 256
FLOOR = 32
# A tagged flavor: balance mode, THP backing; a short sustain period and a
# step of 8 pages so the controller acts within seconds; a floor so the
# limit stops at a known value.
# Lazy, the default (tlbbalance:prefault false): the guest's RAM is faulted
# as it touches it, so the controller splits the slots the guest touched
# and collapse counts the others untouched (the kernel answers EINVAL for
# a slot with nothing mapped; not a failure: exit status 0).
SPECS = {'mode': 'balance', 'backing': 'thp',
         'sustain_ms': '1000', 'step_pages': '8',
         'floor_pages': str(FLOOR)}


def test_node_has_nested_kvm_module_hook_and_libvirtd(node):
    assert node.check('test -c /dev/kvm && echo yes').strip() == 'yes'
    assert 'Nested Paging enabled' in node.check('dmesg')
    assert re.search(r'^tlbbalance ', node.check('lsmod'), re.M)
    assert node.check('cat /sys/kernel/config/tlbbalance/version'
                      ).strip() == '1'
    assert node.check('cat /sys/module/tlbbalance/parameters/allow_inject'
                      ).strip() == 'Y'
    hook = node.check('cat /etc/libvirt/hooks/qemu.d/tlbbalance')
    assert 'nova_tlbbalance.hook.main' in hook
    assert 'Running hypervisor: QEMU' in node.check('virsh version')


@pytest.fixture
def balanced_vm(node, payload):
    """The tagged VM, started once per node (node.per_boot): a test rerun
    on a new node after the last one died starts it again there."""
    def start():
        xml = scenario.start_vm(node, VM, payload, specs=SPECS,
                                mem_mib=VM_MIB)
        scenario.wait_payload(node, VM, timeout=300, passes=8)
        return xml
    return node.per_boot('balanced_vm', start)


def test_domain_xml_comes_from_the_plugin(balanced_vm):
    xml = balanced_vm
    assert "type=\"kvm\"" in xml or "type='kvm'" in xml
    assert 'tlbbalance:policy' in xml and 'mode="balance"' in xml
    assert '<source type="anonymous"/>' in xml
    assert 'name="floor_pages" value="%d"' % FLOOR in xml


def test_hook_registered_vm_with_pid_vcpus_and_ranges(node, balanced_vm):
    st = scenario.module_status(node, VM)
    assert st is not None, 'no configfs directory for %s' % VM
    pid = scenario.qemu_pid(node, VM)
    assert st['pid'] == str(pid)
    assert st['mode'] == 'balance'
    vdir = '%s/vms/%s' % (scenario.CONFIGFS, VM)
    # The hook (modclient.register) registered it with one staged commit.
    assert node.check('cat %s/commit' % vdir).split() == [
        'idle', 'last', '0', 'committed'], node.check('cat %s/commit' % vdir)
    assert st['staging'] == '0'
    # vCPU threads: the module's list is QEMU's "CPU n/KVM" threads.
    listed = node.check('cat %s/vcpu_tids' % vdir).strip()
    tids = set(re.split(r'[\s,]+', listed))
    comm = node.check('grep -H . /proc/%d/task/*/comm' % pid)
    kvm_tids = set(re.findall(r'/task/(\d+)/comm:CPU \d+/KVM', comm))
    assert kvm_tids and tids == kvm_tids
    # RAM range: what QEMU itself says is the HVA of GPA 0.
    ranges = [ln.split() for ln in node.check(
        'cat %s/ranges' % vdir).splitlines() if ln.strip()]
    assert len(ranges) == 1
    hva, length, gpa = (int(x, 0) for x in ranges[0])
    out = node.check(['virsh', 'qemu-monitor-command', VM, '--hmp',
                      'gpa2hva 0'])
    assert hva == int(re.search(r'is (0x[0-9a-f]+)', out).group(1), 16)
    assert (gpa, length) == (0, VM_MIB * MIB)
    assert int(st['total_pages']) == VM_MIB // 2


def test_status_json_reports_alignment_coverage_and_real_stage2(
        node, balanced_vm):
    data = json.loads(node.check('tlbbalance status --json'))
    rep = {v['name']: v for v in data['vms']}[VM]
    assert rep['managed'] and rep['policy']['mode'] == 'balance'
    assert rep['accel'] == 'KVM'
    assert rep['aligned'] is True
    assert rep['coverage']['coverage'] >= 0.9, rep['coverage']
    assert rep['stage2']['pages_2m'] > 0, rep['stage2']
    assert rep['module']['registered'] is True
    # The same figure straight from QMP query-stats.
    assert scenario.query_stats(node, VM)['pages_2m'] > 0
    res = node.run('tlbbalance verify %s' % VM)
    assert res.rc == 0, res.stdout + res.stderr


def _host_huge_pages(node):
    """The guest RAM's huge pages on the host (smaps, tlbbalance status)."""
    data = json.loads(node.check('tlbbalance status --json'))
    cov = {v['name']: v for v in data['vms']}[VM]['coverage']
    return cov['anon_huge'] // (2 * MIB)


def test_controller_fed_an_imbalance_lowers_limit_and_pages_2m(
        node, balanced_vm):
    before = scenario.query_stats(node, VM)['pages_2m']
    huge0 = _host_huge_pages(node)
    st = scenario.module_status(node, VM)
    assert int(st['huge_limit']) == int(st['total_pages'])
    # The paper's mcf case: huge-TLB refills ~2.18 M/s, small < 450/s.
    scenario.inject(node, VM, 2180000, 400)
    rows = []

    def at_floor():
        rows.extend(scenario.sample(node, VM, 8, every=0.5))
        return int(rows[-1].get('huge_limit', -1)) == FLOOR and \
            rows[-1].get('pages_2m', 1 << 30) <= FLOOR
    # On timeout the checks below say which figure missed the floor.
    with contextlib.suppress(WaitTimeout):
        wait_until('N_hl and pages_2m at the floor %d' % FLOOR, at_floor,
                   180, 0.01)
    scenario.inject_off(node, VM)
    last = rows[-1]
    assert last['backend'] == 'inject' and last['inject_enabled'] == '1'
    assert int(last['huge_limit']) == FLOOR, last
    # every huge page the lazy guest faulted, down to the floor
    assert int(last['splits']) >= huge0 - FLOOR, (huge0, last)
    assert last['pages_2m'] <= FLOOR < before, (before, last)
    after = scenario.query_stats(node, VM)['pages_2m']
    assert after <= FLOOR < before
    # The guest kept running and its memory is intact.
    assert scenario.payload_errors(node, VM) == 0


def test_collapse_restores_coverage_after_the_limit_is_lifted(
        node, balanced_vm):
    """Coverage restored on purpose: ``tlbbalance collapse`` (process_madvise
    MADV_COLLAPSE, nova_tlbbalance/collapse.py) forms no huge page above
    the module's limit while it holds; once mode off lifts the limit it
    collapses the guest's RAM at once instead of at khugepaged's pace
    (its defaults: 640 s per GiB)."""
    st = scenario.module_status(node, VM)
    limit = int(st['huge_limit'])
    assert limit < VM_MIB // 2, st
    res = node.run('tlbbalance collapse --vm %s --json' % VM, timeout=300)
    held = json.loads(res.stdout)
    assert held['limit'] == limit and held['huge_pages'] <= limit, held
    node.check('echo off > %s/vms/%s/mode' % (scenario.CONFIGFS, VM))
    res = node.run('tlbbalance collapse --vm %s --json --cpu-share 1' % VM,
                   timeout=300)
    out = json.loads(res.stdout)
    print('collapse after the lift: %s' % out)
    assert res.rc == 0 and out['limit'] is None, res.stdout + res.stderr
    assert not out['refused'], out
    # the slots the lazy guest touched are huge again; the others untouched
    touched = out['slots'] - out['untouched']
    assert touched >= VM_MIB // 4 and out['huge_pages'] >= 0.99 * touched, \
        out
    # The guest kept running and its memory is intact.
    assert scenario.payload_errors(node, VM) == 0


def test_wait_payload_timeout_explains_a_stalled_guest(node, balanced_vm):
    """A guest that stops making progress (here: paused by libvirt)
    makes wait_payload fail with the evidence of what it was doing: two
    snapshots of its vCPU thread and registers (EIP not moving), KVM's
    fault and exit counters, the node's THP and compaction counters.
    (A lazy guest once printed 'ready' and never 'touched' in CI; the
    next such failure explains itself.)"""
    node.check('virsh -q suspend %s' % VM)
    try:
        with pytest.raises(scenario.ScenarioError) as err:
            scenario.wait_payload(node, VM, timeout=2, passes=1 << 40)
    finally:
        node.check('virsh -q resume %s' % VM)
    msg = str(err.value)
    assert 'timed out after 2 s' in msg, msg
    assert 'stall evidence for %s' % VM in msg, msg
    assert re.search(r'domain paused', msg), msg
    snaps = msg.split('--- snapshot ')[1:]
    assert len(snaps) == 2, msg
    eips = [re.search(r'EIP=([0-9a-f]+)', s) for s in snaps]
    assert all(eips) and eips[0].group(1) == eips[1].group(1), msg
    for s in snaps:
        assert re.search(r'CPU 0/KVM +state [SD] ', s), msg
        # where in the payload (its ELF's symbols): paused anywhere
        assert re.search(r'EIP [0-9a-f]+ is in \w+\+0x', s), msg
        assert re.search(r'kvm exits=\d+ pf_taken=\d+ pf_fixed=\d+', s), msg
    for needle in ('thp defrag: ', 'thp_fault_alloc=', 'compact_stall=',
                   'AnonHugePages', 'virtlogd pid', 'serial log '):
        assert needle in msg, (needle, msg)
    assert re.search(r'chardevs: .*serial0: filename=file', msg), msg


def test_destroy_unregisters_vm(node, balanced_vm):
    node.check('virsh -q destroy %s' % VM, timeout=120)
    wait_until('vms/%s gone from the module' % VM,
               lambda: scenario.module_status(node, VM) is None, 60, 1,
               error=AssertionError)
    node.check('virsh -q undefine %s' % VM)


def _memfd_backing(xml):
    """The plugin's THP backing (anonymous) swapped for a shared memfd:
    the one RAM backend QEMU aligns only to 4 KiB, which the misalign shim
    can place (QEMU aligns anonymous RAM to 2 MiB itself)."""
    anon = '<source type="anonymous"/>'
    assert anon in xml
    return xml.replace(anon, '<source type="memfd"/>\n'
                             '    <access mode="shared"/>')


def test_misaligned_vm_is_reported_and_gets_no_huge_stage2(
        node, payload, misalign_so):
    """Same guest twice on a memfd with shmem THP: RAM placed on a 2 MiB
    boundary, and 4 KiB off one (an LD_PRELOAD shim given to QEMU through
    <qemu:commandline><qemu:env>). Only the misaligned one lacks huge
    stage-2 mappings, and verify names it."""
    mib = 128
    node.check('echo advise > '
               '/sys/kernel/mm/transparent_hugepage/shmem_enabled')
    vms = {'e2e-memfd-aligned': 0, 'e2e-misaligned': 4096}
    for name, shift in vms.items():
        scenario.start_vm(node, name, payload, mem_mib=mib,
                          specs={'mode': 'monitor', 'backing': 'thp'},
                          edit=_memfd_backing,
                          env={'LD_PRELOAD': misalign_so,
                               'TLBB_MISALIGN_LEN': str(mib * MIB + 4096),
                               'TLBB_MISALIGN_SHIFT': str(shift)})
    try:
        for name in vms:
            scenario.wait_payload(node, name, timeout=300, passes=4)
        bad = scenario.query_stats(node, 'e2e-misaligned')
        good = scenario.query_stats(node, 'e2e-memfd-aligned')
        res = node.run('tlbbalance verify e2e-misaligned')
        data = json.loads(node.check('tlbbalance status --json'))
        rep = {v['name']: v for v in data['vms']}
        facts = {'verify': (res.rc, res.stdout), 'misaligned': bad,
                 'aligned': good,
                 'ranges': {n: rep[n].get('ranges') for n in vms}}
        assert res.rc == 1, facts
        assert re.search(r'misaligned: .* off by 0x1000 ', res.stdout), facts
        assert rep['e2e-misaligned']['aligned'] is False, facts
        assert rep['e2e-memfd-aligned']['aligned'] is True, facts
        assert bad['pages_2m'] == 0 and bad['pages_4k'] > 0, facts
        assert good['pages_2m'] > 0, facts
    finally:
        for name in vms:
            node.run('virsh -q destroy %s; virsh -q undefine %s'
                     % (name, name), timeout=120)


def test_module_reload_under_running_vms_then_reconcile(node, payload):
    """The real module unloaded and loaded again with two managed VMs
    running: ``tlbbalance reconcile`` registers both again (through the
    staged commit) within 10 s of the load, the same QEMU processes, and
    a second run changes nothing."""
    vms = {'e2e-rec-a': {'mode': 'monitor', 'backing': 'thp'},
           'e2e-rec-b': {'mode': 'balance', 'backing': 'thp',
                         'samples': '6'}}
    try:
        for name, specs in vms.items():
            scenario.start_vm(node, name, payload, specs=specs, mem_mib=64)
        for name in vms:
            scenario.wait_payload(node, name, timeout=300)
        pids = {n: scenario.qemu_pid(node, n) for n in vms}
        for name in vms:
            assert scenario.module_status(node, name)['pid'] == \
                str(pids[name])
        for d in node.check('ls %s/vms' % scenario.CONFIGFS).split():
            node.check('echo off > %s/vms/%s/mode; rmdir %s/vms/%s'
                       % (scenario.CONFIGFS, d, scenario.CONFIGFS, d))
        node.check('rmmod tlbbalance')
        node.check('insmod %s %s' % (node.ko, node.module_params))
        t0 = time.monotonic()
        out = node.check('tlbbalance reconcile --json', timeout=120)
        took = time.monotonic() - t0
        doc = json.loads(out)
        got = {o['domain']: o for o in doc['outcomes']}
        print('module reloaded; reconcile registered %s in %.1f s (pids '
              'before and after: %s)' % (sorted(vms), took, pids))
        assert doc['errors'] == 0, doc
        for name in vms:
            assert got.get(name, {}).get('action') == 'registered', doc
            st = scenario.module_status(node, name)
            assert st['pid'] == str(pids[name]), st
            assert st['mode'] == vms[name]['mode'], st
            assert scenario.qemu_pid(node, name) == pids[name]
            assert node.check('cat %s/vms/%s/commit' % (
                scenario.CONFIGFS, name)).split() == [
                    'idle', 'last', '0', 'committed']
        assert scenario.module_status(node, 'e2e-rec-b')['samples'] == '6'
        # Not a performance goal (the load decides it: 3.6-9.6 s in
        # earlier runs, 10.4 s at load average 9, 4.0 s alone): a bound
        # three times the worst seen, past which reconcile is stuck on
        # something (a domain's monitor, a configfs write), not slow.
        assert took <= 30, 'reconcile took %.1f s' % took
        again = json.loads(node.check('tlbbalance reconcile --json',
                                      timeout=120))
        assert (again['changed'], again['errors']) == (0, 0), again
    finally:
        for name in vms:
            node.run('virsh -q destroy %s; virsh -q undefine %s'
                     % (name, name), timeout=120)


def test_vm_started_without_module_runs_unmanaged(node, payload):
    name = 'e2e-nomodule'
    for d in node.check('ls %s/vms' % scenario.CONFIGFS).split():
        # a VM dir is pinned until its mode is off (docs/kernel-module.md)
        node.check('echo off > %s/vms/%s/mode; rmdir %s/vms/%s'
                   % (scenario.CONFIGFS, d, scenario.CONFIGFS, d))
    node.check('rmmod tlbbalance')
    try:
        # Pre-faulted: in the CI trial of 2026-11-27 a lazy 128 MiB guest
        # here printed 'ready' and never 'touched' in 300 s (the node's
        # state was not kept; passed in the four runs before). Until that
        # is understood this test, which is about the module being
        # absent, takes the allocation at start, as it did until the lazy
        # default; the balanced VM stays lazy.
        scenario.start_vm(node, name, payload,
                          specs=dict(SPECS, prefault='true'), mem_mib=128)
        scenario.wait_payload(node, name, timeout=300, passes=8)
        assert node.check('virsh domstate %s' % name).strip() == 'running'
        data = json.loads(node.check('tlbbalance status --json'))
        assert data['host']['module']['loaded'] is False
        rep = {v['name']: v for v in data['vms']}[name]
        assert rep['module']['registered'] is False
        assert rep['module']['reason'] == 'module not loaded'
        table = node.check('tlbbalance status')
        assert 'module NOT loaded' in table
        assert re.search(r'^%s .*unmanaged: module not loaded$' % name,
                         table, re.M), table
        hook_log = node.check('cat /var/log/tlbbalance-hook.log')
        started = [json.loads(ln) for ln in hook_log.splitlines()
                   if '"%s"' % name in ln and '"started"' in ln]
        assert started and started[-1]['rc'] == 0, started
        node.check('virsh -q destroy %s; virsh -q undefine %s'
                   % (name, name), timeout=120)
    finally:
        node.run('insmod %s %s' % (node.ko, node.module_params))
