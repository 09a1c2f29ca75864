# SPDX-License-Identifier: Apache-2.0
"""The hook and the CLI against a real libvirtd and real QEMU (TCG).

Every domain here is a tiny TCG guest with nothing bootable: QEMU still
allocates (and with immediate allocation touches) all guest RAM, which is what
the checks look at. The tlbbalance kernel module cannot be loaded on this host
(no module support, docs/design/platform.md#virtualization): where registration
would happen, the tests check that the hook and the CLI say the module is
absent, and leave the registration path to the e2e tests inside a booted
kernel.
"""

import contextlib
import json
import os
import re
import subprocess
import time
import urllib.error
import urllib.request
from xml.sax.saxutils import escape

from prometheus_client import parser as prom_parser
import pytest

from nova_tlbbalance import guest_config
from nova_tlbbalance import hostfacts
from nova_tlbbalance import modclient
from nova_tlbbalance.policy import Policy
from nova_tlbbalance.probes import domxml
from nova_tlbbalance.probes import proc
from tlbbwait import WaitTimeout, wait_until
from .conftest import HOOK_TIMEOUT, cli, cli_argv, hook_records, \
    libvirthost, status_of, wait_hook

NCPU = os.cpu_count()
PINS = {0: '0', 1: str(min(1, NCPU - 1))}
MODULE_LOADED = os.path.isdir(os.path.join(modclient.root_dir(), 'vms'))


def driver_xml(name, specs, plain=None, **kw):
    """What the nova driver plugin hands libvirt for these extra specs:
    its own XML code (guest_config) over a plain guest."""
    pol = Policy.from_extra_specs(specs)
    return guest_config.apply_to_domain_xml(
        plain or libvirthost.plain_domain(name, pins=PINS, **kw), pol,
        huge_page_kib=hostfacts.hpage_pmd_size() // 1024)


def tagged_by_hand(name, policy_attrs, backing='', **kw):
    """A domain tagged with <metadata> only (no `domain apply`): what an
    operator gets by pasting the policy element into an existing XML."""
    xml = libvirthost.plain_domain(name, pins=PINS, **kw)
    meta = ("<metadata><tlbbalance:policy xmlns:tlbbalance="
            "'http://openstack.org/xmlns/tlbbalance/1.0' %s/></metadata>"
            % ' '.join("%s='%s'" % kv for kv in policy_attrs.items()))
    return xml.replace('<os>', meta + backing + '<os>', 1)


def wait_coverage(name, target=0.99, timeout=60.0):
    """Poll the QEMU process's smaps until ``target`` of guest RAM is on
    huge pages; (coverage, seconds)."""
    _, vm = status_of(name)
    ranges = [(r['hva'], r['length']) for r in vm['ranges']]
    t0 = time.monotonic()
    cov = 0.0

    def covered():
        nonlocal cov
        cov = proc.smaps_huge(vm['pid'], ranges)['coverage']
        return cov >= target
    # On timeout the caller's assertion shows the coverage reached.
    with contextlib.suppress(WaitTimeout):
        wait_until('%g of %s on huge pages' % (target, name), covered,
                   timeout, 0.2)
    return cov, time.monotonic() - t0


def free_huge_mib():
    """MiB of this host's free memory in blocks of a huge page or more
    (/proc/buddyinfo, every zone)."""
    order = (hostfacts.hpage_pmd_size() // os.sysconf('SC_PAGE_SIZE')
             ).bit_length() - 1
    pages = 0
    with open('/proc/buddyinfo') as f:
        for line in f:
            counts = [int(c) for c in line.split()[4:]]
            pages += sum(n << o for o, n in enumerate(counts) if o >= order)
    return pages * os.sysconf('SC_PAGE_SIZE') // (1 << 20)


def thp_fallbacks():
    with open('/proc/vmstat') as f:
        return int(re.search(r'^thp_fault_fallback (\d+)$', f.read(),
                             re.M).group(1))


def make_huge_room(xml):
    """A pre-faulted guest is huge from its first touch only when the host
    has free huge-page blocks; on this shared machine the page cache and
    other tenants' guests often hold them. When fewer than twice the guest
    RAM of domain ``xml`` are free, compact this host's memory once
    (/proc/sys/vm/compact_memory: moves pages, changes no setting), as an
    operator would before starting such a guest, and say so. Returns the
    fallback count to compare."""
    mib = domxml.parse(xml).memory >> 20
    free = free_huge_mib()
    if free < 2 * mib:
        with open('/proc/sys/vm/compact_memory', 'w') as f:
            f.write('1')
        print('host had %d MiB free in huge-page blocks for a %d MiB '
              'guest: compacted, now %d MiB' % (free, mib, free_huge_mib()))
    return thp_fallbacks()


def check_huge(name, fallbacks0):
    """The pre-faulted guest's RAM is huge (polled for up to 60 s, a bound
    for "never", not a performance goal: the time is printed); on failure
    say how many faults the host served with small pages."""
    cov, took = wait_coverage(name)
    print('%s: %.2f %% AnonHugePages of guest RAM, %.2f s after start'
          % (name, 100 * cov, took))
    assert cov >= 0.99, (
        '%s: %.2f %% of guest RAM huge after %.1f s; the host served %d '
        'THP faults with small pages meanwhile and has %d MiB free in '
        'huge-page blocks now' % (name, 100 * cov, took,
                                  thp_fallbacks() - fallbacks0,
                                  free_huge_mib()))


def check_hook_phases(host, name, phases):
    for phase in phases:
        rec = wait_hook(host, name, phase)
        assert rec['rc'] == 0, rec
        assert not rec['result'].startswith(('timeout', 'error')), rec
        assert rec['elapsed_ms'] < HOOK_TIMEOUT * 1000, rec
        print('hook %-8s %-8s %7.1f ms  %s'
              % (name, phase, rec['elapsed_ms'], rec['result']))


def check_thp_start(host, name):
    """A non-strict THP domain (the default flavor): prepare skipped
    (hook.strictness.prepare_can_wait: an interpreter fewer on the boot's
    path), its one check, the host's THP mode, recorded by started."""
    check_hook_phases(host, name, ('started',))
    rec = wait_hook(host, name, 'started')
    assert rec['host_thp'].startswith('thp '), rec
    assert [r for r in hook_records(host, name)
            if r['phase'] == 'prepare'] == [], hook_records(host, name)


def check_pins(vm, pins):
    assert len(vm['vcpus']) == len(pins), vm['vcpus']
    for v in vm['vcpus']:
        want = domxml.parse_cpuset(pins[v['vcpu']])
        got = proc.affinity(v['tid'])
        assert got == want, 'vCPU %d thread %d: %s, pinned %s' % (
            v['vcpu'], v['tid'], got, want)
        assert v['matches_pin'], v


def check_module_state(host, name, vm):
    started = wait_hook(host, name, 'started')
    if MODULE_LOADED:
        assert started['result'].startswith('registered'), started
        assert vm['module']['registered'], vm['module']
    else:
        # Stated explicitly: this host cannot load tlbbalance.ko.
        assert started['result'].startswith('module absent'), started
        assert vm['module']['registered'] is False
        assert vm['module']['reason'] == 'module not loaded'


@pytest.fixture
def vm(host):
    """Start a domain from XML; destroy it after the test."""
    names = []

    def start(name, xml):
        host.define(xml, name)
        took, _ = host.start_domain(name)
        names.append(name)
        print('virsh start %s: %.2f s' % (name, took))
        return took

    yield start
    for n in names:
        host.destroy(n)


def test_module_absent_is_stated(host):
    if MODULE_LOADED:
        pytest.skip('module loaded here: registration is asserted instead')
    print('\nTHIS HOST CANNOT LOAD tlbbalance.ko (no module support): %s is '
          'absent. The hook must log it and let VMs run; registration '
          'against the real module is tested by tests/e2e inside a booted '
          'Debian kernel.' % modclient.root_dir())
    _, out, _ = cli('status', check=0)
    assert 'module NOT loaded' in out


def test_driver_thp_vm(host, vm):
    name = 'tlbbit-thp'
    xml = driver_xml(name, {'tlbbalance:mode': 'balance',
                            'tlbbalance:backing': 'thp',
                            'tlbbalance:prefault': 'true',
                            'tlbbalance:tlbi_scope': 'die'})
    assert "<allocation mode=\"immediate\"/>" in xml
    fallbacks0 = make_huge_room(xml)
    vm(name, xml)
    check_huge(name, fallbacks0)
    _, st = status_of(name)
    assert st['managed'] and st['policy']['mode'] == 'balance'
    assert st['coverage']['anon_huge'] >= 0.99 * st['memory']
    assert st['ranges'] and st['aligned']
    for r in st['ranges']:     # QEMU's own answer, not just /proc maps
        assert r['gpa2hva'] == r['hva'], r
        assert (r['gpa2hva'] - r['gpa']) % st['page_size'] == 0, r
    check_pins(st, PINS)
    assert st['dies'] == 1
    assert st['stage2'] is None and st['stage2_unavailable'] == 'TCG'
    check_thp_start(host, name)
    check_module_state(host, name, st)
    cli('verify', '--no-module', name, check=0)
    rc, out, _ = cli('verify', name)
    if not MODULE_LOADED:
        assert rc == 1 and 'module not loaded' in out, out


def test_domain_apply_vm(host, vm, tmp_path):
    name = 'tlbbit-apply'
    # odd guest NUMA cells: misaligned as given, aligned once applied
    plain = tmp_path / 'plain.xml'
    plain.write_text(libvirthost.plain_domain(name, pins=PINS,
                                              cells=[129, 127]))
    # pre-faulted (not the default): all its RAM huge within 10 s
    rc, xml, err = cli('domain', 'apply', '-s', 'mode=monitor',
                       '-s', 'backing=thp', '-s', 'prefault=true',
                       str(plain))
    assert rc == 0, err
    assert 'tlbbalance:policy' in xml
    fallbacks0 = make_huge_room(xml)
    vm(name, xml)
    check_huge(name, fallbacks0)
    _, st = status_of(name)
    assert [r['block'] for r in st['ranges']] == ['ram-node0', 'ram-node1']
    assert st['aligned'], st['ranges']
    for r in st['ranges']:
        assert r['gpa2hva'] == r['hva'], r
    check_pins(st, PINS)
    check_thp_start(host, name)
    cli('verify', '--no-module', name, check=0)


def test_misaligned_vm_reported(host, vm):
    name = 'tlbbit-misaligned'
    xml = tagged_by_hand(
        name, {'mode': 'monitor', 'backing': 'thp'},
        "<memoryBacking><source type='anonymous'/>"
        "<allocation mode='immediate'/></memoryBacking>", cells=[129, 127])
    vm(name, xml)
    started = wait_hook(host, name, 'started')
    assert started['rc'] == 0 and '1 problem' in started['result'], started
    rc, out, err = cli('verify', '--no-module', name)
    print(out, err)
    assert rc == 1 and not err, err
    assert 'misaligned: RAM block ram-node1 GPA 0x8100000' in out
    assert 'off by 0x100000' in out


def test_undercovered_vm_reported(host, vm):
    name = 'tlbbit-undercovered'
    # tagged, but no immediate allocation: QEMU touches little guest RAM
    vm(name, tagged_by_hand(name, {'mode': 'monitor', 'backing': 'thp'}))
    rc, out, _ = cli('verify', '--no-module', name)
    print(out)
    assert rc == 1 and 'under-covered' in out
    # the cause is named, not only the figure
    assert "guest RAM is allocated on demand (no <allocation mode=" in out
    _, st = status_of(name)
    assert st['coverage']['coverage'] < 0.5


def test_driver_thp_vm_not_prefaulted(host, vm):
    """tlbbalance:prefault=false: no <allocation>, guest RAM is faulted in
    as the guest touches it (QEMU still madvises it for THP); verify
    judges the huge share of the resident RAM, not of all of it."""
    name = 'tlbbit-lazy'
    xml = driver_xml(name, {'tlbbalance:mode': 'monitor',
                            'tlbbalance:prefault': 'false'},
                     memory_mib=512)
    assert '<allocation' not in xml and 'prefault="false"' in xml
    vm(name, xml)
    check_thp_start(host, name)
    _, st = status_of(name)     # the document validates against the schema
    assert st['managed'] and st['policy']['prefault'] is False
    cov = st['coverage']
    print('%s: RSS %d MiB of %d MiB guest RAM; huge %.1f %% of RAM, %.1f %% '
          'of resident RAM' % (name, cov['rss'] >> 20, st['memory'] >> 20,
                               100 * cov['coverage'],
                               100 * (cov['resident_coverage'] or 0)))
    # Not pre-faulted: at start only what firmware touched is resident.
    assert cov['rss'] < st['memory'] // 4, cov
    assert cov['coverage'] < 0.25
    # What the guest touched is on huge pages (host THP madvise or always,
    # as for test_driver_thp_vm): judged on that, the VM is what it asked.
    assert cov['resident_coverage'] >= 0.95, cov
    rc, out, err = cli('verify', '--no-module', name)
    print(out, err)
    assert rc == 0 and 'under-covered' not in out, out
    _, table, _ = cli('status', check=0)
    row = [ln for ln in table.splitlines() if ln.startswith(name)]
    assert row and '(res ' in row[0], table


def test_strict_misaligned_vm_refused(host):
    name = 'tlbbit-strict'
    xml = tagged_by_hand(
        name, {'mode': 'monitor', 'backing': 'thp', 'strict': 'true'},
        "<memoryBacking><source type='anonymous'/>"
        "<allocation mode='immediate'/></memoryBacking>", cells=[129, 127])
    host.define(xml, name)
    _, p = host.start_domain(name, check=False)
    print(p.stderr)
    assert p.returncode != 0
    assert 'tlbbalance (strict policy) refuses' in p.stderr
    assert 'off by 0x100000' in p.stderr
    assert host.virsh('domstate', name).stdout.strip() == 'shut off'


def test_strict_policy_that_does_not_parse_refused(host, vm):
    """One rule for a policy element that does not parse
    (docs/hook.md, strict mode when something fails): strict="true" fails
    closed, libvirt refusing the start with the
    culprit named; a non-strict one runs unmanaged, even when tenant text
    in the domain XML (here its description) says strict="true"."""
    name = 'tlbbit-strict-bad-policy'
    host.define(tagged_by_hand(name, {'mode': 'turbo', 'strict': 'true'},
                               memory_mib=64), name)
    _, p = host.start_domain(name, check=False)
    print(p.stderr)
    assert p.returncode != 0
    assert 'tlbbalance (strict policy) refuses domain' in p.stderr
    assert "'turbo'" in p.stderr
    assert host.virsh('domstate', name).stdout.strip() == 'shut off'
    name = 'tlbbit-loose-bad-policy'
    xml = tagged_by_hand(name, {'mode': 'turbo', 'strict': 'false'},
                         memory_mib=64)
    vm(name, xml.replace('<os>', '<description>web strict="true"'
                         '</description><os>', 1))
    for phase in ('prepare', 'started'):
        rec = wait_hook(host, name, phase)
        assert rec['rc'] == 0 and rec['result'].startswith('bad policy: '), \
            rec


def test_hugetlbfs_vm(host, vm):
    name = 'tlbbit-hugetlbfs'
    plain = libvirthost.plain_domain(name, memory_mib=128, pins=PINS)
    # hw:mem_page_size is nova's job: it writes <hugepages> itself
    plain = plain.replace('<os>', "<memoryBacking><hugepages><page "
                          "size='2048' unit='KiB'/></hugepages>"
                          "</memoryBacking><os>")
    xml = driver_xml(name, {'tlbbalance:mode': 'monitor',
                            'tlbbalance:backing': 'hugetlbfs'}, plain=plain)
    vm(name, xml)
    rec = wait_hook(host, name, 'prepare')
    assert rec['result'].startswith('huge pages available: 64 x 2048 KiB')
    _, st = status_of(name)
    assert st['backing'].startswith('hugetlbfs')
    assert st['coverage']['hugetlb'] == st['memory'], st['coverage']
    assert st['aligned']
    check_hook_phases(host, name, ('prepare', 'started'))
    cli('verify', '--no-module', name, check=0)


def test_hugetlbfs_shortage_strict_refused(host):
    name = 'tlbbit-hugetlbfs-short'
    plain = libvirthost.plain_domain(name, memory_mib=1024, pins=PINS)
    plain = plain.replace('<os>', "<memoryBacking><hugepages/>"
                          "</memoryBacking><os>")
    xml = driver_xml(name, {'tlbbalance:mode': 'monitor',
                            'tlbbalance:backing': 'hugetlbfs',
                            'tlbbalance:strict': 'true'}, plain=plain)
    host.define(xml, name)
    _, p = host.start_domain(name, check=False)
    print(p.stderr)
    assert p.returncode != 0
    assert 'not enough huge pages' in p.stderr
    assert '512 needed' in p.stderr


def test_untagged_vm_left_alone(host, vm):
    name = 'tlbbit-untagged'
    vm(name, libvirthost.plain_domain(name, memory_mib=64, pins=PINS))
    # a tagged VM runs beside it: verify UNTAGGED must not answer "no
    # tagged VM running"
    tagged = 'tlbbit-tagged-beside'
    vm(tagged, driver_xml(tagged, {'tlbbalance:mode': 'monitor'},
                          memory_mib=64))
    wait_hook(host, tagged, 'started')
    assert hook_records(host, name) == []
    _, st = status_of(name)
    assert not st['managed'] and st['policy'] is None
    rc, out, _ = cli('verify', '--no-module', name)
    print(out)
    assert rc == 0 and out.strip() == (
        '%s: untagged (no tlbbalance policy in its <metadata>): nothing to '
        'verify' % name)
    rc, out, _ = cli('verify', '--no-module', '--json', name)
    assert rc == 0 and json.loads(out) == {name: None}


def test_special_name_registered(host, vm):
    """libvirt writes the pid file of this domain XML-escaped
    (q&apos;uo&quot;te...pid): the hook and the CLI still find QEMU."""
    name = 'tlbbit q\'uo"te <a&b>'
    xml = driver_xml(escape(name, {'"': '&quot;', "'": '&apos;'}),
                     {'tlbbalance:mode': 'monitor'}, memory_mib=64)
    vm(name, xml)
    pidfiles = [f for f in os.listdir(host.path('/run/libvirt/qemu'))
                if f.startswith('tlbbit q') and f.endswith('.pid')]
    print('pid file: %s' % pidfiles)
    assert pidfiles == ['tlbbit q&apos;uo&quot;te &lt;a&amp;b&gt;.pid']
    with open(host.path('/run/libvirt/qemu/' + pidfiles[0])) as f:
        pid = int(f.read())
    check_thp_start(host, name)
    rec = wait_hook(host, name, 'started')
    assert rec['pid'] == pid, rec
    _, st = status_of(name)
    assert st['pid'] == pid and st['managed']
    check_module_state(host, name, st)


def test_stop_runs_stopped_and_release(host):
    name = 'tlbbit-lifecycle'
    host.define(driver_xml(name, {'tlbbalance:mode': 'monitor'},
                           memory_mib=64), name)
    host.start_domain(name)
    wait_hook(host, name, 'started')
    host.destroy(name)
    check_hook_phases(host, name, ('stopped', 'release'))
    assert wait_hook(host, name, 'release')['result'] in (
        'module absent', 'unregistered')


def test_libvirtd_restart_runs_reconnect(host, vm):
    name = 'tlbbit-reconnect'
    vm(name, driver_xml(name, {'tlbbalance:mode': 'monitor'},
                        memory_mib=64))
    wait_hook(host, name, 'started')
    pid = status_of(name)[1]['pid']
    host.restart_libvirtd()
    check_hook_phases(host, name, ('reconnect',))
    rec = wait_hook(host, name, 'reconnect')
    assert rec['pid'] == pid
    assert rec['result'].startswith(
        ('already registered', 'registered') if MODULE_LOADED
        else 'module absent'), rec
    assert status_of(name)[1]['pid'] == pid       # the VM kept running


def test_exporter(host, vm):
    name = 'tlbbit-exporter'
    vm(name, driver_xml(name, {'tlbbalance:mode': 'monitor'},
                        memory_mib=64))
    rc, out, err = cli('exporter', '--once')
    assert rc == 0, err
    # read back with prometheus_client's own parser
    fams = {f.name: f for f in prom_parser.text_string_to_metric_families(
        out)}

    def value(family, **labels):
        fam = fams[family]
        # every VM series also has the domain's uuid label
        got = [s.value for s in fam.samples
               if s.labels.items() >= labels.items()]
        assert len(got) == 1, (family, labels, fam.samples)
        return fam.type, got[0]
    assert value('tlbbalance_vm_managed', vm=name) == ('gauge', 1)
    kind, ratio = value('tlbbalance_vm_huge_coverage_ratio', vm=name)
    assert kind == 'gauge' and 0 <= ratio <= 1
    assert value('tlbbalance_host_module_loaded') == ('gauge', MODULE_LOADED)
    assert value('tlbbalance_vm_ram_bytes', vm=name) == ('gauge', 64 << 20)
    # the same over HTTP on a loopback port
    srv = subprocess.Popen(cli_argv('exporter', '--port', '0'),
                           stderr=subprocess.PIPE, text=True)
    try:
        line = srv.stderr.readline()
        assert line.startswith('tlbbalance exporter on http://127.0.0.1:')
        url = line.split()[-1]
        with urllib.request.urlopen(url, timeout=60) as resp:
            assert resp.status == 200
            body = resp.read().decode()
        assert re.search(r'tlbbalance_vm_managed\{uuid="[0-9a-f-]+",'
                         r'vm="%s"\} 1.0' % name, body), body
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(url.replace('/metrics', '/x'), timeout=60)
    finally:
        srv.terminate()
        srv.wait(10)


def test_settings_file_and_background_under_real_libvirtd(host):
    """The hook reads hook.conf at every run (no libvirtd restart): with
    background = true a tagged domain's started runs in a detached child
    (its prepare is skipped: not strict, THP), the VM starts, and a
    destroy right after start still runs stopped and release after the
    background started."""
    with open(host.hook_conf) as f:
        saved = f.read()
    name = 'tlbbit-background'
    try:
        with open(host.hook_conf, 'a') as f:
            f.write('background = true\n')
        host.define(driver_xml(name, {'tlbbalance:mode': 'monitor'},
                               memory_mib=64), name)
        host.start_domain(name)
        # prepare skipped (not strict, THP); started in the background
        rec = wait_hook(host, name, 'started')
        assert rec.get('background') is True, rec
        assert rec['rc'] == 0, rec
        assert rec['result'].startswith(
            'registered' if MODULE_LOADED else 'module absent'), rec
        host.destroy(name)
        check_hook_phases(host, name, ('stopped', 'release'))
        # a destroy right after the start races the background `started`
        # (which may then find QEMU already gone): stopped runs after it
        host.start_domain(name)
        host.destroy(name)
        end = time.monotonic() + 30
        while time.monotonic() < end:
            order = [r['phase'] for r in hook_records(host, name)]
            if order.count('release') == 2:
                break
            time.sleep(0.1)
        assert order.count('started') == 2 and order.count('release') == 2
        last = len(order) - 1 - order[::-1].index('started')
        assert order[last:] == ['started', 'stopped', 'release'], order
    finally:
        with open(host.hook_conf, 'w') as f:
            f.write(saved)
    # the file is read again: back in the foreground
    name2 = 'tlbbit-foreground'
    host.define(driver_xml(name2, {'tlbbalance:mode': 'monitor'},
                           memory_mib=64), name2)
    host.start_domain(name2)
    try:
        assert 'background' not in wait_hook(host, name2, 'started')
    finally:
        host.destroy(name2)
