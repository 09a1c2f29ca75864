# SPDX-License-Identifier: Apache-2.0
"""Hosts with the kernel module: placement tells them apart, and a server
booted through the API is registered with the module, with real stage-2
mappings that follow the module's huge page limit (N_hl).

On this machine no PMU counts TLB refills by page size
(docs/design/platform.md#virtualization): the
imbalance is fed through the module's TEST-ONLY injection backend
(``/sys/kernel/debug/tlbbalance/inject``, loaded with ``allow_inject=1``),
and the test checks that the module says so. The controller, the limiter
and KVM's stage-2 mappings (QMP ``query-stats``, read by ``tlbbalance
status``) are real.
"""

import time

from oslo_log import log as logging
from tempest import config
from tempest.lib import decorators

from nova_tlbbalance.simulate import paper
from tlbbalance_tempest_plugin import hosts
from tlbbalance_tempest_plugin.tests import base

CONF = config.CONF
LOG = logging.getLogger(__name__)

# The module's test-only injection backend (docs/kernel-module.md).
TEST_ONLY_INJECT = '/sys/kernel/debug/tlbbalance/inject'
KHUGEPAGED_SLEEP = ('/sys/kernel/mm/transparent_hugepage/khugepaged/'
                    'scan_sleep_millisecs')
# A 128 MiB server: 64 huge pages; the controller acts within seconds
# (1 s sustain, 8 pages a step) and stops at a known floor.
RAM_MIB = 128
FLOOR = 16
BALANCE = {'mode': 'balance', 'backing': 'thp', 'sustain_ms': '1000',
           'step_pages': '8', 'floor_pages': str(FLOOR)}
# The paper's mcf case (huge-TLB refills ~2.18 M/s, small < 450/s), and
# the load moved to the small TLB.
HUGE_LOAD = paper.MCF_VM_REFILLS_PER_S
SMALL_LOAD = HUGE_LOAD[::-1]
# Stage-2 mappings follow the limit within 10-60 s on a quiet machine
# (tools/demo: splits are immediate, khugepaged re-collapses at 100 ms a
# scan); each host probe is one `tlbbalance status` in a node under TCG,
# 2-10 s at load 8.
STAGE2_TIMEOUT = 300


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
        if not with_trait and CONF.tlbbalance.module_host_required:
            self.module_hosts('the flavor can only be refused')
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
        self.module_hosts('registration is checked on a kvm host')
        flavor = self.tagged_flavor(
            mode='monitor', imbalance_threshold='30',
            **{'trait:%s' % trait: 'required'})
        server = self.boot(flavor)
        host, domain = self.where(server['id'])
        self.modules_present(host)
        rep = hosts.wait_until('%s registered on %s' % (domain, host.name),
                               lambda: (lambda r: r if r and (r[
                                   'module'] or {}).get('registered')
                                   else None)(host.vm(domain)),
                               CONF.tlbbalance.host_check_timeout)
        st = rep['module']['status']
        self.assertEqual(str(rep['pid']), str(st['pid']))
        self.assertEqual('monitor', st['mode'])
        self.assertEqual('30', str(st.get('imbalance_threshold')))

    def module_server(self, ram=64, **specs):
        """A server of a module-needing flavor on a host with the module;
        (host, domain, its first registered report)."""
        trait = CONF.tlbbalance.module_trait
        self.module_hosts('stage-2 checks run on a kvm host')
        flavor = self.tagged_flavor(
            ram=ram, **dict(specs, **{'trait:%s' % trait: 'required'}))
        t0 = time.monotonic()
        server = self.boot(flavor)
        t_active = time.monotonic() - t0
        host, domain = self.where(server['id'])
        self.modules_present(host)
        rep = hosts.wait_until('%s registered on %s' % (domain, host.name),
                               lambda: self._registered(host, domain),
                               CONF.tlbbalance.host_check_timeout)
        LOG.info('%s on %s: POST /servers -> ACTIVE %.1f s, registered '
                 '%.1f s after POST', domain, host.name, t_active,
                 time.monotonic() - t0)
        return host, domain, rep

    @staticmethod
    def _registered(host, domain):
        rep = host.vm(domain)
        if rep and (rep.get('module') or {}).get('registered'):
            return rep
        return None

    @staticmethod
    def _sample(host, domain):
        """(N_hl, total pages, stage-2 pages_2m, the module's status) of
        domain, from one ``tlbbalance status``; pages_2m None when the
        host reports no stage-2 counts (TCG)."""
        rep = host.vm(domain) or {}
        st = (rep.get('module') or {}).get('status') or {}
        s2 = rep.get('stage2')
        p2m = s2.get('pages_2m') if isinstance(s2, dict) else None
        return (int(st.get('huge_limit', -1)),
                int(st.get('total_pages', -1)), p2m, st)

    @decorators.idempotent_id('a4c2e3f1-7b9d-4e2a-9c8f-5d1e0b3a7c03')
    def test_registered_server_has_stage2_huge_mappings(self):
        host, domain, rep = self.module_server(mode='monitor')
        self.assertIsInstance(rep.get('stage2'), dict,
                              '%s on %s: no stage-2 counts (%r): not a '
                              'KVM guest?' % (domain, host.name,
                                              rep.get('stage2')))
        got = hosts.wait_until(
            'stage-2 pages_2m > 0 for %s on %s' % (domain, host.name),
            lambda: (lambda p: p if p and p > 0 else None)(
                self._sample(host, domain)[2]),
            STAGE2_TIMEOUT, interval=2)
        self.assertGreater(got, 0)
        LOG.info('%s on %s: stage-2 pages_2m=%d', domain, host.name, got)

    @decorators.idempotent_id('a4c2e3f1-7b9d-4e2a-9c8f-5d1e0b3a7c04')
    def test_pages_2m_follows_huge_limit_under_injected_imbalance(self):
        host, domain, rep = self.module_server(ram=RAM_MIB, **BALANCE)
        vm = rep['module']['dir']      # the VM's name in the module
        n_hl, total, p2m, st = self._sample(host, domain)
        self.assertEqual(RAM_MIB // 2, total, st)
        self.assertEqual(total, n_hl, 'a new server starts with every '
                         'page allowed huge: %r' % st)
        before = hosts.wait_until(
            'stage-2 pages_2m > %d for %s' % (FLOOR, domain),
            lambda: (lambda p: p if p and p > FLOOR else None)(
                self._sample(host, domain)[2]),
            STAGE2_TIMEOUT, interval=2)

        # khugepaged re-collapses quickly when the limit comes back; put
        # the node's setting back afterwards
        old = host.read(KHUGEPAGED_SLEEP).strip()
        self.addCleanup(host.write, KHUGEPAGED_SLEEP, old + '\n', False)
        host.write(KHUGEPAGED_SLEEP, '100\n')

        # huge TLB thrashed (TEST-ONLY injected refill rates): N_hl goes
        # down to the floor and the stage-2 huge mappings with it
        self.addCleanup(host.write, TEST_ONLY_INJECT, '%s off\n' % vm,
                        False)
        host.write(TEST_ONLY_INJECT, '%s %d %d\n' % ((vm,) + HUGE_LOAD))

        def down():
            n_hl, _, p2m, st = self._sample(host, domain)
            return st if n_hl == FLOOR and p2m is not None and \
                p2m <= FLOOR else None
        st = hosts.wait_until('N_hl == %d and pages_2m <= N_hl for %s'
                              % (FLOOR, domain), down, STAGE2_TIMEOUT,
                              interval=2)
        LOG.info('%s: injected huge-TLB load: N_hl=%s pages_2m<=%d '
                 '(before %d), splits=%s', domain, st.get('huge_limit'),
                 FLOOR, before, st.get('splits'))
        self.assertEqual('inject', st.get('backend'), st)
        self.assertEqual('1', str(st.get('inject_enabled')), st)

        # the load moves to the small TLB: N_hl back to the whole VM and
        # the huge mappings come back with it
        host.write(TEST_ONLY_INJECT, '%s %d %d\n' % ((vm,) + SMALL_LOAD))

        def up():
            n_hl, total, p2m, st = self._sample(host, domain)
            return p2m if n_hl == total and p2m is not None and \
                p2m > FLOOR else None
        after = hosts.wait_until(
            'N_hl back to %d and pages_2m above the floor for %s'
            % (RAM_MIB // 2, domain), up, STAGE2_TIMEOUT, interval=2)
        LOG.info('%s: small-TLB load: N_hl back to %d, pages_2m=%d',
                 domain, RAM_MIB // 2, after)
        self.assertGreater(after, FLOOR)
