# SPDX-License-Identifier: Apache-2.0
"""Common base of the functional tests: nova's own libvirt functional base.

Real nova API (WSGI, in process), scheduler, conductor, placement and a
compute service whose driver is loaded from ``compute_driver`` exactly as an
operator sets it; libvirt underneath is nova's fake libvirt (no host KVM, no
libvirtd here: see tests/integration for the real one). The fake's
``XMLDesc()`` drops ``<memoryBacking>`` and ``<metadata>``, so the XML nova
hands to ``defineXML`` is captured instead.
"""

import os
import pathlib
import sys
import time
from unittest import mock

import fixtures
from lxml import etree

from nova.tests.fixtures import libvirt as fakelibvirt
from nova.tests.functional.libvirt import base

# Registers the [tlbbalance] options, as importing the driver does in
# nova-compute.
import nova_tlbbalance.driver  # noqa: F401
from fake_module import fake_module_tree  # tests/ is on sys.path

OPERATOR_DRIVER = 'tlbbalance.TLBBalanceLibvirtDriver'
STOCK_DRIVER = 'libvirt.LibvirtDriver'


def api_paste_config():
    """nova's api-paste.ini as installed from the wheel (<venv>/etc/nova)."""
    path = os.path.join(sys.prefix, 'etc', 'nova', 'api-paste.ini')
    if not os.path.exists(path):
        raise RuntimeError('nova api-paste.ini not found at %s; is nova '
                           'installed from its wheel in this venv?' % path)
    return path


class TLBBalanceTestBase(base.ServersTestBase):
    """ServersTestBase with our driver and the defineXML XML captured."""

    microversion = 'latest'
    ADMIN_API = True
    compute_driver = OPERATOR_DRIVER

    def setUp(self):
        self.flags(api_paste_config=api_paste_config(), group='wsgi')
        # nova stamps <nova:creationTime> with the current second; a fixed
        # clock (only in nova.virt.driver) makes XML of two runs comparable
        # byte for byte.
        clock = mock.Mock(wraps=time)
        clock.time.return_value = 1767225600.0
        self.useFixture(fixtures.MockPatch('nova.virt.driver.time', clock))
        super().setUp()
        self.sysfs = self.fake_sysfs()
        self.defined = []   # (domain name, XML given to defineXML)
        real_define = fakelibvirt.Connection.defineXML
        test = self

        def define_xml(conn, xml):
            test.defined.append((etree.fromstring(xml).findtext('name'),
                                 xml))
            return real_define(conn, xml)

        self.useFixture(fixtures.MockPatchObject(
            fakelibvirt.Connection, 'defineXML', define_xml))

    def fake_sysfs(self, hpage_pmd_size=2 * 1024 * 1024,
                   die_of_cpu=(0, 0, 1, 1)):
        """The compute host's sysfs as the plugin reads it, in a temp dir.

        nova's harness forbids reading the real /sys in functional tests
        (the fake host's CPUs are not this machine's). The driver reads
        every host fact under ``driver.SYS_ROOT`` (hostfacts), as the hook
        and ``verify`` do under theirs. Default: 2 MiB PMD
        huge pages; 4 CPUs, 0-1 on die 0 and 2-3 on die 1 of package 0.
        """
        root = self.useFixture(fixtures.TempDir()).path
        thp = os.path.join(root, 'kernel', 'mm', 'transparent_hugepage')
        os.makedirs(thp)
        with open(os.path.join(thp, 'hpage_pmd_size'), 'w') as f:
            f.write('%d\n' % hpage_pmd_size)
        for cpu, die in enumerate(die_of_cpu):
            topo = os.path.join(root, 'devices', 'system', 'cpu',
                                'cpu%d' % cpu, 'topology')
            os.makedirs(topo)
            for name, value in (('physical_package_id', 0), ('die_id', die),
                                ('cluster_id', cpu // 2)):
                with open(os.path.join(topo, name), 'w') as f:
                    f.write('%d\n' % value)
        # The strict preconditions (driver.SYS_ROOT): host THP madvise,
        # no hugetlbfs pages unless a test writes some.
        with open(os.path.join(thp, 'enabled'), 'w') as f:
            f.write('always [madvise] never\n')
        self.useFixture(fixtures.MonkeyPatch(
            'nova_tlbbalance.driver.SYS_ROOT', root))
        # nova's harness runs no kernel module: a directory with vms/ and
        # an interface version stands in for its configfs root, so strict
        # guests find it "loaded" (tests of a missing module point it
        # elsewhere).
        self.configfs = str(fake_module_tree(
            pathlib.Path(root, 'configfs-tlbbalance'), vms=()))
        self.useFixture(fixtures.MonkeyPatch(
            'nova_tlbbalance.driver.CONFIGFS', self.configfs))
        return root

    def _setup_compute_service(self):
        self.flags(compute_driver=self.compute_driver)

    @staticmethod
    def hugepage_host(huge_pages=1024):
        """A fake host with ``huge_pages`` 2 MiB hugetlbfs pages."""
        host_info = fakelibvirt.HostInfo(
            cpu_nodes=1, cpu_sockets=1, cpu_cores=4, cpu_threads=1,
            kB_mem=16 * 1024 * 1024)
        for cell in host_info.numa_topology.cells:
            cell.mempages = fakelibvirt.create_mempages([
                (4, (host_info.kB_mem - 2048 * huge_pages) // 4),
                (2048, huge_pages)])
        return host_info

    def _get_connection(self, host_info=None, *args, **kwargs):
        # Default fake host: one NUMA node, 4 CPUs, 16 GiB (matches
        # fake_sysfs()).
        host_info = host_info or fakelibvirt.HostInfo(
            cpu_nodes=1, cpu_sockets=1, cpu_cores=4, cpu_threads=1,
            kB_mem=16 * 1024 * 1024)
        return super()._get_connection(host_info, *args, **kwargs)

    def last_xml(self, server):
        """The last XML defined for ``server``'s libvirt domain."""
        name = self.admin_api.get_server(server['id'])[
            'OS-EXT-SRV-ATTR:instance_name']
        found = [xml for dom, xml in self.defined if dom == name]
        self.assertTrue(found, 'no defineXML call for %s' % name)
        return found[-1]

    def fault(self, server):
        return self.admin_api.get_server(server['id']).get('fault', {})
