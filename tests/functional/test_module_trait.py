# SPDX-License-Identifier: Apache-2.0
"""CUSTOM_TLBBALANCE_MODULE follows the module: the driver plugin adds the
trait to its compute node's resource provider while the module can take
registrations and removes it while it cannot, at every resource update
(nova's ``update_available_resource`` periodic task: every
``[DEFAULT] update_resources_interval`` seconds, 60 when 0).

nova's real resource tracker, report client and placement (in process);
the module's configfs root is the harness's stand-in directory
(base.fake_sysfs): no kernel module runs in nova's harness, so "unloaded"
is its ``vms/`` going away and "broken" an unreadable interface version,
as ``modclient.Client.usable`` reads the real one.
"""

import os
import pathlib
import shutil

from fake_module import fake_module_tree  # tests/ is on sys.path

from . import base

TRAIT = 'CUSTOM_TLBBALANCE_MODULE'


class TestModuleTrait(base.TLBBalanceTestBase):

    def setUp(self):
        super().setUp()
        self.start_compute(hostname='compute1')
        self.rp = self._get_provider_uuid_by_host('compute1')

    def traits(self):
        return set(self._get_provider_traits(self.rp))

    def unload(self):
        shutil.rmtree(self.configfs)

    def load(self):
        fake_module_tree(pathlib.Path(self.configfs), vms=())

    def boot_requiring_trait(self, expected_state):
        flavor = self._create_flavor(
            memory_mb=1024, extra_spec={'tlbbalance:mode': 'monitor',
                                        'trait:%s' % TRAIT: 'required'})
        return self._create_server(flavor_id=flavor, networks='none',
                                   expected_state=expected_state)

    def test_trait_reported_while_the_module_is_usable(self):
        self.assertIn(TRAIT, self.traits())
        self.boot_requiring_trait('ACTIVE')

    def test_trait_withdrawn_at_the_next_update_and_back_after(self):
        self.unload()
        # placement still says what the last update said ...
        self.assertIn(TRAIT, self.traits())
        self._run_periodics()
        # ... until the next resource update
        self.assertNotIn(TRAIT, self.traits())
        server = self.boot_requiring_trait('ERROR')
        self.assertIn('No valid host', self.fault(server)['message'])
        self.load()
        self._run_periodics()
        self.assertIn(TRAIT, self.traits())
        self.boot_requiring_trait('ACTIVE')

    def test_broken_module_counts_as_absent(self):
        os.unlink(os.path.join(self.configfs, 'version'))
        self._run_periodics()
        self.assertNotIn(TRAIT, self.traits())
        with open(os.path.join(self.configfs, 'version'), 'w') as f:
            f.write('garbage\n')
        self._run_periodics()
        self.assertNotIn(TRAIT, self.traits())
        with open(os.path.join(self.configfs, 'version'), 'w') as f:
            f.write('1\n')
        self._run_periodics()
        self.assertIn(TRAIT, self.traits())

    def test_other_traits_left_alone(self):
        # an operator's own trait, set through placement, survives the
        # plugin's updates both ways
        self._create_trait('CUSTOM_RACK_A')
        traits = self.traits() | {'CUSTOM_RACK_A'}
        self._set_provider_traits(self.rp, sorted(traits))
        self.unload()
        self._run_periodics()
        self.assertEqual(traits - {TRAIT}, self.traits())
        self.load()
        self._run_periodics()
        self.assertEqual(traits, self.traits())

    def test_option_off_leaves_the_trait_to_a_provider_config(self):
        self.flags(report_module_trait=False, group='tlbbalance')
        self.unload()
        self._run_periodics()
        # not the plugin's to withdraw: what set it (here the first
        # update, before the option changed) keeps it
        self.assertIn(TRAIT, self.traits())
