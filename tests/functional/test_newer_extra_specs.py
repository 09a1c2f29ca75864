# SPDX-License-Identifier: Apache-2.0
"""A compute host meets a flavor key of a newer release (docs/upgrade.md).

During a rolling upgrade nova-api (validating extra specs) may be newer
than a compute host: the host sees ``tlbbalance:*`` keys it does not
know. The flavors here are made at microversion 2.85, before nova
validates extra specs, which is how such a key reaches this release's
driver (this release's own validators refuse it).
"""

from lxml import etree

from nova_tlbbalance.policy import NS

from . import base


class TestNewerExtraSpecs(base.TLBBalanceTestBase):

    def _boot(self, extra_spec, expected_state):
        self.start_compute()
        self.admin_api.microversion = '2.85'
        flavor = self._create_flavor(memory_mb=1024, extra_spec=extra_spec)
        self.admin_api.microversion = 'latest'
        return self._create_server(flavor_id=flavor, networks='none',
                                   expected_state=expected_state)

    def _policy(self, server):
        found = etree.fromstring(self.last_xml(server).encode()).findall(
            './metadata/{%s}policy' % NS)
        self.assertEqual(1, len(found))
        return found[0].attrib

    def test_unknown_key_not_strict_boots_managed_with_a_warning(self):
        server = self._boot({'tlbbalance:mode': 'monitor',
                             'tlbbalance:colour': 'red'}, 'ACTIVE')
        self.assertEqual('monitor', self._policy(server)['mode'])
        self.assertNotIn('colour', self._policy(server))
        self.assertIn('extra spec tlbbalance:colour: not known to this '
                      'release', self.stdlog.logger.output)

    def test_unknown_advisory_key_strict_boots(self):
        server = self._boot({'tlbbalance:mode': 'monitor',
                             'tlbbalance:strict': 'true',
                             'tlbbalance:colour': 'red'}, 'ACTIVE')
        self.assertEqual('true', self._policy(server)['strict'])

    def test_unknown_requirement_not_strict_boots(self):
        server = self._boot({'tlbbalance:mode': 'monitor',
                             'tlbbalance:require_numa': 'true'}, 'ACTIVE')
        self.assertEqual('monitor', self._policy(server)['mode'])
        self.assertIn('a strict policy would be refused',
                      self.stdlog.logger.output)

    def test_unknown_requirement_strict_aborts_naming_it(self):
        server = self._boot({'tlbbalance:mode': 'monitor',
                             'tlbbalance:strict': 'true',
                             'tlbbalance:require_numa': 'true'}, 'ERROR')
        message = self.fault(server)['message']
        self.assertIn('tlbbalance: host compute1: strict policy '
                      '(tlbbalance:strict=true) requires extra spec '
                      'tlbbalance:require_numa', message)
