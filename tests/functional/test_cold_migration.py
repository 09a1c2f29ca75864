"""Cold migration and resize: the guest restarts, judged where it lands.

nova rebuilds the guest XML on the destination (``finish_migration`` ->
``_get_guest_xml``) from the instance's flavor (the new one for a resize)
and that host's ``[tlbbalance] default_*`` options, and the plugin judges
that same policy there: no split between what is checked and what is
applied, unlike a live migration (tests/functional/test_live_migration.py),
where the guest keeps running with its old policy. nova's driver API has no
destination pre-check for a cold move (``prep_resize`` calls no driver
method), so a refusal there comes after the source powered the guest off
and the instance goes to ERROR with the reason as its fault.

``migrate_disk_and_power_off`` is replaced by a stub returning no disk
info, as in nova's own functional NUMA resize tests: the fake libvirt has
no disks to move.
"""

import fixtures
from lxml import etree

from nova_tlbbalance import policy as tlbb_policy
from . import base

NS = {'t': tlbb_policy.NS}


class TestColdMigration(base.TLBBalanceTestBase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MockPatch(
            'nova.virt.libvirt.driver.LibvirtDriver'
            '.migrate_disk_and_power_off', return_value='{}'))
        for host in ('host_a', 'host_b'):
            self.start_compute(hostname=host)

    def boot(self, extra_spec):
        flavor = self._create_flavor(memory_mb=1024, extra_spec=extra_spec)
        server = self._create_server(flavor_id=flavor, networks='none',
                                     host='host_a')
        self.assertEqual('host_a', self.host_of(server))
        return server

    def host_of(self, server):
        return self.admin_api.get_server(server['id'])[
            'OS-EXT-SRV-ATTR:host']

    def policy_on_arrival(self, server):
        root = etree.fromstring(self.last_xml(server))
        found = root.findall('./metadata/t:policy', NS)
        self.assertEqual(1, len(found))
        return dict(found[0].attrib)

    def test_cold_migration_takes_the_destination_defaults(self):
        server = self.boot({'tlbbalance:mode': 'monitor'})
        self.flags(default_backing='none', group='tlbbalance')
        self._migrate_server(server, host='host_b')
        self.assertEqual('host_b', self.host_of(server))
        self.assertEqual('none', self.policy_on_arrival(server)['backing'])

    def test_strict_cold_migration_to_host_without_module_fails(self):
        server = self.boot({'tlbbalance:mode': 'monitor',
                            'tlbbalance:strict': 'true'})
        self.useFixture(fixtures.MonkeyPatch(
            'nova_tlbbalance.driver.CONFIGFS', self.configfs + '-absent'))
        # nova's harness turns RPC casts into calls, so finish_resize's
        # failure on host_b reaches the API as a 500; a real API answers 202.
        self.admin_api.api_post(
            '/servers/%s/action' % server['id'],
            {'migrate': {'host': 'host_b'}}, check_response_status=[500])
        self._wait_for_state_change(server, 'ERROR')
        message = self.fault(server)['message']
        self.assertIn('strict policy (tlbbalance:strict=true) not met on '
                      'host host_b', message)
        self.assertIn('kernel module is not loaded', message)
