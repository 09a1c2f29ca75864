# SPDX-License-Identifier: Apache-2.0
"""Strict mode: a failing precondition fails the build, clearly, and the
compute service stays up."""

from tempest import config
from tempest.lib.common.utils import data_utils
from tempest.lib import decorators

from tlbbalance_tempest_plugin import hosts
from tlbbalance_tempest_plugin.tests import base

CONF = config.CONF


class StrictModeTest(base.TLBBalanceTest):

    def _services_up(self):
        svcs = self.services_client.list_services(
            binary='nova-compute')['services']
        return {s['host']: s['state'] for s in svcs}

    @decorators.idempotent_id('3d8c1b7e-5f2a-4c61-b7d4-0e9a1f6c2d01')
    def test_no_free_hugepages_strict_hugetlbfs(self):
        up_before = self._services_up()
        computes = [h for h, st in up_before.items() if st == 'up']
        access = [hosts.for_host(h) for h in computes]
        free = [a.free_hugepages()[0] for a in access]
        if not any(free):
            self.skipTest('no compute host has huge pages reserved '
                          '(vm.nr_hugepages)')
        # Take every free huge page on every compute host (outside nova:
        # placement and nova's NUMA accounting still count them free).
        held = []
        for a in access:
            path = '%s/tempest-occupy-%s' % (a.hugetlbfs_mount,
                                             data_utils.rand_uuid())
            self.addCleanup(a.release_hugepages, path)
            a.occupy_hugepages(path)
            held.append((a, path))
        for a, _ in held:
            self.assertEqual(0, a.free_hugepages()[0],
                             'huge pages still free on %s' % a.name)
        flavor = self.tagged_flavor(
            mode='monitor', backing='hugetlbfs', strict='true',
            **{'hw:mem_page_size': 'large'})
        server = self.boot_until_settled(flavor)
        self.assertEqual('ERROR', server['status'])
        fault = server.get('fault', {}).get('message', '')
        self.assertIn('huge pages', fault,
                      'the fault does not name the reason: %r' % fault)
        self.assertIn('tlbbalance', fault)
        self.assertEqual(up_before, self._services_up())
