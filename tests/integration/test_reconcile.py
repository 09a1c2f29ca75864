# SPDX-License-Identifier: Apache-2.0
"""``tlbbalance reconcile`` against a real libvirtd and real QEMU (TCG).

The libvirt side is real: the running domains and their live XML come
from the session's libvirtd, the QEMU pids from libvirt's pid files, the
vCPU threads and guest RAM mappings from the real processes' /proc.

The module is not (this host cannot load it, docs/design/platform.md):
a directory tree stands in for /sys/kernel/config/tlbbalance, laid out as
the module lays it out (``version``; one directory per VM with every
attribute file, as a ``mkdir`` in ``vms/`` gives); its files then hold
what reconcile wrote. An empty directory stands in for a registration
whose process is gone (pid 0: a plain directory with files cannot be
removed as configfs removes it). tests/unit/test_reconcile.py covers the
rest of the module side; the real module is tests/e2e's.
"""

import json
import time

import pytest

from fake_module import fake_module_tree
from nova_tlbbalance.probes import proc
from .conftest import cli, libvirthost, wait_hook
from .test_libvirt_hook import driver_xml


@pytest.fixture
def domains(host):
    names = []

    def start(name, xml):
        host.define(xml, name)
        host.start_domain(name)
        names.append(name)
    yield start
    for n in names:
        host.destroy(n)


def stand_in(tmp_path, vms):
    return fake_module_tree(tmp_path / 'configfs-tlbbalance', vms,
                            pid='0\n')


def reconcile(root):
    rc, out, err = cli('reconcile', '--configfs', str(root), '--json')
    assert rc == 0, out + err
    doc = json.loads(out)
    print(json.dumps(doc, indent=1))
    return doc, {o['domain'] or o['vm']: o for o in doc['outcomes']}


def test_reconcile_registers_running_managed_domains(host, domains,
                                                     tmp_path):
    a, b, plain = 'tlbbit-rec-a', 'tlbbit-rec-b', 'tlbbit-rec-plain'
    domains(a, driver_xml(a, {'tlbbalance:mode': 'monitor'},
                          memory_mib=64))
    domains(b, driver_xml(b, {'tlbbalance:mode': 'balance',
                              'tlbbalance:samples': '7'}, memory_mib=64))
    domains(plain, libvirthost.plain_domain(plain, memory_mib=64))
    # the module loaded after the VMs started: it holds none of them
    root = stand_in(tmp_path, (a, b, plain))
    (root / 'vms' / 'gone-vm').mkdir()
    doc, got = reconcile(root)
    assert (doc['changed'], doc['errors']) == (3, 0), doc
    assert got[a]['action'] == got[b]['action'] == 'registered'
    assert got['gone-vm']['action'] == 'removed'
    assert got[plain]['action'] == 'skipped'    # unmanaged: not touched
    assert not (root / 'vms' / 'gone-vm').exists()
    assert (root / 'vms' / plain / 'pid').read_text() == '0\n'
    for name, mode in ((a, 'monitor'), (b, 'balance')):
        d = root / 'vms' / name
        pid = proc.qemu_pid(name, host.path('/run/libvirt/qemu'))
        assert (d / 'pid').read_text() == str(pid)
        tids = [t for _, t, _ in proc.vcpu_threads(pid)]
        assert (d / 'vcpu_tids').read_text() == ' '.join(map(str, tids))
        assert (d / 'ranges').read_text().startswith('0x')
        assert (d / 'mode').read_text() == mode
        assert 'pid %d, mode %s' % (pid, mode) in got[name]['detail']
    assert (root / 'vms' / b / 'samples').read_text() == '7'
    # idempotent
    doc, got = reconcile(root)
    assert (doc['changed'], doc['errors']) == (0, 0), doc
    assert got[a]['action'] == got[b]['action'] == 'unchanged'
    # the text form names each change
    rc, out, _ = cli('reconcile', '--configfs', str(root), '-v')
    assert rc == 0
    assert '%s: unchanged: registered, pid' % a in out
    assert out.rstrip().endswith('0 changed, 0 error(s), 2 already right')


def test_libvirtd_restart_registers_what_the_module_lacks(
        host, domains, tmp_path):
    """libvirtd restarts; its reconnect hook registers every running
    managed VM the module (the stand-in, given to the hook through its
    settings file, read at every run) does not hold: same QEMU pid."""
    name = 'tlbbit-rec-restart'
    domains(name, driver_xml(name, {'tlbbalance:mode': 'balance',
                                    'tlbbalance:samples': '5'},
                             memory_mib=64))
    pid = proc.qemu_pid(name, host.path('/run/libvirt/qemu'))
    root = stand_in(tmp_path, (name,))
    with open(host.hook_conf) as f:
        saved = f.read()
    try:
        with open(host.hook_conf, 'a') as f:
            f.write('configfs = %s\n' % root)
        t0 = time.monotonic()
        host.restart_libvirtd()
        rec = wait_hook(host, name, 'reconnect', timeout=60)
        took = time.monotonic() - t0
    finally:
        with open(host.hook_conf, 'w') as f:
            f.write(saved)
    print('libvirtd restart to %s registered by reconnect: %.1f s (%s)'
          % (name, took, rec['result']))
    assert rec['rc'] == 0 and rec['pid'] == pid, rec
    assert rec['result'] == 'registered as %s (mode balance)' % name, rec
    d = root / 'vms' / name
    assert (d / 'pid').read_text() == str(pid)
    assert (d / 'mode').read_text() == 'balance'
    assert (d / 'samples').read_text() == '5'
    assert proc.qemu_pid(name, host.path('/run/libvirt/qemu')) == pid
    doc, got = reconcile(root)
    assert doc['changed'] == 0 and got[name]['action'] == 'unchanged', doc
