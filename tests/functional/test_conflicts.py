# SPDX-License-Identifier: Apache-2.0
"""Contradictory flavors: a clear build failure, never a 500 or a crash."""

import fixtures

from . import base


class TestConflicts(base.TLBBalanceTestBase):

    ADDITIONAL_FILTERS = ['NUMATopologyFilter']

    def _boot(self, extra_spec, vcpu=2, expected_state='ERROR'):
        flavor = self._create_flavor(memory_mb=1024, vcpu=vcpu,
                                     extra_spec=extra_spec)
        return self._create_server(flavor_id=flavor, networks='none',
                                   expected_state=expected_state)

    def _assert_fault(self, server, *words):
        self.assertEqual('ERROR', server['status'])
        fault = self.fault(server)
        for word in words:
            self.assertIn(word, fault['message'])
        self.assertNotIn('tlbbalance: tlbbalance:', fault['message'])
        # The compute service survived: a plain server still boots.
        self._boot({}, expected_state='ACTIVE')

    def test_tlbi_scope_without_dedicated_cpus(self):
        self.start_compute()
        server = self._boot({'tlbbalance:mode': 'balance',
                             'tlbbalance:tlbi_scope': 'die'})
        self._assert_fault(server, 'tlbbalance:tlbi_scope=die',
                           'hw:cpu_policy=dedicated')

    def test_fault_names_the_key_once(self):
        # The reason names its key; the message used to repeat the prefix
        # ("aborted: tlbbalance: tlbbalance:tlbi_scope=die ...").
        self.start_compute()
        server = self._boot({'tlbbalance:tlbi_scope': 'die'})
        self.assertEqual(
            'Build of instance %s aborted: tlbbalance:tlbi_scope=die needs '
            'hw:cpu_policy=dedicated (every vCPU pinned to one host CPU); '
            'vCPU(s) 0,1 are not' % server['id'],
            self.fault(server)['message'])

    def test_hugetlbfs_without_mem_page_size(self):
        self.start_compute()
        server = self._boot({'tlbbalance:backing': 'hugetlbfs'})
        self._assert_fault(server, 'tlbbalance:backing=hugetlbfs',
                           'hw:mem_page_size')

    def test_thp_with_mem_page_size(self):
        self.start_compute(host_info=self.hugepage_host())
        server = self._boot({'tlbbalance:backing': 'thp',
                             'hw:mem_page_size': 'large'})
        self._assert_fault(server, 'tlbbalance:backing=thp',
                           'conflicts with hw:mem_page_size')

    def test_thp_memory_smaller_than_one_huge_page(self):
        self.flags(thp_page_size_kb=2 * 1024 * 1024, group='tlbbalance')
        self.start_compute()
        server = self._boot({'tlbbalance:mode': 'monitor'})
        self._assert_fault(server, 'tlbbalance:backing=thp',
                           'less than one huge page')

    def test_pins_spanning_two_dies_strict(self):
        # fake sysfs: CPUs 0-1 on die 0, 2-3 on die 1; 3 vCPUs must span.
        self.flags(cpu_dedicated_set='0-3', cpu_shared_set=None,
                   group='compute')
        self.start_compute()
        server = self._boot({'tlbbalance:tlbi_scope': 'die',
                             'tlbbalance:strict': 'true',
                             'hw:cpu_policy': 'dedicated'}, vcpu=3)
        fault = self.fault(server)
        self.assertIn('tlbbalance:tlbi_scope=die', fault['message'])
        self.assertIn('span 2 dies', fault['message'])

    def test_pins_spanning_two_dies_not_strict_runs(self):
        self.flags(cpu_dedicated_set='0-3', cpu_shared_set=None,
                   group='compute')
        self.start_compute()
        server = self._boot({'tlbbalance:tlbi_scope': 'die',
                             'hw:cpu_policy': 'dedicated'}, vcpu=3,
                            expected_state='ACTIVE')
        self.assertIn('tlbi_scope="die"', self.last_xml(server))


class TestPluginFailure(base.TLBBalanceTestBase):
    """A bug in the plugin never breaks a VM unless strict was asked for.

    The failure is injected (the XML builder raises); everything else is
    real.
    """

    def setUp(self):
        super().setUp()

        def boom(*args, **kwargs):
            raise RuntimeError('injected plugin failure')

        self.useFixture(fixtures.MonkeyPatch(
            'nova_tlbbalance.guest_config._apply_backing', boom))
        self.start_compute()

    def _boot(self, extra_spec, expected_state):
        flavor = self._create_flavor(memory_mb=1024, extra_spec=extra_spec)
        return self._create_server(flavor_id=flavor, networks='none',
                                   expected_state=expected_state)

    def test_not_strict_boots_with_stock_xml(self):
        server = self._boot({'tlbbalance:mode': 'balance'}, 'ACTIVE')
        xml = self.last_xml(server)
        self.assertNotIn('tlbbalance', xml.replace(
            'name="tlbbalance:mode"', ''))
        self.assertNotIn('<memoryBacking', xml)

    def test_strict_aborts_the_build_with_the_reason(self):
        server = self._boot({'tlbbalance:mode': 'balance',
                             'tlbbalance:strict': 'true'}, 'ERROR')
        message = self.fault(server)['message']
        self.assertIn('aborted: tlbbalance: cannot apply the policy '
                      '(tlbbalance:strict=true): injected plugin failure',
                      message)
