# SPDX-License-Identifier: Apache-2.0
"""A mixed-version cloud: one compute host on release N-1, one on N
(docs/upgrade.md, "The mixed-version cloud test").

Two tagged servers, one booted on each host, cold-migrated to the other
(each to the other at once) and then resized back across: every move
ends ACTIVE and is asserted on the host it lands on as the cold-migration
test does (the policy and THP backing in the live XML, every RAM block
aligned, ``verify`` with the coverage bound). The flavors carry a key
release N-1 does not know (``tlbbalance:probe_ms``, a parameter N added)
with ``strict=false``: the N-1 host manages the server with what it knows
(its policy without the parameter) and its driver logs a warning naming
the key; the N host writes the parameter and warns about nothing. What
each side logged is printed (``FIGURES`` in tempest.log) and checked.

The resizes cross hosts through placement traits the test puts on the two
hosts (the way docs/upgrade.md keeps flavors on chosen hosts): the cloud
allows a resize to the same host. Needs ``[tlbbalance]
mixed_version_hosts`` and the hosts' compute logs (the cloud in a box).
"""

import re

from oslo_log import log as logging
from tempest.common import waiters
from tempest import config
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from tlbbalance_tempest_plugin import hosts
from tlbbalance_tempest_plugin.tests import base

CONF = config.CONF
LOG = logging.getLogger(__name__)

# a parameter release N added (method safe); N-1's table has no such key
NEWER_KEY = 'probe_ms'
NEWER_VALUE = '60000'
TRAITS = ('CUSTOM_TLBB_MIXED_N1', 'CUSTOM_TLBB_MIXED_N')
COMPAT = re.compile(r'tlbbalance: host (\S+): (.*not known to this '
                    r'release.*)')


class MixedVersionTest(base.TLBBalanceTest):

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if len(CONF.tlbbalance.mixed_version_hosts) < 2:
            raise cls.skipException('[tlbbalance] mixed_version_hosts '
                                    'names fewer than two hosts')
        if not (CONF.compute_feature_enabled.cold_migration and
                CONF.compute_feature_enabled.resize):
            raise cls.skipException('cold migration or resize disabled '
                                    'in tempest.conf')

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.traits_client = cls.os_admin.placement_client

    # -- placement traits: which host a resize goes to ------------------------

    def _rp(self, name):
        rps = self.placement_client.list_resource_providers(
            name=name)['resource_providers']
        self.assertEqual(1, len(rps), 'resource provider %s' % name)
        return rps[0]['uuid']

    def _set_trait(self, host, trait, add=True):
        """Add (remove) ``trait`` on ``host``'s provider; nova-compute
        keeps traits set from outside, a concurrent update of the provider
        (a 409) is retried."""
        rp = self._rp(host)
        for _ in range(10):
            cur = self.placement_client.list_resource_provider_traits(rp)
            traits = set(cur['traits']) | {trait} if add else \
                set(cur['traits']) - {trait}
            try:
                self.placement_client.update_resource_provider_traits(
                    rp, traits=sorted(traits),
                    resource_provider_generation=cur[
                        'resource_provider_generation'])
                return
            except lib_exc.Conflict:
                continue
        self.fail('could not set trait %s on %s' % (trait, host))

    def _place_traits(self, n1, n):
        for host, trait in zip((n1, n), TRAITS):
            try:
                self.traits_client.create_trait(trait)
            except lib_exc.Conflict:
                pass
            self._set_trait(host, trait)
            self.addCleanup(self._set_trait, host, trait, False)

    # -- the hosts' logs ------------------------------------------------------

    def _log_size(self, host):
        try:
            with open(host.compute_log, 'rb') as f:
                return f.seek(0, 2)
        except FileNotFoundError:
            return 0

    def _compat_lines(self, host, since, server_ids):
        """The driver's contract warnings in ``host``'s nova-compute log
        since offset ``since`` about the servers ``server_ids``."""
        with open(host.compute_log, 'rb') as f:
            f.seek(since)
            text = f.read().decode(errors='replace')
        return [ln for ln in text.splitlines()
                if COMPAT.search(ln) and any(s in ln for s in server_ids)]

    # -- one move ------------------------------------------------------------

    def _landed(self, server_id, want_host, n1_name, mode):
        """The server is ACTIVE on ``want_host``: the cold-migration test's
        checks there; the policy's parameters as that host wrote them."""
        host, domain = self.where(server_id)
        self.assertEqual(want_host, host.name)
        pol = self.assert_tagged(host, domain, mode)
        self.assertEqual('thp', pol['backing'])
        want = CONF.tlbbalance.thp_coverage_min
        # prefault=true: the coverage of all guest RAM is judged; a bound
        # for a loaded machine
        hosts.wait_until(
            'verify of %s on %s clean' % (domain, host.name),
            lambda: host.verify(domain, module=host.module_loaded(),
                                min_coverage=want) == [],
            CONF.tlbbalance.host_check_timeout)
        rep = host.vm(domain)
        self.assertTrue(rep['aligned'], rep['ranges'])
        self.assertEqual([], [r for r in rep['ranges']
                              if r['misalignment']])
        params = {k: str(v) for k, v in rep['policy']['params'].items()}
        if host.name == n1_name:
            # N-1 manages it with what it knows: no such parameter
            self.assertNotIn(NEWER_KEY, params)
        else:
            self.assertEqual(NEWER_VALUE, params.get(NEWER_KEY))
        self.assertEqual('30', params.get('imbalance_threshold'))
        return {'host': host.name, 'domain': domain,
                'coverage': 100.0 * ((rep.get('coverage') or {}).get(
                    'coverage') or 0.0),
                'ranges': len(rep['ranges']),
                'registered': self.registered(host, domain),
                'params': params}

    # the servers are the admin's (booted on a named host): the admin's
    # client throughout
    def _wait(self, server_id, status):
        waiters.wait_for_server_status(self.admin_servers_client,
                                       server_id, status)

    def _wait_moved(self, server_id, dst):
        self._wait(server_id, 'VERIFY_RESIZE')
        self.admin_servers_client.confirm_resize_server(server_id)
        self._wait(server_id, 'ACTIVE')
        self.assertEqual(dst, self.admin_servers_client.show_server(
            server_id)['server']['OS-EXT-SRV-ATTR:host'])

    @decorators.idempotent_id('7d3f2a61-0c4e-4b8e-9a53-1e6f0b2c7d01')
    def test_servers_across_n1_and_n(self):
        n1_name, n_name = CONF.tlbbalance.mixed_version_hosts[:2]
        n1, n = hosts.for_host(n1_name), hosts.for_host(n_name)
        for h in (n1, n):
            if getattr(h, 'compute_log', None) is None:
                self.skipTest('no nova-compute log of %s to read (the '
                              'cloud in a box has them)' % h.name)
        self.assertIsNotNone(n1.release, '%s is not on release N-1 in '
                             'the cloud facts' % n1_name)
        self.assertIsNone(n.release)
        self._place_traits(n1_name, n_name)
        since = {h.name: self._log_size(h) for h in (n1, n)}
        specs = dict(mode='balance', prefault='true', strict='false',
                     imbalance_threshold='30', **{NEWER_KEY: NEWER_VALUE})
        flavor = self.tagged_flavor(**specs)
        # the resize flavors: a little more RAM, on the other host
        to_n1 = self.tagged_flavor(
            ram=96, **dict(specs, **{'trait:' + TRAITS[0]: 'required'}))
        to_n = self.tagged_flavor(
            ram=96, **dict(specs, **{'trait:' + TRAITS[1]: 'required'}))

        # booted by the admin on each host (nova:HOST), both at once
        servers = {}
        for name in (n1_name, n_name):
            servers[name] = self.create_test_server(
                clients=self.os_admin, flavor=flavor['id'],
                networks='none', availability_zone='nova:%s' % name,
                wait_until=None)['id']
        for s in servers.values():
            self._wait(s, 'ACTIVE')
        a, b = servers[n1_name], servers[n_name]     # a starts on N-1
        seen = [self._landed(a, n1_name, n1_name, 'balance'),
                self._landed(b, n_name, n1_name, 'balance')]

        # cold migration, each to the other host, at once
        for s, dst in ((a, n_name), (b, n1_name)):
            self.admin_servers_client.migrate_server(s, host=dst)
        for s, dst in ((a, n_name), (b, n1_name)):
            self._wait_moved(s, dst)
        seen += [self._landed(a, n_name, n1_name, 'balance'),
                 self._landed(b, n1_name, n1_name, 'balance')]

        # resize back across (the flavor's trait picks the host)
        self.admin_servers_client.resize_server(a, to_n1['id'])
        self.admin_servers_client.resize_server(b, to_n['id'])
        self._wait_moved(a, n1_name)
        self._wait_moved(b, n_name)
        seen += [self._landed(a, n1_name, n1_name, 'balance'),
                 self._landed(b, n_name, n1_name, 'balance')]
        for s in seen:
            # the fast hosts have no module: the expected state
            self.assertEqual(bool(hosts.for_host(s['host']).module_loaded()),
                             s['registered'], s)

        # what each side logged about the other's keys
        logged = {h.name: self._compat_lines(h, since[h.name], (a, b))
                  for h in (n1, n)}
        for ln in logged[n1_name] + logged[n_name]:
            inst = re.search(r'\[instance: (\S+)\]', ln)
            LOG.info('FIGURES mixed versions: logged (server %s): %s',
                     inst.group(1) if inst else '?',
                     COMPAT.search(ln).group(0))
        # N-1: a warning naming the key at each of its three arrivals
        # (a's boot, b's cold migration, a's resize), by server
        for s, times in ((a, 2), (b, 1)):
            named = [ln for ln in logged[n1_name] if s in ln and
                     'tlbbalance:%s' % NEWER_KEY in ln]
            self.assertGreaterEqual(len(named), times, (s, logged))
        self.assertEqual([], [ln for ln in logged[n1_name]
                              if 'tlbbalance:%s' % NEWER_KEY not in ln])
        # N knows every name N-1 knows: nothing to warn about
        self.assertEqual([], logged[n_name])
        # neither hook met a name it did not know (the driver of each
        # host wrote its own domain XML from the flavor)
        for h in (n1, n):
            for s in seen:
                if s['host'] == h.name:
                    recs = h.hook_records(s['domain'])
                    self.assertEqual([], [r for r in recs
                                          if r.get('ignored')], recs)
        for s in seen:
            LOG.info('FIGURES mixed versions: %s on %s (%s): THP coverage '
                     '%.1f %%, %d RAM block(s) aligned, params %s, %s',
                     s['domain'], s['host'],
                     'N-1 %s' % n1.release if s['host'] == n1_name
                     else 'N', s['coverage'], s['ranges'],
                     sorted(s['params'].items()),
                     'registered' if s['registered'] else
                     'not registered: no module')
