# SPDX-License-Identifier: Apache-2.0
"""Boot servers through the REST API with tagged flavors; check the XML.

The compute driver is ``tlbbalance.TLBBalanceLibvirtDriver`` (as in an
operator's nova.conf); the XML is what nova handed to libvirt's defineXML.
"""

from lxml import etree

from nova.tests.fixtures import libvirt as fakelibvirt
from oslo_utils import versionutils

from nova_tlbbalance import policy as tlbb_policy
from . import base

NS = {'t': tlbb_policy.NS}


def _policy(root):
    found = root.findall('./metadata/t:policy', NS)
    return found


class TestBootModes(base.TLBBalanceTestBase):

    ADDITIONAL_FILTERS = ['NUMATopologyFilter']

    def _boot(self, extra_spec, memory_mb=1024, vcpu=2,
              expected_state='ACTIVE'):
        flavor = self._create_flavor(memory_mb=memory_mb, vcpu=vcpu,
                                     extra_spec=extra_spec)
        server = self._create_server(flavor_id=flavor, networks='none',
                                     expected_state=expected_state)
        return server

    def _xml(self, server):
        return etree.fromstring(self.last_xml(server))

    def test_balance_thp(self):
        self.start_compute()
        server = self._boot({'tlbbalance:mode': 'balance',
                             'tlbbalance:prefault': 'true',
                             'tlbbalance:imbalance_threshold': '30',
                             'tlbbalance:samples': '5'})
        root = self._xml(server)
        mb = root.find('memoryBacking')
        self.assertIsNotNone(mb, 'no <memoryBacking>')
        self.assertIsNotNone(mb.find('nosharepages'))
        self.assertEqual('anonymous', mb.find('source').get('type'))
        alloc = mb.find('allocation')
        self.assertEqual('immediate', alloc.get('mode'))
        # The fake libvirt is 8.0.0: no threads attribute before 8.2.0.
        self.assertIsNone(alloc.get('threads'))
        self.assertIsNone(mb.find('hugepages'))
        pols = _policy(root)
        self.assertEqual(1, len(pols))
        self.assertEqual({'mode': 'balance', 'backing': 'thp',
                          'tlbi_scope': 'none', 'strict': 'false'},
                         dict(pols[0].attrib))
        self.assertEqual(
            [('imbalance_threshold', '30'), ('samples', '5')],
            [(p.get('name'), p.get('value'))
             for p in pols[0].findall('t:param', NS)])
        # nova's own metadata is still there, untouched.
        self.assertIsNotNone(root.find(
            './metadata/{http://openstack.org/xmlns/libvirt/nova/1.1}'
            'instance'))
        # 1024 MiB is a whole number of 2 MiB pages: unchanged.
        self.assertEqual('1048576', root.findtext('memory'))
        # The hook reads the policy back with the stdlib parser.
        got = tlbb_policy.Policy.from_domain_xml(self.last_xml(server))
        self.assertEqual('balance', got.mode)
        self.assertEqual({'imbalance_threshold': 30, 'samples': 5},
                         got.params)

    def test_prefault_false_has_no_allocation(self):
        # libvirt 8.2: threads= would be added if <allocation> were.
        self.start_compute(libvirt_version=versionutils.convert_version_to_int(
            (8, 2, 0)))
        server = self._boot({'tlbbalance:mode': 'monitor',
                             'tlbbalance:prefault': 'false'})
        root = self._xml(server)
        mb = root.find('memoryBacking')
        # THP backing all the same (anonymous, unshared), not pre-faulted.
        self.assertEqual(['nosharepages', 'source'], [c.tag for c in mb])
        self.assertEqual('anonymous', mb.find('source').get('type'))
        self.assertEqual({'mode': 'monitor', 'backing': 'thp',
                          'tlbi_scope': 'none', 'strict': 'false',
                          'prefault': 'false'},
                         dict(_policy(root)[0].attrib))
        got = tlbb_policy.Policy.from_domain_xml(self.last_xml(server))
        self.assertFalse(got.prefault)

    def test_not_prefaulted_by_default(self):
        self.start_compute()
        server = self._boot({'tlbbalance:mode': 'monitor'})
        root = self._xml(server)
        self.assertIsNone(root.find('memoryBacking/allocation'))
        self.assertEqual('false', _policy(root)[0].get('prefault'))

    def test_prefault_true_from_the_host_default(self):
        # what an operator keeps who wants all guest RAM huge at ACTIVE
        self.flags(default_prefault=True, group='tlbbalance')
        self.start_compute()
        server = self._boot({'tlbbalance:mode': 'monitor'})
        root = self._xml(server)
        self.assertEqual('immediate',
                         root.find('memoryBacking/allocation').get('mode'))
        self.assertIsNone(_policy(root)[0].get('prefault'))

    def test_monitor_allocation_threads_on_libvirt_8_2(self):
        self.start_compute(libvirt_version=versionutils.convert_version_to_int(
            (8, 2, 0)))
        server = self._boot({'tlbbalance:mode': 'monitor',
                             'tlbbalance:prefault': 'true'}, vcpu=3)
        alloc = self._xml(server).find('memoryBacking/allocation')
        self.assertEqual('immediate', alloc.get('mode'))
        self.assertEqual('3', alloc.get('threads'))
        self.assertEqual('monitor',
                         _policy(self._xml(server))[0].get('mode'))

    def test_memory_rounded_down_to_whole_huge_pages(self):
        # A Loongson host: 16 KiB base pages, 32 MiB PMD huge pages.
        self.flags(thp_page_size_kb=32768, group='tlbbalance')
        self.start_compute()
        server = self._boot({'tlbbalance:mode': 'balance'}, memory_mb=1000)
        root = self._xml(server)
        # 1000 MiB -> 31 x 32 MiB = 992 MiB, never more than the flavor.
        self.assertEqual(str(992 * 1024), root.findtext('memory'))

    def test_memory_rounding_with_numa_cells(self):
        self.flags(thp_page_size_kb=32768, group='tlbbalance')
        self.start_compute(host_info=fakelibvirt.HostInfo(
            cpu_nodes=2, cpu_sockets=1, cpu_cores=2, cpu_threads=1,
            kB_mem=16 * 1024 * 1024))
        server = self._boot({'tlbbalance:mode': 'monitor',
                             'hw:numa_nodes': '2',
                             'hw:numa_cpus.0': '0', 'hw:numa_cpus.1': '1',
                             'hw:numa_mem.0': '500', 'hw:numa_mem.1': '524'},
                            memory_mb=1024)
        root = self._xml(server)
        cells = root.findall('./cpu/numa/cell')
        self.assertEqual(2, len(cells))
        # 500 MiB -> 480 MiB, 524 MiB -> 512 MiB; <memory> is their sum.
        self.assertEqual([str(480 * 1024), str(512 * 1024)],
                         [c.get('memory') for c in cells])
        self.assertEqual(str(992 * 1024), root.findtext('memory'))

    def test_host_page_size_read_from_hpage_pmd_size(self):
        # [tlbbalance] thp_page_size_kb = 0 (default): the host's
        # hpage_pmd_size decides; here an arm64 64 KiB-page host (512 MiB).
        self.fake_sysfs(hpage_pmd_size=512 * 1024 * 1024)
        self.start_compute()
        server = self._boot({'tlbbalance:mode': 'monitor'}, memory_mb=1500)
        self.assertEqual(str(1024 * 1024),
                         self._xml(server).findtext('memory'))

    def test_default_page_size_leaves_whole_2m_sizes(self):
        self.start_compute()
        server = self._boot({'tlbbalance:mode': 'monitor'}, memory_mb=1025)
        # 1025 MiB -> 512 x 2 MiB pages = 1024 MiB
        self.assertEqual(str(1024 * 1024),
                         self._xml(server).findtext('memory'))

    def test_thp_with_small_pages_numa_flavor(self):
        # hw:mem_page_size=small gives the guest a NUMA topology but no
        # hugetlbfs pages: THP backing applies.
        self.start_compute()
        server = self._boot({'tlbbalance:mode': 'monitor',
                             'hw:mem_page_size': 'small'})
        root = self._xml(server)
        self.assertIsNone(root.find('memoryBacking/hugepages'))
        self.assertEqual('anonymous',
                         root.find('memoryBacking/source').get('type'))
        self.assertEqual(1, len(root.findall('./cpu/numa/cell')))

    def test_thp_with_4k_page_size_flavor(self):
        # a 4 KiB hw:mem_page_size is the small page: no hugetlbfs
        # backing, so backing=thp is accepted (docs/extra-specs.md)
        self.start_compute()
        server = self._boot({'tlbbalance:mode': 'monitor',
                             'hw:mem_page_size': '4KB'})
        root = self._xml(server)
        self.assertIsNone(root.find('memoryBacking/hugepages'))
        self.assertEqual('anonymous',
                         root.find('memoryBacking/source').get('type'))

    def test_mode_off_still_tagged(self):
        self.start_compute()
        server = self._boot({'tlbbalance:mode': 'off',
                             'tlbbalance:strict': 'true'})
        root = self._xml(server)
        # strict does not imply pre-faulting (the default is lazy)
        self.assertEqual({'mode': 'off', 'backing': 'thp',
                          'tlbi_scope': 'none', 'strict': 'true',
                          'prefault': 'false'},
                         dict(_policy(root)[0].attrib))

    def test_backing_none_leaves_memory_alone(self):
        self.start_compute()
        server = self._boot({'tlbbalance:mode': 'monitor',
                             'tlbbalance:backing': 'none'}, memory_mb=1025)
        root = self._xml(server)
        self.assertIsNone(root.find('memoryBacking'))
        self.assertEqual(str(1025 * 1024), root.findtext('memory'))
        self.assertEqual('none', _policy(root)[0].get('backing'))

    def test_hugetlbfs_with_mem_page_size(self):
        self.start_compute(host_info=self.hugepage_host())
        server = self._boot({'tlbbalance:mode': 'balance',
                             'tlbbalance:backing': 'hugetlbfs',
                             'hw:mem_page_size': 'large'})
        mb = self._xml(server).find('memoryBacking')
        self.assertEqual('2048', mb.find('hugepages/page').get('size'))
        self.assertIsNotNone(mb.find('nosharepages'))
        self.assertIsNone(mb.find('source'))
        self.assertEqual('hugetlbfs',
                         _policy(self._xml(server))[0].get('backing'))

    def test_tlbi_scope_with_dedicated_cpus_keeps_nova_pins(self):
        self.flags(cpu_dedicated_set='0-3', cpu_shared_set=None,
                   group='compute')
        self.start_compute()
        server = self._boot({'tlbbalance:mode': 'balance',
                             'tlbbalance:tlbi_scope': 'die',
                             'hw:cpu_policy': 'dedicated'})
        root = self._xml(server)
        pins = root.findall('./cputune/vcpupin')
        self.assertEqual(2, len(pins))
        # nova's pins: one host CPU per vCPU from cpu_dedicated_set.
        for pin in pins:
            self.assertIn(pin.get('cpuset'), ('0', '1', '2', '3'))
        self.assertEqual('die', _policy(root)[0].get('tlbi_scope'))

    def test_default_mode_manages_untagged_flavors(self):
        self.flags(default_mode='monitor', default_backing='none',
                   group='tlbbalance')
        self.start_compute()
        server = self._boot({})
        pol = _policy(self._xml(server))[0]
        self.assertEqual(('monitor', 'none'),
                         (pol.get('mode'), pol.get('backing')))
