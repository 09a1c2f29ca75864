# SPDX-License-Identifier: Apache-2.0
"""The host facts (hostfacts) over a temporary /proc and /sys tree."""

from test_probes_proc import write  # tests/unit is on sys.path

from nova_tlbbalance import hostfacts


def test_sys_facts(tmp_path):
    s = str(tmp_path)
    assert hostfacts.hpage_pmd_size(s) is None       # unknown, not guessed
    write(s + '/kernel/mm/transparent_hugepage/hpage_pmd_size', '33554432')
    write(s + '/kernel/mm/transparent_hugepage/enabled',
          'always [madvise] never\n')
    assert hostfacts.hpage_pmd_size(s) == 32 << 20
    assert hostfacts.thp_mode(s) == 'madvise'
    for node, free in ((0, 5), (1, 7)):
        write('%s/devices/system/node/node%d/hugepages/hugepages-2048kB/'
              'free_hugepages' % (s, node), '%d\n' % free)
    assert hostfacts.free_hugepages(2 << 20, s) == {0: 5, 1: 7}
    assert hostfacts.free_hugepages(1 << 30, s) == {0: 0, 1: 0}
    write(str(tmp_path / 'meminfo'), 'MemTotal: 1 kB\nHugepagesize:    '
          '1048576 kB\n')
    assert hostfacts.default_hugepage_size(str(tmp_path)) == 1 << 30
    assert hostfacts.default_hugepage_size(s + '/nowhere') is None


def test_topology_and_dvmbm(tmp_path):
    s = str(tmp_path)
    # 8 CPUs: 2 dies x 2 clusters x 2 cores
    for cpu in range(8):
        base = '%s/devices/system/cpu/cpu%d/topology/' % (s, cpu)
        write(base + 'physical_package_id', '0')
        write(base + 'die_id', str(cpu // 4))
        write(base + 'cluster_id', str(cpu // 2))
        write(base + 'core_id', str(cpu))
    write('%s/devices/system/cpu/cpu8/topology/die_id' % s, '0')
    topo = hostfacts.cpu_topology(s)
    # cpu8 has no physical_package_id: its place is unknown, left out
    assert sorted(topo) == list(range(8))
    assert topo[5] == hostfacts.CpuIds(package=0, die=1, cluster=2, core=5)
    assert hostfacts.span([0, 1], topo) == {'dies': 1, 'clusters': 1}
    assert hostfacts.span([0, 3], topo) == {'dies': 1, 'clusters': 2}
    assert hostfacts.span([0, 7], topo) == {'dies': 2, 'clusters': 2}
    write(s + '/cmdline', 'ro quiet\n')
    assert hostfacts.dvmbm(s, s, kmsg_lines=[])['enabled'] is False
    assert hostfacts.dvmbm(s, s, kmsg_lines=[
        '6,1,2,-;KVM dvmbm enabled'])['enabled'] is True
    write(s + '/cmdline', 'ro kvm-arm.dvmbm_enabled=1\n')
    assert hostfacts.dvmbm(s, s, kmsg_lines=[]) == {
        'enabled': True, 'source': 'kernel command line'}
    write(s + '/module/kvm/parameters/dvmbm_enabled', 'N\n')
    assert hostfacts.dvmbm(s, s, kmsg_lines=[])['enabled'] is False


def test_guest_page_size(tmp_path):
    class Dom:
        uses_hugetlbfs = False
        hugepages = ()
    s = str(tmp_path)
    assert hostfacts.guest_page_size(Dom(), s, s) is None
    write(s + '/kernel/mm/transparent_hugepage/hpage_pmd_size', '2097152')
    assert hostfacts.guest_page_size(Dom(), s, s) == 2 << 20
    write(s + '/meminfo', 'Hugepagesize:    1048576 kB\n')
    assert hostfacts.guest_page_size(Dom(), s, s, hugetlbfs=True) == 1 << 30
    Dom.uses_hugetlbfs = True
    Dom.hugepages = ((2 << 20, ()),)
    assert hostfacts.guest_page_size(Dom(), s, s) == 2 << 20


def test_this_hosts_facts_are_readable():
    # The real files on this machine (x86_64: 2 MiB; CPU 0 exists).
    assert hostfacts.hpage_pmd_size() in (2 << 20, 32 << 20, 512 << 20)
    assert 0 in hostfacts.cpu_topology()
