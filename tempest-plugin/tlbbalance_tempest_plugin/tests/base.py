# SPDX-License-Identifier: Apache-2.0
"""What every tlbbalance test shares: tagged flavors, servers, the host.

Tests act only through the public APIs (an admin creates flavors with
``tlbbalance:*`` extra specs; users boot, resize, migrate, reboot, delete)
and assert on the compute host through :mod:`tlbbalance_tempest_plugin.
hosts` (virsh, /proc through ``tlbbalance status/verify``, configfs).
"""

import xml.etree.ElementTree as ET

from tempest.api.compute import base
from tempest.common import waiters
from tempest import config
from tempest.lib.common.utils import data_utils
from tempest.lib import exceptions as lib_exc

from tlbbalance_tempest_plugin import hosts

CONF = config.CONF
POLICY_NS = 'http://openstack.org/xmlns/tlbbalance/1.0'


class TLBBalanceTest(base.BaseV2ComputeAdminTest):
    # 2.86: extra specs are validated by the API (our validators)
    min_microversion = '2.86'
    max_microversion = 'latest'
    # 1.18: GET /resource_providers?required=<trait>
    placement_min_microversion = '1.18'
    placement_max_microversion = 'latest'

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.service_available.nova:
            raise cls.skipException('nova is not available')

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.services_client = cls.os_admin.services_client
        cls.hypervisor_client = cls.os_admin.hypervisor_client
        cls.placement_client = cls.os_admin.resource_providers_client

    # -- flavors --------------------------------------------------------------

    def tagged_flavor(self, ram=64, vcpus=1, disk=1, **specs):
        """A flavor with extra specs; keys without a ':' get the
        ``tlbbalance:`` prefix."""
        flavor = self.create_flavor(
            ram=ram, vcpus=vcpus, disk=disk,
            name=data_utils.rand_name('tlbb-flavor'))
        if specs:
            self.admin_flavors_client.set_flavor_extra_spec(
                flavor['id'], **{(k if ':' in k else 'tlbbalance:' + k): v
                                 for k, v in specs.items()})
        return flavor

    # -- servers --------------------------------------------------------------

    def boot(self, flavor, wait_until='ACTIVE', **kw):
        server = self.create_test_server(flavor=flavor['id'],
                                         networks='none',
                                         wait_until=wait_until, **kw)
        return self.admin_servers_client.show_server(server['id'])['server']

    def boot_until_settled(self, flavor):
        """Create a server and wait until it is ACTIVE or ERROR (a build
        expected to fail); the admin view of it."""
        body = self.servers_client.create_server(
            name=data_utils.rand_name('tlbb-server'), flavorRef=flavor['id'],
            imageRef=CONF.compute.image_ref, networks='none')['server']
        self.addCleanup(waiters.wait_for_server_termination,
                        self.servers_client, body['id'])
        self.addCleanup(self.servers_client.delete_server, body['id'])
        return hosts.wait_until(
            'server %s ACTIVE or ERROR' % body['id'],
            lambda: (lambda s: s if s['status'] in ('ACTIVE', 'ERROR')
                     else None)(self.admin_servers_client.show_server(
                         body['id'])['server']),
            CONF.compute.build_timeout, interval=1)

    def where(self, server_id):
        """(HostAccess, libvirt domain name) of a server."""
        s = self.admin_servers_client.show_server(server_id)['server']
        return (hosts.for_host(s['OS-EXT-SRV-ATTR:host']),
                s['OS-EXT-SRV-ATTR:instance_name'])

    def wait_active(self, server_id):
        waiters.wait_for_server_status(self.servers_client, server_id,
                                       'ACTIVE')

    # -- the host -------------------------------------------------------------

    def policy_of(self, host, domain):
        """The <tlbbalance:policy> element's attributes (None if absent)
        and the <memoryBacking> children of the live domain XML."""
        root = ET.fromstring(host.domain_xml(domain))
        pol = root.find('metadata/{%s}policy' % POLICY_NS)
        mb = root.find('memoryBacking')
        backing = {} if mb is None else {
            child.tag: dict(child.attrib) for child in mb}
        return (dict(pol.attrib) if pol is not None else None), backing

    def assert_tagged(self, host, domain, mode):
        pol, backing = self.policy_of(host, domain)
        self.assertIsNotNone(pol, 'live XML of %s on %s has no '
                             '<tlbbalance:policy>' % (domain, host.name))
        self.assertEqual(mode, pol['mode'])
        if pol['backing'] == 'thp':
            self.assertEqual({'type': 'anonymous'}, backing.get('source'))
            if pol.get('prefault') == 'false':
                # tlbbalance:prefault=false: faulted in as touched
                self.assertNotIn('allocation', backing)
            else:
                self.assertEqual('immediate',
                                 backing.get('allocation', {}).get('mode'))
            self.assertIn('nosharepages', backing)
        return pol

    def assert_untagged(self, host, domain):
        pol, backing = self.policy_of(host, domain)
        self.assertIsNone(pol, 'untagged server %s has a policy: %s'
                          % (domain, pol))
        self.assertNotIn('source', backing)
        self.assertNotIn('allocation', backing)

    def registered(self, host, domain):
        rep = host.vm(domain)
        return bool(rep and (rep.get('module') or {}).get('registered'))

    def modules_present(self, host):
        """Skip module checks on a host without the module, visibly."""
        if not host.module_loaded():
            self.skipTest('compute host %s has no tlbbalance kernel module '
                          'loaded: module checks skipped (the hook reports '
                          '"module absent")' % host.name)

    def module_hosts(self, what):
        """The hosts with the module trait; none: a skip naming what is
        not checked, or a failure where the cloud promises such a host
        (``[tlbbalance] module_host_required``)."""
        trait = CONF.tlbbalance.module_trait
        found = self.hosts_with_trait(trait)
        if not found:
            why = ('no compute host has %s (no tlbbalance kernel module '
                   'loaded anywhere): %s' % (trait, what))
            if CONF.tlbbalance.module_host_required:
                self.fail(why + '; but [tlbbalance] module_host_required '
                          'says this cloud has one (its kvm host died or '
                          'lost the module?)')
            self.skipTest(why)
        return found

    def hosts_with_trait(self, trait):
        try:
            rps = self.placement_client.list_resource_providers(
                required=trait)['resource_providers']
        except lib_exc.BadRequest as exc:
            # placement knows a custom trait only once some provider (or
            # someone) created it
            if 'No such trait' in str(exc):
                return set()
            raise
        return {rp['name'] for rp in rps}
