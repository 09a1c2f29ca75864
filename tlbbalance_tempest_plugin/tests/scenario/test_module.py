"""Hosts with the kernel module: placement tells them apart, and a server
booted through the API is registered with the module."""

from tempest import config
from tempest.lib import decorators

from tlbbalance_tempest_plugin import hosts
from tlbbalance_tempest_plugin.tests import base

CONF = config.CONF


class ModuleTraitTest(base.TLBBalanceTest):

    @decorators.idempotent_id('a4c2e3f1-7b9d-4e2a-9c8f-5d1e0b3a7c01')
    def test_module_flavor_lands_only_on_trait_hosts(self):
        trait = CONF.tlbbalance.module_trait
        with_trait = self.hosts_with_trait(trait)
        computes = {s['host'] for s in self.services_client.list_services(
            binary='nova-compute')['services'] if s['state'] == 'up'}
        # what placement says agrees with each host's module
        for h in computes:
            loaded = hosts.for_host(h).module_loaded()
            self.assertEqual(loaded, h in with_trait,
                             'host %s: module loaded=%s but trait %s %s'
                             % (h, loaded, trait, 'set' if h in with_trait
                                else 'missing'))
        flavor = self.tagged_flavor(
            mode='balance', **{'trait:%s' % trait: 'required'})
        server = self.boot_until_settled(flavor)
        if not with_trait:
            self.assertEqual('ERROR', server['status'])
            self.assertIn('No valid host', server['fault']['message'])
        else:
            self.assertEqual('ACTIVE', server['status'])
            self.assertIn(server['OS-EXT-SRV-ATTR:host'], with_trait)

    @decorators.idempotent_id('a4c2e3f1-7b9d-4e2a-9c8f-5d1e0b3a7c02')
    def test_registered_with_flavor_parameters(self):
        trait = CONF.tlbbalance.module_trait
        if not self.hosts_with_trait(trait):
            self.skipTest('no compute host has %s (no tlbbalance kernel '
                          'module loaded anywhere): registration is '
                          'checked on a kvm host' % trait)
        flavor = self.tagged_flavor(
            mode='monitor', imbalance_threshold='30',
            **{'trait:%s' % trait: 'required'})
        server = self.boot(flavor)
        host, domain = self.where(server['id'])
        self.modules_present(host)
        rep = hosts.wait_until('%s registered on %s' % (domain, host.name),
                               lambda: (lambda r: r if r and r.get(
                                   'module', {}).get('registered')
                                   else None)(host.vm(domain)),
                               CONF.tlbbalance.host_check_timeout)
        st = rep['module']['status']
        self.assertEqual(str(rep['pid']), str(st['pid']))
        self.assertEqual('monitor', st['mode'])
        self.assertEqual('30', str(st.get('imbalance_threshold')))
