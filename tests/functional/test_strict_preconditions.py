# SPDX-License-Identifier: Apache-2.0
"""Strict guests: the host's preconditions are checked by the plugin, so a
build that cannot meet them is aborted with the reason as its fault.

Without this check the hook refuses the start later, libvirt reports a
hook failure, nova reschedules and the fault reads only "Exceeded maximum
number of retries" (seen through the real API in tox -e tempest). The
host facts come from the harness's fake tree (base.fake_sysfs): THP
madvise, an empty directory standing in for the module's configfs root.
"""

import os

import fixtures

from . import base


class TestStrictPreconditions(base.TLBBalanceTestBase):

    def _boot(self, extra_spec, expected_state, host_info=None):
        self.start_compute(host_info=host_info)
        flavor = self._create_flavor(memory_mb=1024, extra_spec=extra_spec)
        return self._create_server(flavor_id=flavor, networks='none',
                                   expected_state=expected_state)

    def test_module_absent_aborts_with_the_reason(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova_tlbbalance.driver.CONFIGFS',
            os.path.join(self.sysfs, 'no-such-configfs')))
        server = self._boot({'tlbbalance:mode': 'monitor',
                             'tlbbalance:strict': 'true'}, 'ERROR')
        message = self.fault(server)['message']
        self.assertIn('aborted: tlbbalance: strict policy '
                      '(tlbbalance:strict=true) not met on host compute',
                      message)
        self.assertIn('kernel module is not loaded', message)

    def test_module_absent_not_strict_boots(self):
        self.useFixture(fixtures.MonkeyPatch(
            'nova_tlbbalance.driver.CONFIGFS',
            os.path.join(self.sysfs, 'no-such-configfs')))
        self._boot({'tlbbalance:mode': 'monitor'}, 'ACTIVE')

    def test_module_loaded_strict_boots(self):
        self._boot({'tlbbalance:mode': 'monitor',
                    'tlbbalance:strict': 'true'}, 'ACTIVE')

    def test_thp_never_aborts_with_the_reason(self):
        with open(os.path.join(self.sysfs, 'kernel', 'mm',
                               'transparent_hugepage', 'enabled'), 'w') as f:
            f.write('always madvise [never]\n')
        server = self._boot({'tlbbalance:mode': 'monitor',
                             'tlbbalance:strict': 'true'}, 'ERROR')
        self.assertIn('host transparent huge pages are off',
                      self.fault(server)['message'])

    def test_no_free_hugepages_aborts_with_the_reason(self):
        # nova's accounting (the fake host's 1024 pages) passes; the host
        # itself has none free (the fake tree has no free_hugepages)
        server = self._boot({'tlbbalance:mode': 'monitor',
                             'tlbbalance:backing': 'hugetlbfs',
                             'tlbbalance:strict': 'true',
                             'hw:mem_page_size': '2MB'}, 'ERROR',
                            host_info=self.hugepage_host())
        message = self.fault(server)['message']
        self.assertIn('not enough huge pages', message)
        self.assertIn('512 needed', message)
