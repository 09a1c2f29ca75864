# SPDX-License-Identifier: Apache-2.0
"""The API refuses a bad tlbbalance:* extra spec, naming key and values."""

from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from tlbbalance_tempest_plugin.tests import base


class ExtraSpecValidationTest(base.TLBBalanceTest):

    @decorators.idempotent_id('6c0d7e9e-4a4f-4a57-9d1c-1f0d4a6f2a01')
    def test_bad_mode_names_key_and_allowed_values(self):
        flavor = self.tagged_flavor()
        exc = self.assertRaises(
            lib_exc.BadRequest,
            self.admin_flavors_client.set_flavor_extra_spec,
            flavor['id'], **{'tlbbalance:mode': 'fast'})
        msg = str(exc)
        self.assertIn('tlbbalance:mode', msg)
        for allowed in ('off', 'monitor', 'balance'):
            self.assertIn(allowed, msg)

    @decorators.idempotent_id('6c0d7e9e-4a4f-4a57-9d1c-1f0d4a6f2a02')
    def test_unknown_key_is_refused(self):
        flavor = self.tagged_flavor()
        exc = self.assertRaises(
            lib_exc.BadRequest,
            self.admin_flavors_client.set_flavor_extra_spec,
            flavor['id'], **{'tlbbalance:imbalance_treshold': '20'})
        self.assertIn('tlbbalance:imbalance_treshold', str(exc))

    @decorators.idempotent_id('6c0d7e9e-4a4f-4a57-9d1c-1f0d4a6f2a03')
    def test_good_specs_are_stored(self):
        specs = {'tlbbalance:mode': 'balance',
                 'tlbbalance:imbalance_threshold': '20',
                 'tlbbalance:backing': 'thp'}
        flavor = self.tagged_flavor()
        self.admin_flavors_client.set_flavor_extra_spec(flavor['id'],
                                                        **specs)
        got = self.admin_flavors_client.list_flavor_extra_specs(
            flavor['id'])['extra_specs']
        self.assertEqual(specs, got)
