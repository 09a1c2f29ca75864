# SPDX-License-Identifier: Apache-2.0
"""nova_tlbbalance.guest_config: a policy's settings in a domain XML."""

import logging

import pytest
from lxml import etree

from nova_tlbbalance import guest_config as gc
from nova_tlbbalance import hostfacts
from nova_tlbbalance.policy import NS, Policy

PLAIN = """<domain type='qemu'>
  <name>vm1</name>
  <uuid>11111111-2222-3333-4444-555555555555</uuid>
  <memory unit='KiB'>1048576</memory>
  <currentMemory unit='KiB'>1048576</currentMemory>
  <vcpu placement='static'>2</vcpu>
  <os><type arch='x86_64'>hvm</type></os>
  <devices/>
</domain>
"""


def pinned(cpus, memory='1048576'):
    pins = ''.join('<vcpupin vcpu="%d" cpuset="%s"/>' % (i, c)
                   for i, c in enumerate(cpus))
    return ('<domain type="kvm"><name>p</name><memory>%s</memory>'
            '<vcpu>%d</vcpu><cputune>%s</cputune></domain>'
            % (memory, len(cpus), pins))


def apply(xml, **kw):
    kw.setdefault('huge_page_kib', 2048)
    # pre-faulting (not the default since lazy THP met the boot goal):
    # the most the plugin writes
    pol = kw.pop('policy', None) or Policy(mode='balance', prefault=True)
    return etree.fromstring(gc.apply_to_domain_xml(xml, pol, **kw).encode())


def topo(table):
    """{cpu: (package, die, cluster)} -> the table hostfacts reads."""
    return {cpu: hostfacts.CpuIds(*ids, core=0)
            for cpu, ids in table.items()}


def test_none_policy_returns_input_unchanged():
    assert gc.apply_to_domain_xml(PLAIN, None) is PLAIN


def test_thp_backing_elements_in_libvirt_order():
    root = apply(PLAIN, allocation_threads=True)
    mb = root.find('memoryBacking')
    assert [c.tag for c in mb] == ['nosharepages', 'source', 'allocation']
    assert mb.find('source').attrib == {'type': 'anonymous'}
    assert mb.find('allocation').attrib == {'mode': 'immediate',
                                            'threads': '2'}
    # placed after the memory elements
    tags = [c.tag for c in root]
    assert tags.index('memoryBacking') == tags.index('currentMemory') + 1


def test_no_threads_for_old_libvirt():
    mb = apply(PLAIN, allocation_threads=False).find('memoryBacking')
    assert mb.find('allocation').attrib == {'mode': 'immediate'}


def test_prefault_false_has_no_allocation():
    pol = Policy(mode='monitor', prefault=False)
    root = apply(PLAIN, policy=pol, allocation_threads=True)
    mb = root.find('memoryBacking')
    # Still anonymous, unshared memory (madvised for THP by QEMU), only
    # not pre-faulted.
    assert [c.tag for c in mb] == ['nosharepages', 'source']
    assert mb.find('source').attrib == {'type': 'anonymous'}
    # Memory is still rounded to whole huge pages.
    assert root.findtext('memory') == '1048576'
    assert Policy.from_domain_xml(etree.tostring(root)) == pol


def test_prefault_false_removes_an_allocation_already_there():
    once = gc.apply_to_domain_xml(PLAIN, Policy(mode='off', prefault=True),
                                  2048, True)
    assert '<allocation' in once
    lazy = gc.apply_to_domain_xml(once, Policy(mode='off', prefault=False),
                                  2048, True)
    assert '<allocation' not in lazy
    assert gc.apply_to_domain_xml(lazy, Policy(mode='off', prefault=False),
                                  2048, True) == lazy


def test_prefault_false_migrating_keeps_no_allocation():
    pol = Policy(mode='monitor', prefault=False)
    running = gc.apply_to_domain_xml(PLAIN, pol, 2048, True)
    dest = gc.apply_to_domain_xml(running, Policy.from_domain_xml(running),
                                  allocation_threads=True, migrating=True)
    assert '<allocation' not in dest
    assert Policy.from_domain_xml(dest).prefault is False


def test_metadata_policy_added_and_read_back():
    out = gc.apply_to_domain_xml(
        PLAIN, Policy(mode='monitor', params={'samples': 5}), 2048)
    assert Policy.from_domain_xml(out) == Policy(mode='monitor',
                                                 params={'samples': 5})
    root = etree.fromstring(out.encode())
    assert [c.tag for c in root][:3] == ['name', 'uuid', 'metadata']


def test_apply_is_idempotent_and_replaces_old_policy():
    once = gc.apply_to_domain_xml(PLAIN, Policy(mode='off'), 2048, True)
    twice = gc.apply_to_domain_xml(once, Policy(mode='off'), 2048, True)
    assert once == twice
    other = gc.apply_to_domain_xml(once, Policy(mode='balance'), 2048)
    pols = etree.fromstring(other.encode()).findall(
        './metadata/{%s}policy' % NS)
    assert [p.get('mode') for p in pols] == ['balance']


def test_other_metadata_kept():
    xml = PLAIN.replace('<vcpu', '<metadata><x:y xmlns:x="urn:x">1</x:y>'
                        '</metadata><vcpu')
    root = apply(xml)
    assert root.find('metadata/{urn:x}y').text == '1'
    assert root.find('metadata/{%s}policy' % NS) is not None


@pytest.mark.parametrize('memory,unit,want_kib', [
    ('1048576', None, 1048576),          # whole: unchanged
    ('1049600', None, 1048576),          # 1025 MiB -> 1024 MiB
    ('1025', 'MiB', 1048576),
    ('3', 'GiB', 3 * 1048576),
    ('1075000000', 'b', 1048576),     # bytes
])
def test_memory_rounded_down(memory, unit, want_kib):
    attr = ' unit="%s"' % unit if unit else ''
    xml = ('<domain><name>m</name><memory%s>%s</memory>'
           '<currentMemory%s>%s</currentMemory><vcpu>1</vcpu></domain>'
           % (attr, memory, attr, memory))
    root = apply(xml)
    for tag in ('memory', 'currentMemory'):
        assert gc._kib(root.find(tag)) == want_kib


def test_loongson_32m_pages_and_numa_cells():
    xml = ('<domain><name>n</name><memory>1048576</memory><vcpu>2</vcpu>'
           '<cpu><numa><cell id="0" cpus="0" memory="512000" unit="KiB"/>'
           '<cell id="1" cpus="1" memory="536576"/></numa></cpu></domain>')
    root = apply(xml, huge_page_kib=32768)
    cells = root.findall('cpu/numa/cell')
    assert [c.get('memory') for c in cells] == [str(15 * 32768),
                                                str(16 * 32768)]
    assert root.findtext('memory') == str(31 * 32768)


def test_memory_below_one_huge_page_is_a_conflict():
    xml = PLAIN.replace('1048576', '1024')
    with pytest.raises(gc.PolicyConflict, match='less than one huge page'):
        apply(xml)


def test_unknown_huge_page_size_skips_rounding(caplog):
    xml = PLAIN.replace('1048576', '1049600')
    with caplog.at_level(logging.WARNING):
        root = apply(xml, huge_page_kib=None)
    assert root.findtext('memory') == '1049600'
    assert 'not rounded' in caplog.text


def test_hugetlbfs_needs_nova_hugepages():
    with pytest.raises(gc.PolicyConflict) as exc:
        apply(PLAIN, policy=Policy(mode='off', backing='hugetlbfs'))
    assert 'tlbbalance:backing=hugetlbfs' in str(exc.value)
    assert 'hw:mem_page_size' in str(exc.value)


def test_hugetlbfs_adds_nosharepages_only():
    xml = PLAIN.replace(
        '<vcpu', '<memoryBacking><hugepages><page size="2048" unit="KiB"/>'
        '</hugepages></memoryBacking><vcpu')
    root = apply(xml, policy=Policy(mode='off', backing='hugetlbfs'))
    mb = root.find('memoryBacking')
    assert [c.tag for c in mb] == ['hugepages', 'nosharepages']
    assert root.findtext('memory') == '1048576'


def test_thp_conflicts_with_hugepages_and_file_memory():
    xml = PLAIN.replace('<vcpu', '<memoryBacking><hugepages/>'
                        '</memoryBacking><vcpu')
    with pytest.raises(gc.PolicyConflict, match='hw:mem_page_size'):
        apply(xml)
    xml = PLAIN.replace('<vcpu', '<memoryBacking><source type="file"/>'
                        '</memoryBacking><vcpu')
    with pytest.raises(gc.PolicyConflict, match='file_backed_memory'):
        apply(xml)


def test_thp_merges_with_existing_locked_backing():
    xml = PLAIN.replace('<vcpu', '<memoryBacking><locked/></memoryBacking>'
                        '<vcpu')
    mb = apply(xml).find('memoryBacking')
    assert [c.tag for c in mb] == ['nosharepages', 'locked', 'source',
                                   'allocation']


def test_backing_none_only_metadata():
    root = apply(PLAIN.replace('1048576', '1049600'),
                 policy=Policy(mode='monitor', backing='none'))
    assert root.find('memoryBacking') is None
    assert root.findtext('memory') == '1049600'


def test_tlbi_scope_needs_every_vcpu_pinned_to_one_cpu():
    pol = Policy(mode='off', backing='none', tlbi_scope='die')
    with pytest.raises(gc.PolicyConflict) as exc:
        apply(pinned(['0', '0-3']), policy=pol)
    assert 'hw:cpu_policy=dedicated' in str(exc.value)
    assert 'vCPU(s) 1 ' in str(exc.value)
    xml = pinned(['0']).replace('<vcpu>1</vcpu>', '<vcpu>2</vcpu>')
    with pytest.raises(gc.PolicyConflict, match='vCPU\\(s\\) 1 '):
        apply(xml, policy=pol)
    # a <vcpupin> without cpuset is malformed XML, not a missing pin
    xml = pinned(['0']).replace(' cpuset="0"', '')
    with pytest.raises(ValueError, match="bad <vcpupin vcpu='0' "
                                         "cpuset=None>"):
        apply(xml, policy=pol)


TOPO = {0: (0, 0, 0), 1: (0, 0, 0), 2: (0, 0, 1), 3: (0, 0, 1),
        4: (0, 1, 2), 5: (0, 1, 2)}


def test_tlbi_scope_die_within_one_die():
    pol = Policy(mode='off', backing='none', tlbi_scope='die', strict=True)
    root = apply(pinned(['0', '3']), policy=pol, topology=topo(TOPO))
    assert root.find('metadata/{%s}policy' % NS).get('tlbi_scope') == 'die'


def test_tlbi_scope_spanning_dies(caplog):
    strict = Policy(mode='off', backing='none', tlbi_scope='die',
                    strict=True)
    with pytest.raises(gc.PolicyConflict, match='span 2 dies'):
        apply(pinned(['1', '4']), policy=strict, topology=topo(TOPO))
    loose = Policy(mode='off', backing='none', tlbi_scope='die')
    with caplog.at_level(logging.WARNING):
        apply(pinned(['1', '4']), policy=loose, topology=topo(TOPO))
    assert 'span 2 dies' in caplog.text
    with caplog.at_level(logging.WARNING):
        gc.check_destination(loose, pins=None, nvcpu=2)
    assert 'cannot be checked' in caplog.text


def test_tlbi_scope_cluster():
    pol = Policy(mode='off', backing='none', tlbi_scope='cluster',
                 strict=True)
    apply(pinned(['0', '1']), policy=pol, topology=topo(TOPO))
    with pytest.raises(gc.PolicyConflict, match='span 2 clusters'):
        apply(pinned(['1', '2']), policy=pol, topology=topo(TOPO))


def test_tlbi_scope_unknown_topology_warns(caplog):
    pol = Policy(mode='off', backing='none', tlbi_scope='die', strict=True)
    with caplog.at_level(logging.WARNING):
        apply(pinned(['0', '9']), policy=pol, topology=topo(TOPO))
    assert 'cannot check' in caplog.text


def test_pin_check_reads_hosts_topology_table(tmp_path):
    # The pin check judges with hostfacts.cpu_topology, the table the hook
    # and verify use: a CPU without physical_package_id is of unknown
    # place (warning, not a conflict); die/cluster ids missing count as 0.
    sys_root = tmp_path / 'sys'
    for cpu, ids in ((0, {'physical_package_id': 0, 'die_id': 0}),
                     (1, {'physical_package_id': 0, 'die_id': 1}),
                     (2, {'physical_package_id': 0})):
        t = sys_root / 'devices' / 'system' / 'cpu' / ('cpu%d' % cpu) / \
            'topology'
        t.mkdir(parents=True)
        for name, value in ids.items():
            (t / name).write_text('%d\n' % value)
    table = hostfacts.cpu_topology(str(sys_root))
    pol = Policy(mode='off', backing='none', tlbi_scope='die', strict=True)
    apply(pinned(['0', '2']), policy=pol, topology=table)
    with pytest.raises(gc.PolicyConflict, match='span 2 dies'):
        apply(pinned(['0', '1']), policy=pol, topology=table)


def test_this_hosts_topology_is_read_by_default():
    # No table given: this machine's own sysfs (hostfacts, /sys).
    pol = Policy(mode='off', backing='none', tlbi_scope='die', strict=True)
    apply(pinned(['0', '0']), policy=pol)


@pytest.mark.parametrize('xml,match', [
    ('<domain><name>x', 'not well-formed'),
    ('<network/>', 'not <domain>'),
    ('<domain><name>x</name><vcpu>1</vcpu></domain>', 'no <memory>'),
    ('<domain><name>x</name><memory unit="parsec">1</memory>'
     '<vcpu>1</vcpu></domain>', 'unknown unit'),
    ('<domain><name>x</name><memory>4096</memory></domain>', '<vcpu>'),
    ('<domain><name>x</name><memory>4M</memory><vcpu>1</vcpu></domain>',
     "<memory>: '4M' is not an integer"),
])
def test_malformed_domains(xml, match):
    with pytest.raises(ValueError, match=match):
        gc.apply_to_domain_xml(xml, Policy(mode='off', prefault=True), 2048,
                               True)


def test_xml_declaration_accepted():
    out = gc.apply_to_domain_xml(
        "<?xml version='1.0' encoding='UTF-8'?>\n" + PLAIN,
        Policy(mode='off'), 2048)
    assert Policy.from_domain_xml(out).mode == 'off'


# -- live migration ----------------------------------------------------------

def test_hugetlbfs_conflicts_with_file_memory():
    # nova's live migration to a [libvirt] file_backed_memory host adds
    # <source type='file'/> next to <hugepages> (it refuses both at boot).
    xml = PLAIN.replace('<vcpu', '<memoryBacking><hugepages/>'
                        '<source type="file"/></memoryBacking><vcpu')
    with pytest.raises(gc.PolicyConflict,
                       match='backing=hugetlbfs conflicts with '
                             "<source type='file'>"):
        apply(xml, policy=Policy(mode='off', backing='hugetlbfs'))


def test_migrating_restores_backing_keeps_memory_and_pins():
    # What nova's get_updated_guest_xml leaves of a THP guest: the memory
    # it booted with, <nosharepages/> only, the destination's pins.
    xml = pinned(['1', '4'], memory='1049600').replace(
        '<vcpu>', '<memoryBacking><nosharepages/></memoryBacking><vcpu>')
    pol = Policy(mode='balance', tlbi_scope='die', strict=True,
                 prefault=True)
    root = apply(xml, policy=pol, topology=topo(TOPO), migrating=True,
                 allocation_threads=True)
    mb = root.find('memoryBacking')
    assert [c.tag for c in mb] == ['nosharepages', 'source', 'allocation']
    assert mb.find('allocation').attrib == {'mode': 'immediate',
                                            'threads': '2'}
    # not rounded: guest RAM cannot change size in flight
    assert root.findtext('memory') == '1049600'
    # not checked here (the destination checks its own pins)
    with pytest.raises(gc.PolicyConflict, match='span 2 dies'):
        apply(xml, policy=pol, topology=topo(TOPO))


def test_migrating_refuses_file_memory():
    xml = PLAIN.replace('<vcpu', '<memoryBacking><nosharepages/>'
                        '<source type="file"/><access mode="shared"/>'
                        '</memoryBacking><vcpu')
    with pytest.raises(gc.PolicyConflict, match='backing=thp conflicts'):
        apply(xml, migrating=True)


def test_check_destination_file_backed_memory():
    for backing in ('thp', 'hugetlbfs'):
        pol = Policy(mode='off', backing=backing)
        gc.check_destination(pol)
        with pytest.raises(gc.PolicyConflict,
                           match='backing=%s conflicts with this host.s '
                                 r'\[libvirt\] file_backed_memory' % backing):
            gc.check_destination(pol, file_backed_memory=True)
    gc.check_destination(Policy(mode='off', backing='none'),
                         file_backed_memory=True)
    gc.check_destination(None, file_backed_memory=True)


def test_check_destination_pins(caplog):
    strict = Policy(mode='off', backing='none', tlbi_scope='die',
                    strict=True)
    gc.check_destination(strict, pins={0: {2}, 1: {3}}, nvcpu=2,
                         topology=topo(TOPO))
    with pytest.raises(gc.PolicyConflict, match='span 2 dies'):
        gc.check_destination(strict, pins={0: {1}, 1: {2}, 2: {4}},
                             nvcpu=3, topology=topo(TOPO))
    with pytest.raises(gc.PolicyConflict, match='vCPU\\(s\\) 1 are not'):
        gc.check_destination(strict, pins={0: {2}, 1: {2, 3}}, nvcpu=2,
                             topology=topo(TOPO))
    with pytest.raises(gc.PolicyConflict, match='claimed no vCPU pins'):
        gc.check_destination(strict, pins=None, nvcpu=2,
                             topology=topo(TOPO))
    loose = Policy(mode='off', backing='none', tlbi_scope='die')
    with caplog.at_level(logging.WARNING):
        gc.check_destination(loose, pins={0: {1}, 1: {4}}, nvcpu=2,
                             topology=topo(TOPO))
    assert 'span 2 dies' in caplog.text
    with caplog.at_level(logging.WARNING):
        gc.check_destination(loose, pins=None, nvcpu=2)
    assert 'cannot be checked' in caplog.text
