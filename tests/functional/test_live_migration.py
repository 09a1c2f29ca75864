# SPDX-License-Identifier: Apache-2.0
"""Live migration keeps the policy: destination XML and destination checks.

Two computes (``host_a``, ``host_b``) in nova's functional harness with the
driver plugin; servers are booted on host_a through the REST API and live
migrated to host_b (``os-migrateLive``). nova's fake libvirt cannot migrate:
``migrateToURI3`` is replaced by a stub that records the
``destination_xml`` nova hands to libvirt, creates the domain on host_b
from it and completes the job (as nova's own live migration tests do).

The fake's ``XMLDesc()`` drops ``<metadata>`` and ``<memoryBacking>``,
which real libvirt returns (also with ``VIR_DOMAIN_XML_MIGRATABLE``, the
flag nova reads the source XML with). :class:`DomainXMLAsLibvirt` makes the
fake keep both, so nova's migration code edits the XML real libvirt would
give it.

The fake sysfs (base.fake_sysfs) is shared by both hosts: CPUs 0-1 on
die 0, CPUs 2-3 on die 1.
"""

import copy
import unittest

import fixtures
from lxml import etree

from nova import context as nova_context
from nova import objects
from nova.objects import migrate_data as nova_migrate_data
from nova.tests.fixtures import libvirt as fakelibvirt
from nova.virt.libvirt import driver as libvirt_driver

from nova_tlbbalance import driver
from nova_tlbbalance import policy as tlbb_policy
from . import base

NS = {'t': tlbb_policy.NS}


class DomainXMLAsLibvirt(fixtures.Fixture):
    """nova's fake Domain whose XMLDesc() keeps <metadata>, <memoryBacking>.

    Both are copied, unchanged and in libvirt's order (``<metadata>`` after
    ``<uuid>``, ``<memoryBacking>`` after ``<currentMemory>``), from the XML
    the domain was defined or created with: what real libvirt returns for
    them. Everything else is the fake's own output.
    """

    def _setUp(self):
        real_parse = fakelibvirt.Domain._parse_definition
        real_desc = fakelibvirt.Domain.XMLDesc

        def parse(dom, xml):
            dom._tlbb_given_xml = xml
            return real_parse(dom, xml)

        def xml_desc(dom, flags):
            out = etree.fromstring(real_desc(dom, flags))
            given = etree.fromstring(dom._tlbb_given_xml)
            for tag, after in (('metadata', 'uuid'),
                               ('memoryBacking', 'currentMemory')):
                elem = given.find(tag)
                if elem is not None and out.find(tag) is None:
                    out.find(after).addnext(copy.deepcopy(elem))
            return etree.tostring(out, encoding='unicode')

        self.useFixture(fixtures.MockPatchObject(
            fakelibvirt.Domain, '_parse_definition', parse))
        self.useFixture(fixtures.MockPatchObject(
            fakelibvirt.Domain, 'XMLDesc', xml_desc))


class LiveMigrationTestBase(base.TLBBalanceTestBase):

    ADDITIONAL_FILTERS = ['NUMATopologyFilter']

    def setUp(self):
        super().setUp()
        self.useFixture(DomainXMLAsLibvirt())
        self.useFixture(fixtures.MonkeyPatch(
            'nova.tests.fixtures.libvirt.Domain.migrateToURI3',
            self._migrate_stub))
        self.destination_xml = []

    def _migrate_stub(self, domain, destination, params, flags):
        xml = params['destination_xml']
        self.destination_xml.append(xml)
        self.computes['host_b'].driver._host.get_connection().createXML(
            xml, 0)
        conn = self.computes['host_a'].driver._host.get_connection()
        conn.lookupByUUIDString(
            etree.fromstring(xml).findtext('uuid')).complete_job()

    def start_hosts(self, host_info=None):
        for host in ('host_a', 'host_b'):
            self.start_compute(hostname=host, host_info=host_info)

    def boot(self, extra_spec, host='host_a', vcpu=2, memory_mb=1024):
        flavor = self._create_flavor(memory_mb=memory_mb, vcpu=vcpu,
                                     extra_spec=extra_spec)
        server = self._create_server(flavor_id=flavor, networks='none',
                                     host=host)
        self.assertEqual(host, self.host_of(server))
        return server

    def host_of(self, server):
        return self.admin_api.get_server(server['id'])[
            'OS-EXT-SRV-ATTR:host']

    def migrate(self, server):
        """Live migrate ``server`` to host_b; the destination XML."""
        # what nova's _live_migrate(host=) does in later releases; nova 31's
        # helper has no host argument (tox -e functional-nova31)
        self.api.post_server_action(
            server['id'],
            {'os-migrateLive': {'host': 'host_b', 'block_migration': 'auto'}})
        self._wait_for_migration_status(server, ['completed'])
        self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual('host_b', self.host_of(server))
        self.assertEqual(1, len(self.destination_xml))
        return etree.fromstring(self.destination_xml[0])

    def migrate_refused(self, server):
        """Live migrate ``server`` to host_b, expect a refusal."""
        # nova's harness turns RPC casts into calls (CastAsCallFixture), so
        # the conductor's NoValidHost (host_b failed its pre-checks) reaches
        # the API as a 500, as in nova's own NUMA live migration tests; a
        # real API casts and answers 202.
        self.admin_api.api_post(
            '/servers/%s/action' % server['id'],
            {'os-migrateLive': {'host': 'host_b', 'block_migration': 'auto'}},
            check_response_status=[500])
        self._wait_for_migration_status(server, ['error'])
        self._wait_for_state_change(server, 'ACTIVE')
        self.assertEqual([], self.destination_xml,
                         'the migration was refused yet started')
        self.assertEqual('host_a', self.host_of(server))

    def precheck_fault(self, server):
        """The destination's pre-check fault (an ACTIVE server's API shows
        none; the conductor records NoValidHost after it)."""
        faults = objects.InstanceFaultList.get_by_instance_uuids(
            nova_context.get_admin_context(), [server['id']])
        found = [f.message for f in faults
                 if f.message.startswith('Migration pre-check error: ')]
        self.assertEqual(1, len(found), [f.message for f in faults])
        return found[0]

    def policy_of(self, root):
        found = root.findall('./metadata/t:policy', NS)
        self.assertEqual(1, len(found), 'one <tlbbalance:policy> expected')
        return dict(found[0].attrib)


class TestLiveMigrationBacking(LiveMigrationTestBase):

    def test_thp_destination_keeps_source_and_allocation(self):
        # nova's _update_memory_backing_xml drops <source> and
        # <allocation>; the destination must get them back.
        self.start_hosts()
        server = self.boot({'tlbbalance:mode': 'balance',
                            'tlbbalance:prefault': 'true',
                            'tlbbalance:imbalance_threshold': '30'},
                           memory_mb=1025)
        root = self.migrate(server)
        mb = root.find('memoryBacking')
        self.assertIsNotNone(mb, 'no <memoryBacking> on the destination')
        self.assertEqual(['nosharepages', 'source', 'allocation'],
                         [c.tag for c in mb])
        self.assertEqual({'type': 'anonymous'}, dict(mb.find('source').attrib))
        self.assertEqual({'mode': 'immediate'},
                         dict(mb.find('allocation').attrib))
        # The guest's RAM is what it booted with (rounded then to 1024 MiB
        # of whole 2 MiB pages); never resized in flight.
        self.assertEqual('1048576', root.findtext('memory'))
        self.assertEqual({'mode': 'balance', 'backing': 'thp',
                          'tlbi_scope': 'none', 'strict': 'false'},
                         self.policy_of(root))
        self.assertEqual(
            [('imbalance_threshold', '30')],
            [(p.get('name'), p.get('value'))
             for p in root.findall('./metadata/t:policy/t:param', NS)])

    def test_prefault_false_destination_keeps_it(self):
        self.start_hosts()
        server = self.boot({'tlbbalance:mode': 'monitor',
                            'tlbbalance:prefault': 'false'})
        root = self.migrate(server)
        mb = root.find('memoryBacking')
        self.assertEqual(['nosharepages', 'source'], [c.tag for c in mb])
        self.assertEqual({'mode': 'monitor', 'backing': 'thp',
                          'tlbi_scope': 'none', 'strict': 'false',
                          'prefault': 'false'}, self.policy_of(root))

    def test_thp_refuses_file_backed_destination(self):
        self.start_hosts()
        server = self.boot({'tlbbalance:mode': 'monitor'})
        # host_b backs guest memory with files (nova.conf, read by the
        # destination's checks during the migration).
        self.flags(file_backed_memory=16384, group='libvirt')
        self.migrate_refused(server)
        message = self.precheck_fault(server)
        self.assertIn('tlbbalance:backing=thp conflicts with this host\'s '
                      '[libvirt] file_backed_memory', message)

    def test_hugetlbfs_destination_keeps_pages(self):
        self.start_hosts(host_info=self.hugepage_host())
        server = self.boot({'tlbbalance:mode': 'balance',
                            'tlbbalance:backing': 'hugetlbfs',
                            'hw:mem_page_size': 'large'})
        root = self.migrate(server)
        mb = root.find('memoryBacking')
        self.assertEqual(['hugepages', 'nosharepages'], [c.tag for c in mb])
        self.assertEqual('2048', mb.find('hugepages/page').get('size'))
        self.assertEqual('hugetlbfs', self.policy_of(root)['backing'])

    def test_hugetlbfs_refuses_file_backed_destination(self):
        # nova refuses hw:mem_page_size with file-backed memory at boot but
        # not on live migration: it would add <source type='file'/> and
        # shared access next to <hugepages>.
        self.start_hosts(host_info=self.hugepage_host())
        server = self.boot({'tlbbalance:mode': 'balance',
                            'tlbbalance:backing': 'hugetlbfs',
                            'hw:mem_page_size': 'large'})
        self.flags(file_backed_memory=16384, group='libvirt')
        self.migrate_refused(server)
        self.assertIn('tlbbalance:backing=hugetlbfs conflicts with this '
                      'host\'s [libvirt] file_backed_memory',
                      self.precheck_fault(server))

    def test_untagged_destination_xml_is_nova_s(self):
        # No policy: the plugin leaves nova's destination XML alone.
        self.start_hosts()
        server = self.boot({})
        root = self.migrate(server)
        self.assertEqual([], root.findall('./metadata/t:policy', NS))
        self.assertIsNone(root.find('memoryBacking'))


class TestLiveMigrationScope(LiveMigrationTestBase):
    """tlbi_scope=die: the destination's pins are checked there.

    host_b runs a 1-vCPU pinned server on CPU 0 (or 2 vCPUs on 0-1), so the
    migrating 2-vCPU server gets CPUs 1,2 (two dies) or 2,3 (die 1).
    """

    def setUp(self):
        super().setUp()
        self.flags(cpu_dedicated_set='0-3', cpu_shared_set=None,
                   group='compute')
        self.start_hosts()

    def occupy_host_b(self, vcpu):
        self.boot({'hw:cpu_policy': 'dedicated'}, host='host_b', vcpu=vcpu)

    def pins(self, root):
        return sorted(int(p.get('cpuset'))
                      for p in root.findall('./cputune/vcpupin'))

    def scoped(self, strict):
        return self.boot({'tlbbalance:mode': 'monitor',
                          'tlbbalance:tlbi_scope': 'die',
                          'tlbbalance:strict': strict,
                          'hw:cpu_policy': 'dedicated'})

    def test_strict_refuses_pins_spanning_two_dies(self):
        self.occupy_host_b(vcpu=1)
        server = self.scoped('true')
        self.migrate_refused(server)
        message = self.precheck_fault(server)
        self.assertIn('tlbbalance:tlbi_scope=die', message)
        self.assertIn('host CPUs 1-2, which span 2 dies', message)
        # The fault is cut at 255 characters; the log has all of it.
        self.assertIn('per die) (tlbbalance:strict=true)',
                      self.stdlog.logger.output)

    def test_not_strict_migrates_and_warns(self):
        self.occupy_host_b(vcpu=1)
        server = self.scoped('false')
        root = self.migrate(server)
        self.assertEqual([1, 2], self.pins(root))
        self.assertIn('which span 2 dies', self.stdlog.logger.output)
        self.assertEqual('die', self.policy_of(root)['tlbi_scope'])

    def test_strict_migrates_within_one_die(self):
        self.occupy_host_b(vcpu=2)
        server = self.scoped('true')
        root = self.migrate(server)
        self.assertEqual([2, 3], self.pins(root))
        self.assertEqual({'mode': 'monitor', 'backing': 'thp',
                          'tlbi_scope': 'die', 'strict': 'true',
                          'prefault': 'false'},
                         self.policy_of(root))


class TestLiveMigrationSourceOfTruth(LiveMigrationTestBase):
    """The destination XML keeps the running guest's <metadata> policy."""

    def test_guest_started_unmanaged_migrates_unmanaged(self):
        self.start_hosts()
        server = self.boot({})
        # Later the operator manages untagged flavors: the running guest
        # has no policy; migrating must not change its memory backing.
        self.flags(default_mode='monitor', group='tlbbalance')
        root = self.migrate(server)
        self.assertEqual([], root.findall('./metadata/t:policy', NS))
        self.assertIsNone(root.find('memoryBacking'))
        self.assertIn('the guest runs with policy None',
                      self.stdlog.logger.output)

    def test_flavor_defaults_changed_keeps_running_policy(self):
        self.start_hosts()
        server = self.boot({'tlbbalance:mode': 'monitor'})
        self.flags(default_backing='none', group='tlbbalance')
        root = self.migrate(server)
        self.assertEqual('thp', self.policy_of(root)['backing'])
        self.assertEqual('anonymous',
                         root.find('memoryBacking/source').get('type'))
        self.assertIn("backing='none'", self.stdlog.logger.output)


class TestLiveMigrationPluginFailure(LiveMigrationTestBase):
    """A plugin failure while building the destination XML (injected: the
    backing step raises) blocks the migration only with strict=true."""

    def inject(self):
        def boom(*args, **kwargs):
            raise RuntimeError('injected plugin failure')

        self.useFixture(fixtures.MonkeyPatch(
            'nova_tlbbalance.guest_config._apply_backing', boom))

    def test_not_strict_migrates_with_nova_xml(self):
        self.start_hosts()
        server = self.boot({'tlbbalance:mode': 'monitor'})
        self.inject()
        root = self.migrate(server)
        self.assertIsNone(root.find('memoryBacking/source'))
        self.assertIn('cannot keep the policy on the destination',
                      self.stdlog.logger.output)

    def test_strict_refuses_the_migration_guest_stays(self):
        # The source's pre-check runs the same step on the running XML, so
        # the failure refuses the migration before it starts (failing in
        # the migration itself would leave the instance in ERROR).
        self.start_hosts()
        server = self.boot({'tlbbalance:mode': 'monitor',
                            'tlbbalance:strict': 'true'})
        self.inject()
        self.migrate_refused(server)
        self.assertIn('cannot keep the policy on the destination '
                      '(tlbbalance:strict=true): injected plugin failure',
                      self.precheck_fault(server))


class TestLiveMigrationJudgesRunningPolicy(LiveMigrationTestBase):
    """The destination is judged on the policy the guest runs with (its
    domain ``<metadata>`` on the source), not on its flavor resolved
    against the destination's ``[tlbbalance] default_*`` options, and a
    refusal is a pre-check error: the guest stays ACTIVE on the source.

    The two computes share one nova.conf and one process: what is set after
    the boot on host_a is what host_b has.
    """

    def test_thp_guest_refused_by_file_backed_default_none_host(self):
        # host_b's defaults make the flavor unmanaged-by-backing
        # (backing=none), so judging the flavor there saw no conflict; the
        # guest runs THP-backed, and nova's destination XML gets file
        # backing.
        self.start_hosts()
        server = self.boot({'tlbbalance:mode': 'monitor'})
        self.flags(file_backed_memory=16384, group='libvirt')
        self.flags(default_backing='none', group='tlbbalance')
        self.migrate_refused(server)
        self.assertIn('tlbbalance:backing=thp conflicts with this host\'s '
                      '[libvirt] file_backed_memory',
                      self.precheck_fault(server))

    def test_scope_from_source_defaults_refuses_two_dies(self):
        # tlbi_scope=die and strict come from host_a's defaults; the
        # flavor alone (host_b has no such defaults) asks for no scope.
        self.flags(cpu_dedicated_set='0-3', cpu_shared_set=None,
                   group='compute')
        self.flags(default_tlbi_scope='die', default_strict=True,
                   group='tlbbalance')
        self.start_hosts()
        self.boot({'hw:cpu_policy': 'dedicated'}, host='host_b', vcpu=1)
        server = self.boot({'tlbbalance:mode': 'monitor',
                            'hw:cpu_policy': 'dedicated'})
        self.flags(default_tlbi_scope=None, default_strict=None,
                   group='tlbbalance')
        self.migrate_refused(server)
        message = self.precheck_fault(server)
        self.assertIn('tlbbalance:tlbi_scope=die', message)
        self.assertIn('span 2 dies', message)

    def test_strict_guest_refused_by_host_without_module(self):
        # host_b has no tlbbalance module loaded.
        self.start_hosts()
        server = self.boot({'tlbbalance:mode': 'monitor',
                            'tlbbalance:strict': 'true'})
        self.useFixture(fixtures.MonkeyPatch(
            'nova_tlbbalance.driver.CONFIGFS',
            self.configfs + '-absent'))
        self.migrate_refused(server)
        message = self.precheck_fault(server)
        self.assertIn('kernel module is not loaded', message)

    def test_not_strict_guest_migrates_to_host_without_module(self):
        # A non-strict guest is not held back by a missing module (the
        # hook runs it unmanaged there).
        self.start_hosts()
        server = self.boot({'tlbbalance:mode': 'monitor'})
        self.useFixture(fixtures.MonkeyPatch(
            'nova_tlbbalance.driver.CONFIGFS',
            self.configfs + '-absent'))
        root = self.migrate(server)
        self.assertEqual('monitor', self.policy_of(root)['mode'])

    def test_source_without_the_field_falls_back_to_the_flavor(self):
        # A source without this plugin's pre-check (stock nova, an older
        # release) carries no running policy: the destination judges the
        # flavor with its own options, as before, and says so.
        self.useFixture(fixtures.MonkeyPatch(
            'nova_tlbbalance.driver.TLBBalanceLibvirtDriver'
            '.check_can_live_migrate_source',
            libvirt_driver.LibvirtDriver.check_can_live_migrate_source))
        self.start_hosts()
        server = self.boot({'tlbbalance:mode': 'monitor'})
        self.flags(file_backed_memory=16384, group='libvirt')
        self.migrate_refused(server)
        self.assertIn('tlbbalance:backing=thp conflicts with this host\'s '
                      '[libvirt] file_backed_memory',
                      self.precheck_fault(server))
        self.assertIn('the source did not send the policy the guest runs '
                      'with', self.stdlog.logger.output)


class TestPolicyField(unittest.TestCase):
    """The migrate data field, without services."""

    def test_nova_builds_the_plugin_class(self):
        self.assertIs(driver.LibvirtLiveMigrateData,
                      objects.LibvirtLiveMigrateData)
        self.assertTrue(issubclass(driver.LibvirtLiveMigrateData,
                                   nova_migrate_data.LibvirtLiveMigrateData))

    def test_a_peer_without_the_plugin_ignores_it(self):
        data = driver.LibvirtLiveMigrateData(
            tlbbalance_policy='<p/>', is_shared_block_storage=True)
        primitive = data.obj_to_primitive()
        self.assertIn(driver.POLICY_FIELD, primitive['nova_object.data'])
        stock = nova_migrate_data.LibvirtLiveMigrateData._obj_from_primitive(
            None, data.VERSION, primitive)
        self.assertNotIn(driver.POLICY_FIELD, stock.fields)
        self.assertTrue(stock.is_shared_block_storage)
