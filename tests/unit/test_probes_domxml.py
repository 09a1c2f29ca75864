# SPDX-License-Identifier: Apache-2.0
import pytest

from nova_tlbbalance.probes import domxml

XML = """<domain type='kvm'>
  <name>vm</name><uuid>u-1</uuid>
  <memory unit='GiB'>4</memory>
  <vcpu placement='static' cpuset='0-7,^3'>4</vcpu>
  <cputune><vcpupin vcpu='0' cpuset='4'/><vcpupin vcpu='1' cpuset='5-6'/>
  </cputune>
  <numatune><memory nodeset='0-1'/><memnode cellid='1' nodeset='1'/>
  </numatune>
  <memoryBacking><hugepages><page size='1' unit='G' nodeset='1'/>
  <page size='2048'/></hugepages><locked/></memoryBacking>
  <cpu><numa><cell id='0' cpus='0-1' memory='1048576'/>
  <cell id='1' cpus='2-3' memory='3' unit='GiB'/></numa></cpu>
  <os><type arch='x86_64' machine='pc-q35-7.2'>hvm</type></os>
</domain>"""


def test_cpuset():
    assert domxml.parse_cpuset('0-3,^2,8') == (0, 1, 3, 8)
    assert domxml.parse_cpuset('') == ()
    assert domxml.parse_cpuset(' 1 , 2 ') == (1, 2)
    assert domxml.format_cpuset([8, 0, 1, 3, 2]) == '0-3,8'
    with pytest.raises(ValueError, match="bad cpu list 'x'"):
        domxml.parse_cpuset('x')


def test_parse_full():
    d = domxml.parse(XML)
    assert (d.name, d.uuid, d.virt_type, d.machine) == (
        'vm', 'u-1', 'kvm', 'pc-q35-7.2')
    assert d.memory == 4 << 30
    assert [(c.id, c.memory, c.cpus) for c in d.cells] == [
        (0, 1 << 30, (0, 1)), (1, 3 << 30, (2, 3))]
    assert d.hugepages == [(1 << 30, (1,)), (2 << 20, ())]
    assert d.vcpupin == {0: (4,), 1: (5, 6)}
    assert d.vcpu_cpuset == (0, 1, 2, 4, 5, 6, 7)
    assert d.numa_nodeset == (0, 1) and d.memnodes == {1: (1,)}
    assert d.locked and d.uses_hugetlbfs and not d.hotplug


def test_parse_errors():
    with pytest.raises(ValueError, match='not well-formed'):
        domxml.parse('<domain>')
    with pytest.raises(ValueError, match='root element is <network>'):
        domxml.parse('<network/>')
    with pytest.raises(ValueError, match="domain 'x': <memory> is missing"):
        domxml.parse('<domain><name>x</name></domain>')
    with pytest.raises(ValueError, match="unknown unit 'parsecs'"):
        domxml.parse("<domain><name>x</name><memory unit='parsecs'>1"
                     "</memory></domain>")
