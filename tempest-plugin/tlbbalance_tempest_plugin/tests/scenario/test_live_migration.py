# SPDX-License-Identifier: Apache-2.0
"""A real live migration of tagged THP servers between two compute
hosts, asserted on both hosts (docs/cloud.md, "Live migration").

Two servers booted side by side (one boot wait), migrated one after the
other: a pre-faulting flavor (``tlbbalance:prefault=true``: all its RAM
is allocated on the destination, the coverage of all of it is judged)
and the default, lazy flavor (only the pages the guest touched travel:
untouched RAM stays unmapped on the destination, so the coverage of its
*resident* RAM is judged, the figure ``tlbbalance verify`` judges a lazy
guest on).

On the destination: the THP backing in the live XML, THP coverage >=
``[tlbbalance] thp_coverage_min`` within ``thp_coverage_timeout`` s of
ACTIVE, every RAM block aligned, and the
registration where the module is loaded (a host without it: the hook
says "module absent" and the guest runs unregistered). On the source:
no domain, no registration, none of libvirt's files of the domain, no
hook state left. The figures (migration time, coverage at ACTIVE and
at +``thp_coverage_timeout`` s, alignment) go to tempest.log on a line
starting ``FIGURES``, which tools/cloud/run_tempest.py prints.
"""

import time

from oslo_log import log as logging
from tempest import config
from tempest.common import waiters
from tempest.lib import decorators

from tlbbalance_tempest_plugin import hosts
from tlbbalance_tempest_plugin.tests import base

CONF = config.CONF
LOG = logging.getLogger(__name__)


class LiveMigrationTest(base.TLBBalanceTest):

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.compute_feature_enabled.live_migration:
            raise cls.skipException('live migration is disabled in '
                                    'tempest.conf')
        if len(CONF.tlbbalance.live_migration_hosts) < 2:
            raise cls.skipException('[tlbbalance] live_migration_hosts '
                                    'names fewer than two hosts')

    def _coverage(self, host, domain, resident):
        """THP coverage in %: of all the guest RAM, or (``resident``) of
        its resident RAM (proc.smaps_huge's ``resident_coverage``)."""
        cov = (host.vm(domain) or {}).get('coverage') or {}
        key = 'resident_coverage' if resident else 'coverage'
        return 100.0 * (cov.get(key) or 0.0)

    @decorators.idempotent_id('5c1d0e8a-7b0f-4a53-9d0e-3f1e8b6a2c01')
    def test_live_migrate_thp_server(self):
        src_name, dst_name = CONF.tlbbalance.live_migration_hosts[:2]
        # booted by the admin on the first host (nova:HOST, an admin's
        # right), so the second is another host for sure; both at once
        # (one boot wait), the lazy one first
        lazy = self.create_test_server(
            clients=self.os_admin,
            flavor=self.tagged_flavor(mode='monitor')['id'],
            networks='none', availability_zone='nova:%s' % src_name,
            wait_until=None)
        pre = self.create_test_server(
            clients=self.os_admin,
            flavor=self.tagged_flavor(mode='monitor', prefault='true')['id'],
            networks='none', availability_zone='nova:%s' % src_name,
            wait_until='ACTIVE')
        waiters.wait_for_server_status(self.admin_servers_client,
                                       lazy['id'], 'ACTIVE')
        self._migrate_and_check(pre, src_name, dst_name, 'prefault')
        self._migrate_and_check(lazy, src_name, dst_name, 'lazy')

    def _migrate_and_check(self, server, src_name, dst_name, kind):
        want = CONF.tlbbalance.thp_coverage_min
        resident = kind == 'lazy'
        src, domain = self.where(server['id'])
        self.assertEqual(src_name, src.name)
        self.assert_tagged(src, domain, 'monitor')

        t0 = time.monotonic()
        self.admin_servers_client.live_migrate_server(
            server['id'], host=dst_name, block_migration='auto')

        def moved():
            s = self.admin_servers_client.show_server(
                server['id'])['server']
            if s['status'] == 'ERROR':
                raise AssertionError('live migration of %s to %s: ERROR: '
                                     '%s' % (server['id'], dst_name,
                                             s.get('fault')))
            if (s['status'] == 'ACTIVE' and
                    s['OS-EXT-SRV-ATTR:host'] == dst_name and
                    not s['OS-EXT-STS:task_state']):
                return s
            return None
        # bounded: a 64 MiB guest under TCG moves in seconds; the bound
        # is for a loaded machine
        hosts.wait_until('server %s ACTIVE on %s' % (server['id'],
                                                     dst_name),
                         moved, CONF.tlbbalance.live_migration_timeout)
        t_active = time.monotonic()
        migration_s = t_active - t0

        dst, domain2 = self.where(server['id'])
        self.assertEqual((dst_name, domain), (dst.name, domain2))
        # the backing in the live XML of the destination
        pol = self.assert_tagged(dst, domain, 'monitor')
        self.assertEqual('thp', pol['backing'])
        # (absent: true, nova_tlbbalance/policy.py XML_ABSENT)
        self.assertEqual('false' if resident else 'true',
                         pol.get('prefault', 'true'))

        # THP coverage: at ACTIVE, then >= want within the bound, then
        # at ACTIVE + the bound (it holds)
        at_active = self._coverage(dst, domain, resident)
        bound = CONF.tlbbalance.thp_coverage_timeout

        def covered():
            pct = self._coverage(dst, domain, resident)
            return pct if pct >= want else None
        hosts.wait_until(
            'THP coverage >= %.1f %% of %s (%s) on %s'
            % (want, domain, kind, dst.name),
            covered, max(1, bound - (time.monotonic() - t_active)),
            interval=0.5)
        reached_s = time.monotonic() - t_active
        time.sleep(max(0, bound - (time.monotonic() - t_active)))
        at_bound = self._coverage(dst, domain, resident)
        self.assertGreaterEqual(at_bound, want)

        # every RAM block aligned; the whole verdict (registration judged
        # where the module is loaded; a lazy guest judged on its resident
        # RAM, verdict.judged_on_resident)
        module = dst.module_loaded()
        reasons = dst.verify(domain, module=module, min_coverage=want)
        self.assertEqual([], reasons, 'verify %s on %s' % (domain,
                                                           dst.name))
        rep = dst.vm(domain)
        self.assertTrue(rep['aligned'])
        misaligned = [r for r in rep['ranges'] if r['misalignment']]
        self.assertEqual([], misaligned)
        if module:
            self.assertTrue(self.registered(dst, domain))
            registration = 'registered'
        else:
            # the expected outcome on a host without tlbbalance.ko
            self.assertFalse(self.registered(dst, domain))
            registration = 'not registered: no module'
            if dst.hook_log is not None:
                recs = hosts.wait_until(
                    'the hook logging phase started for %s on %s'
                    % (domain, dst.name),
                    lambda: [r for r in dst.hook_records(domain)
                             if r.get('phase') == 'started'],
                    CONF.tlbbalance.host_check_timeout)
                self.assertIn('module absent', recs[-1]['result'])

        # nothing left on the source
        hosts.wait_until('%s gone from %s' % (domain, src.name),
                         lambda: domain not in src.domains(),
                         CONF.tlbbalance.host_check_timeout)
        self.assertIsNone(src.vm(domain))
        self.assertFalse(self.registered(src, domain))
        self.assertEqual([], src.libvirt_run_files(domain))
        left = src.hook_state_files(domain)
        if left is not None:
            self.assertEqual([], left, 'hook state of %s left on %s'
                             % (domain, src.name))

        cov = rep['coverage']
        LOG.info('FIGURES live migration %s (%s) %s -> %s: %.1f s to '
                 'ACTIVE; THP coverage%s %.1f %% at ACTIVE, >= %.1f %% after '
                 '%.1f s, %.1f %% at +%d s (%.1f of %.1f MiB resident); '
                 '%d RAM block(s), all aligned; %s',
                 domain, kind, src.name, dst.name, migration_s,
                 ' of resident RAM' if resident else '', at_active, want,
                 reached_s, at_bound, bound, (cov.get('rss') or 0) / 2 ** 20,
                 (cov.get('size') or 0) / 2 ** 20, len(rep['ranges']),
                 registration)
