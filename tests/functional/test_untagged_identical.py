# SPDX-License-Identifier: Apache-2.0
"""An untagged flavor's XML is byte-identical to stock nova's.

One compute host, one server: its XML is taken from a hard reboot under
``compute_driver = libvirt.LibvirtDriver``, then the compute service is
restarted (same fake hypervisor) with ``tlbbalance.TLBBalanceLibvirtDriver``
and the server hard-rebooted again. nova's clock for <nova:creationTime> is
fixed (see base), so nothing but the driver differs between the two XMLs.
"""

from lxml import etree

from nova_tlbbalance import driver as tlbb_driver
from nova_tlbbalance import policy as tlbb_policy

from . import base


class TestUntaggedIdentical(base.TLBBalanceTestBase):

    compute_driver = base.STOCK_DRIVER

    def _stock_then_ours(self, extra_spec, memory_mb=1024):
        self.start_compute()
        self.assertNotIsInstance(self.computes['compute1'].driver,
                                 tlbb_driver.TLBBalanceLibvirtDriver)
        flavor = self._create_flavor(memory_mb=memory_mb,
                                     extra_spec=extra_spec)
        server = self._create_server(flavor_id=flavor, networks='none')
        self._reboot_server(server, hard=True)
        stock = self.last_xml(server)

        self.flags(compute_driver=base.OPERATOR_DRIVER)
        compute = self.restart_compute_service('compute1')
        self.assertIsInstance(compute.driver,
                              tlbb_driver.TLBBalanceLibvirtDriver)
        self._reboot_server(server, hard=True)
        ours = self.last_xml(server)
        return stock, ours

    def test_untagged_flavor_byte_identical(self):
        stock, ours = self._stock_then_ours({'hw:cpu_policy': 'shared'})
        self.assertIn('<memory>1048576</memory>', stock)
        self.assertEqual(stock, ours)

    def test_tagged_flavor_only_adds(self):
        # The control: the same procedure does see the plugin's changes,
        # and they are additions only.
        stock, ours = self._stock_then_ours({'tlbbalance:mode': 'balance'})
        self.assertNotEqual(stock, ours)
        parser = etree.XMLParser(remove_blank_text=True)
        root = etree.fromstring(ours.encode(), parser)
        self.assertIsNotNone(root.find('memoryBacking'))
        root.remove(root.find('memoryBacking'))
        meta = root.find('metadata')
        meta.remove(meta.find(tlbb_policy.POLICY_TAG))
        self.assertEqual(
            etree.tostring(etree.fromstring(stock.encode(), parser)),
            etree.tostring(root))
