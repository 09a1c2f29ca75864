# SPDX-License-Identifier: Apache-2.0
"""The host state follows the server through its lifecycle."""

from tempest.common import waiters
from tempest import config
from tempest.lib import decorators

from tlbbalance_tempest_plugin import hosts
from tlbbalance_tempest_plugin.tests import base

CONF = config.CONF


class LifecycleTest(base.TLBBalanceTest):

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.compute_feature_enabled.resize:
            raise cls.skipException('resize is disabled in tempest.conf')

    def _state(self, server_id):
        host, domain = self.where(server_id)
        pol, _ = self.policy_of(host, domain)
        return host, domain, pol

    @decorators.idempotent_id('1e0b9c1a-2f55-4e4c-8a57-6a0f5c7d3c01')
    def test_resize_tagged_untagged_tagged(self):
        tagged = self.tagged_flavor(mode='monitor')
        plain = self.tagged_flavor(ram=96)
        tagged2 = self.tagged_flavor(ram=128, mode='balance',
                                     imbalance_threshold='30')
        server = self.boot(tagged)
        host, domain, pol = self._state(server['id'])
        self.assertEqual('monitor', pol['mode'])

        self.resize_server(server['id'], plain['id'])
        host, domain, pol = self._state(server['id'])
        self.assertIsNone(pol, 'resized to an untagged flavor, the live '
                          'XML still has %s' % pol)
        self.assert_untagged(host, domain)

        self.resize_server(server['id'], tagged2['id'])
        host, domain, pol = self._state(server['id'])
        self.assert_tagged(host, domain, 'balance')
        rep = host.vm(domain)
        self.assertEqual('30', str(rep['policy']['params'].get(
            'imbalance_threshold')))
        self.assertEqual([], host.verify(
            domain, module=host.module_loaded(),
            min_coverage=CONF.tlbbalance.thp_coverage_min))

    @decorators.idempotent_id('1e0b9c1a-2f55-4e4c-8a57-6a0f5c7d3c02')
    def test_cold_migrate_keeps_policy(self):
        if CONF.compute.min_compute_nodes < 2:
            self.skipTest('cold migration needs two compute hosts '
                          '([compute] min_compute_nodes)')
        if not CONF.compute_feature_enabled.cold_migration:
            self.skipTest('cold migration disabled in tempest.conf')
        flavor = self.tagged_flavor(mode='monitor')
        server = self.boot(flavor)
        src = self.get_host_for_server(server['id'])
        self.admin_servers_client.migrate_server(server['id'])
        waiters.wait_for_server_status(self.servers_client, server['id'],
                                       'VERIFY_RESIZE')
        self.servers_client.confirm_resize_server(server['id'])
        self.wait_active(server['id'])
        dst = self.get_host_for_server(server['id'])
        self.assertNotEqual(src, dst)
        host, domain = self.where(server['id'])
        self.assert_tagged(host, domain, 'monitor')
        self.assertNotIn(domain, hosts.for_host(src).domains())
        self.assertEqual([], host.verify(
            domain, module=host.module_loaded(),
            min_coverage=CONF.tlbbalance.thp_coverage_min))

    @decorators.idempotent_id('1e0b9c1a-2f55-4e4c-8a57-6a0f5c7d3c03')
    def test_hard_reboot_then_delete(self):
        flavor = self.tagged_flavor(mode='monitor')
        server = self.boot(flavor)
        host, domain = self.where(server['id'])
        before = host.vm(domain)['pid']
        self.reboot_server(server['id'], type='HARD')
        self.assert_tagged(host, domain, 'monitor')
        after = hosts.wait_until('a new QEMU for %s' % domain,
                                 lambda: (host.vm(domain) or {}).get('pid'),
                                 CONF.tlbbalance.host_check_timeout)
        self.assertNotEqual(before, after)
        self.assertEqual([], host.verify(
            domain, module=host.module_loaded(),
            min_coverage=CONF.tlbbalance.thp_coverage_min))

        self.servers_client.delete_server(server['id'])
        waiters.wait_for_server_termination(self.servers_client,
                                            server['id'])
        hosts.wait_until('%s gone from %s' % (domain, host.name),
                         lambda: domain not in host.domains(),
                         CONF.tlbbalance.host_check_timeout)
        self.assertFalse(self.registered(host, domain))
