# SPDX-License-Identifier: Apache-2.0
"""``tlbbalance exporter`` as a service under a real libvirtd (TCG domains).

The real command, run inside the session libvirtd's namespace, collecting
in the background: one libvirt connection across collections and a new
one after libvirtd restarts, no QEMU monitor command to an untagged
domain (libvirt's domain log has no "custom-monitor" taint for it), the
domain UUID on every VM series, ``tlbbalance_up`` 0 (not a 503) while
libvirt cannot be reached, ``--listen ::1``, HTTP served by a child as
nobody (``--user``), and a real scrape that ``promtool check metrics``
accepts.
"""

import os
import re
import shutil
import subprocess
import time
import urllib.request

from prometheus_client import parser as prom_parser
import pytest

from tlbbwait import wait_until
from .conftest import cli_argv, libvirthost
from .test_libvirt_hook import PINS, driver_xml

TAGGED = 'tlbbit-exp-tagged'
UNTAGGED = 'tlbbit-exp-untagged'
STARTUP = 120       # libvirt-python import + first collection, at load 10+


class Exporter:
    """A running ``tlbbalance exporter`` (stderr kept in a file)."""

    def __init__(self, tmp_path, *args):
        self.log = tmp_path / ('exporter-%d.log' % time.monotonic_ns())
        self.err = open(self.log, 'w+')
        self.proc = subprocess.Popen(
            cli_argv('exporter', '--port', '0', *args),
            stdout=subprocess.DEVNULL, stderr=self.err, text=True)

        def url():
            self.err.seek(0)
            m = re.search(r'tlbbalance exporter on (\S+)', self.err.read())
            if self.proc.poll() is not None:
                raise AssertionError('exporter exited %d: %s'
                                     % (self.proc.returncode, self.stderr()))
            return m and m.group(1)
        self.url = wait_until('the exporter listening', url, STARTUP, 0.1)

    def stderr(self):
        self.err.seek(0)
        return self.err.read()

    def scrape(self, timeout=60):
        with urllib.request.urlopen(self.url, timeout=timeout) as r:
            assert r.status == 200
            return r.read().decode()

    def families(self):
        return {f.name: f for f in
                prom_parser.text_string_to_metric_families(self.scrape())}

    def wait_collections(self, n, timeout=STARTUP):
        def done():
            fams = self.families()
            got = value(fams, 'tlbbalance_collections',
                        'tlbbalance_collections_total')
            return fams if got >= n else None
        return wait_until('%d collections' % n, done, timeout, 0.3)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.err.close()


def value(fams, name, sample=None, **labels):
    got = [s.value for s in fams[name].samples
           if s.name == (sample or name) and s.labels == labels]
    assert len(got) == 1, (name, labels, fams[name].samples)
    return got[0]


@pytest.fixture(scope='module')
def domains(host):
    host.define(driver_xml(TAGGED, {'tlbbalance:mode': 'monitor'},
                           memory_mib=64), TAGGED)
    host.start_domain(TAGGED)
    host.define(libvirthost.plain_domain(UNTAGGED, memory_mib=32,
                                         pins=PINS), UNTAGGED)
    host.start_domain(UNTAGGED)
    uuids = {n: host.virsh('domuuid', n).stdout.strip()
             for n in (TAGGED, UNTAGGED)}
    yield uuids
    for n in (TAGGED, UNTAGGED):
        host.destroy(n)


@pytest.fixture
def exporter(tmp_path):
    started = []

    def start(*args):
        started.append(Exporter(tmp_path, *args))
        return started[-1]
    yield start
    for e in started:
        e.stop()


def taints(host, name):
    path = host.path('/var/log/libvirt/qemu/%s.log' % name)
    with open(path, errors='replace') as f:
        return [ln for ln in f if 'custom-monitor' in ln]


def test_background_collection_one_connection_no_taint(
        host, domains, exporter):
    e = exporter('--interval', '1')
    fams = e.wait_collections(3)
    tagged = {'vm': TAGGED, 'uuid': domains[TAGGED]}
    untagged = {'vm': UNTAGGED, 'uuid': domains[UNTAGGED]}
    assert value(fams, 'tlbbalance_up') == 1
    assert value(fams, 'tlbbalance_vm_managed', **tagged) == 1
    assert value(fams, 'tlbbalance_vm_managed', **untagged) == 0
    assert value(fams, 'tlbbalance_vm_ram_bytes', **tagged) == 64 << 20
    info = fams['tlbbalance_build_info'].samples[0].labels
    assert re.match(r'\d+\.\d+\.\d+$', info['libvirt_version']), info
    # one libvirt connection for every collection so far
    assert value(fams, 'tlbbalance_libvirt_connections',
                 'tlbbalance_libvirt_connections_total') == 1
    # the tagged VM's gpa2hva once per start (one RAM range), not at
    # every collection
    sent = value(fams, 'tlbbalance_monitor_commands',
                 'tlbbalance_monitor_commands_total')
    assert 1 <= sent <= 2, sent
    fams = e.wait_collections(6)
    assert value(fams, 'tlbbalance_monitor_commands',
                 'tlbbalance_monitor_commands_total') == sent
    assert value(fams, 'tlbbalance_libvirt_connections',
                 'tlbbalance_libvirt_connections_total') == 1
    # libvirt's own record: the untagged domain was never tainted
    assert taints(host, UNTAGGED) == []
    assert len(taints(host, TAGGED)) <= 1


def test_real_scrape_passes_promtool_check_metrics(domains, exporter):
    promtool = shutil.which('promtool')
    assert promtool, ('promtool missing: tools/ci/install-system-deps.sh '
                      'installs it (Debian package prometheus)')
    e = exporter('--interval', '1')
    e.wait_collections(1)
    body = e.scrape()
    assert 'tlbbalance_vm_managed{' in body
    p = subprocess.run([promtool, 'check', 'metrics'], input=body,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and not p.stdout.strip() and \
        not p.stderr.strip(), (p.returncode, p.stdout, p.stderr)


def test_libvirt_outage_is_up_zero_not_503(domains, exporter):
    e = exporter('--uri', 'qemu+unix:///system?socket=/nonexistent/sock',
                 '--interval', '1')
    fams = e.wait_collections(1)
    assert value(fams, 'tlbbalance_up') == 0
    assert value(fams, 'tlbbalance_collection_failures',
                 'tlbbalance_collection_failures_total') >= 1
    assert 'tlbbalance_host_hpage_pmd_bytes' in fams
    assert fams['tlbbalance_build_info'].samples[0].labels['version']
    assert 'cannot connect to qemu+unix' in e.stderr()


def test_listen_ipv6_loopback(domains, exporter):
    e = exporter('--listen', '::1', '--interval', '5')
    assert e.url.startswith('http://[::1]:'), e.url
    fams = e.wait_collections(1)
    assert value(fams, 'tlbbalance_up') == 1


def test_http_as_nobody_collection_as_root(domains, exporter):
    """--user nobody (what the systemd unit runs): the collector, root,
    reads the real QEMU processes; the scrape comes from the child."""
    e = exporter('--user', 'nobody', '--interval', '1')
    fams = e.wait_collections(2)
    assert value(fams, 'tlbbalance_up') == 1
    assert value(fams, 'tlbbalance_vm_managed', vm=TAGGED,
                 uuid=domains[TAGGED]) == 1
    kind = fams['tlbbalance_vm_huge_coverage_ratio'].samples
    assert [s for s in kind if s.labels['vm'] == TAGGED]
    assert '(served as nobody)' in e.stderr()


def test_libvirtd_restart_reconnects(host, domains, exporter):
    """Runs last in this module: libvirtd restarts under a running
    exporter, which opens one new connection and carries on."""
    e = exporter('--interval', '1')
    e.wait_collections(2)
    host.restart_libvirtd()

    def reconnected():
        fams = e.families()
        conns = value(fams, 'tlbbalance_libvirt_connections',
                      'tlbbalance_libvirt_connections_total')
        return fams if conns >= 2 and value(fams, 'tlbbalance_up') else None
    fams = wait_until('a new libvirt connection', reconnected, STARTUP, 0.5)
    assert value(fams, 'tlbbalance_vm_managed', vm=TAGGED,
                 uuid=domains[TAGGED]) == 1
    assert taints(host, UNTAGGED) == []
    assert os.path.exists(host.path('/var/log/libvirt/qemu/%s.log'
                                    % UNTAGGED))
