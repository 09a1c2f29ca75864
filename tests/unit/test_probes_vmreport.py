# SPDX-License-Identifier: Apache-2.0
"""vmreport over temporary /proc, /sys trees and a stand-in libvirt
connection (the real libvirtd is used by tests/integration; this covers the
KVM-only paths that cannot run on this host: query-stats stage-2 counts and
a registered module)."""

import os

from nova_tlbbalance import modclient
from nova_tlbbalance import policy
from nova_tlbbalance.probes import records
from nova_tlbbalance.probes import vmreport

MiB = 1 << 20
PID = 500
HVA = 0x7f0000000000

XML = """<domain type='kvm'><name>vm1</name><uuid>u</uuid>
<metadata><tlbbalance:policy
 xmlns:tlbbalance="http://openstack.org/xmlns/tlbbalance/1.0"
 mode="monitor" backing="thp"/></metadata>
<memory unit='MiB'>64</memory><vcpu>1</vcpu>
<cputune><vcpupin vcpu='0' cpuset='%s'/></cputune>
<os><type arch='x86_64' machine='pc-q35-7.2'>hvm</type></os></domain>"""


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


class FakeMonitor:
    def __init__(self, hva):
        self.hva = hva

    def gpa2hva(self, gpa):
        return self.hva + gpa, 'pc.ram'

    def vm_stats(self):
        return {'pages_4k': 10, 'pages_2m': 31, 'max_mmu_page_hash': 3}


class FakeConn:
    def __init__(self, xml, hva):
        self.xml = xml
        self.hva = hva

    def running(self):
        return [('vm1', self.xml, None)]

    def monitor(self, dom):
        return FakeMonitor(self.hva)

    def close(self):
        pass


def tree(tmp_path):
    p, s, run = (str(tmp_path / n) for n in ('proc', 'sys', 'run'))
    me = os.getpid()    # a real thread id, so affinity can be read
    write(run + '/vm1.pid', str(PID))
    write('%s/%d/task/%d/comm' % (p, PID, me), 'CPU 0/KVM')
    write('%s/%d/maps' % (p, PID), '%x-%x rw-p 00000000 00:00 0\n'
          % (HVA, HVA + 64 * MiB))
    write('%s/%d/smaps' % (p, PID), '%x-%x rw-p 00000000 00:00 0\n'
          'AnonHugePages:     63488 kB\nRss:    65536 kB\n'
          % (HVA, HVA + 64 * MiB))
    write(s + '/kernel/mm/transparent_hugepage/hpage_pmd_size', '2097152')
    write(s + '/devices/system/cpu/cpu0/topology/die_id', '0')
    cfs = tmp_path / 'cfs'
    (cfs / 'vms' / 'vm1').mkdir(parents=True)
    (cfs / 'vms' / 'vm1' / 'status').write_text(
        'huge_pages 31\nstate monitoring\npid %d\n' % PID)
    return vmreport.Roots(p, s, run, str(cfs))


def cpus():
    return ','.join(str(c) for c in sorted(os.sched_getaffinity(0)))


def test_kvm_vm_report(tmp_path):
    roots = tree(tmp_path)
    host, reps = vmreport.collect(roots, conn=FakeConn(XML % cpus(), HVA))
    (rep,) = reps
    assert rep.errors == []
    assert rep.stage2 == {'pages_4k': 10, 'pages_2m': 31}
    assert rep.stage2_unavailable is None
    assert rep.coverage.coverage == 62 / 64
    assert rep.aligned and rep.ranges[0].gpa2hva == HVA
    assert rep.module.registered is True
    assert rep.module.status['state'] == 'monitoring'
    assert rep.module.status.pid == PID       # typed once, by module_status
    assert rep.policy == policy.Policy(mode='monitor', backing='thp',
                                       prefault=True)   # absent: true
    assert rep.vcpus[0].accel == 'KVM'
    assert host.module.loaded and 'topology' not in host.to_json()


def test_gpa2hva_is_authoritative(tmp_path):
    roots = tree(tmp_path)
    _, (rep,) = vmreport.collect(
        roots, conn=FakeConn(XML % cpus(), HVA + 0x1000))
    r = rep.ranges[0]
    assert r.hva == HVA and r.gpa2hva == HVA + 0x1000
    assert r.misalignment == 0x1000 and rep.aligned is False


def test_registered_pid_mismatch_and_no_module(tmp_path):
    roots = tree(tmp_path)
    (tmp_path / 'cfs/vms/vm1/status').write_text('pid 1\n')
    _, (rep,) = vmreport.collect(roots, conn=FakeConn(XML % cpus(), HVA))
    assert rep.module.registered is False
    assert 'registered pid 1 is not QEMU pid 500' in rep.module.reason
    roots.configfs = str(tmp_path / 'none')
    _, (rep,) = vmreport.collect(roots, conn=FakeConn(XML % cpus(), HVA))
    assert rep.module == records.ModuleState(registered=False,
                                             reason='module not loaded')
    assert modclient.Client(roots.configfs).present() is False


def test_ram_maps_cannot_place_is_asked_of_qemu(tmp_path):
    roots = tree(tmp_path)
    # the guest RAM mapping is 4 KiB larger than the block: no exact match
    write('%s/%d/maps' % (roots.proc, PID), '%x-%x rw-s 00000000 00:01 9 '
          '/memfd:x (deleted)\n' % (HVA, HVA + 64 * MiB + 4096))
    _, (rep,) = vmreport.collect(
        roots, conn=FakeConn(XML % cpus(), HVA + 0x1000))
    assert rep.errors == []
    assert rep.notes[0].startswith('guest RAM placed by gpa2hva only')
    r = rep.ranges[0]
    # the HVA is QEMU's answer, not compared with itself a second time
    assert r.hva == HVA + 0x1000 and r.hva_source == 'gpa2hva'
    assert r.gpa2hva is None
    assert r.misalignment == 0x1000 and rep.aligned is False
    roots.configfs = None
    _, (rep,) = vmreport.collect(roots, monitor=False,
                                 conn=FakeConn(XML % cpus(), HVA))
    assert 'no mapping of that size' in rep.errors[0]
    assert rep.ranges is None and rep.aligned is None


def test_monitor_queries_of_many_vms_run_at_once(tmp_path):
    """status over 200 VMs must answer a scrape in under a second: the
    VMs' monitor round trips overlap. Four gpa2hva calls meet at a
    barrier (bounded wait); one at a time they could never all arrive."""
    import threading
    roots = tree(tmp_path)
    meet = threading.Barrier(4, timeout=20)

    class Waiting(FakeMonitor):
        def gpa2hva(self, gpa):
            meet.wait()
            return FakeMonitor.gpa2hva(self, gpa)

    class Many(FakeConn):
        def running(self):
            return [('vm1', self.xml, None)] * 8

        def monitor(self, dom):
            return Waiting(self.hva)
    _, reps = vmreport.collect(roots, conn=Many(XML % cpus(), HVA))
    assert len(reps) == 8
    for rep in reps:
        assert rep.errors == [] and rep.ranges[0].gpa2hva == HVA
