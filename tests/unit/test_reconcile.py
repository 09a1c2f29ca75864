# SPDX-License-Identifier: Apache-2.0
"""nova_tlbbalance.reconcile and ``tlbbalance reconcile``'s output, over a
temporary /proc, libvirt run dir and a directory tree standing in for the
module's configfs.

UNIT TEST ONLY for the module side: the module cannot be loaded on this
host. The stand-in is modclient's own test tree (attribute files
pre-created where the module would create them); what a plain directory
cannot do like configfs, removing a VM directory together with its
attribute files, is done by :func:`configfs_rmdir`. tests/integration runs
reconcile against a real libvirtd and real QEMU processes, tests/e2e
against the real module in a booted kernel.
"""

import json
import os
import re
import shutil

import pytest

from nova_tlbbalance import module_defs
from nova_tlbbalance import reconcile
from nova_tlbbalance.cli import reconcile as cli_reconcile
from nova_tlbbalance.hook.config import Config

MiB = 1 << 20
NS = 'http://openstack.org/xmlns/tlbbalance/1.0'
UUIDS = {'web': '8700de68-5f03-4b08-add1-b64dbaea62f9',
         'db': '41b4e6e6-2f76-4a2a-9b53-0f0d9c1fb8a1',
         'plain': 'c5e0a5d3-8c1c-46f9-9d0a-5d6f3e1c9b10',
         'newer': '0d6c9f5e-2c8b-4f43-8a1e-7c3b2a9d1e05'}
PIDS = {'web': 4321, 'db': 5321, 'plain': 6321, 'newer': 7321}
ATTRS = ('pid', 'vcpu_tids', 'ranges', 'mode', 'status', 'commit')


def domain_xml(name, policy='mode="balance" strict="false"', params=''):
    meta = ('<metadata><tlbbalance:policy xmlns:tlbbalance="%s" %s>%s'
            '</tlbbalance:policy></metadata>' % (NS, policy, params)
            if policy is not None else '')
    return ("<domain type='kvm'><name>%s</name><uuid>%s</uuid>%s"
            "<memory unit='MiB'>256</memory><vcpu>2</vcpu>"
            "<os><type arch='x86_64' machine='pc-i440fx-7.2'>hvm</type></os>"
            "</domain>" % (name, UUIDS[name], meta))


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


class Host:
    """The fake host: QEMU processes in proc/, pid files in run/, the
    module's stand-in tree in configfs/."""

    def __init__(self, tmp_path):
        self.proc = str(tmp_path / 'proc')
        self.run = str(tmp_path / 'run')
        self.sys = str(tmp_path / 'sys')
        self.cfs = tmp_path / 'configfs'
        write(self.sys + '/kernel/mm/transparent_hugepage/hpage_pmd_size',
              '2097152')
        write(self.proc + '/meminfo', 'Hugepagesize:       2048 kB\n')
        self.config = Config(configfs=str(self.cfs), run_dir=self.run,
                             proc=self.proc, sys=self.sys)
        self.domains = {}

    def start(self, name, **kw):
        pid = PIDS[name]
        write('%s/%s.pid' % (self.run, name), str(pid))
        for tid, comm in ((pid, 'qemu-system-x86'), (pid + 1, 'CPU 0/KVM'),
                          (pid + 2, 'CPU 1/KVM')):
            write('%s/%d/task/%d/comm' % (self.proc, pid, tid), comm)
        hva = 0x7f0000000000 + pid * (1 << 30)
        write('%s/%d/maps' % (self.proc, pid),
              '%x-%x rw-p 00000000 00:00 0\n' % (hva, hva + 256 * MiB))
        self.domains[name] = domain_xml(name, **kw)

    def load_module(self, version='1'):
        (self.cfs / 'vms').mkdir(parents=True, exist_ok=True)
        (self.cfs / 'version').write_text(version + '\n')

    def vm_dir(self, name, pid=''):
        """A VM directory as the module makes it at mkdir (pid 0 shown as
        written: the stand-in's files hold what was written)."""
        d = self.cfs / 'vms' / name
        d.mkdir(parents=True, exist_ok=True)
        for a in ATTRS + tuple(p.name for p in module_defs.params()):
            (d / a).write_text('')
        (d / 'pid').write_text(str(pid))
        return d

    def reconcile(self):
        from nova_tlbbalance import modclient
        return reconcile.reconcile(sorted(self.domains.items()),
                                   modclient.Client(str(self.cfs)),
                                   self.config)


@pytest.fixture
def host(tmp_path, monkeypatch):
    h = Host(tmp_path)
    real = os.rmdir

    def configfs_rmdir(path, *a, **kw):
        # configfs removes a VM directory with its attribute files
        if str(path).startswith(str(h.cfs)) and not a and not kw:
            for f in os.listdir(path):
                os.unlink(os.path.join(path, f))
            real(path)
        else:
            real(path, *a, **kw)
    monkeypatch.setattr(os, 'rmdir', configfs_rmdir)
    return h


def actions(report):
    return sorted((o.domain, o.vm, o.action) for o in report.outcomes)


def test_registers_the_missing_and_a_second_run_changes_nothing(host):
    host.start('web', params='<tlbbalance:param name="samples" '
               'value="7"/>')
    host.start('db', policy='mode="monitor"')
    host.start('plain', policy=None)                # unmanaged
    host.load_module()
    web = host.vm_dir('web')        # a module loaded after the VMs started
    db = host.vm_dir('db')
    plain = host.vm_dir('plain', pid=PIDS['plain'])  # registered by hand
    (plain / 'mode').write_text('monitor')
    report = host.reconcile()
    assert actions(report) == [
        ('db', 'db', 'registered'), ('plain', 'plain', 'skipped'),
        ('web', 'web', 'registered')]
    assert (web / 'pid').read_text() == str(PIDS['web'])
    assert (web / 'vcpu_tids').read_text() == '%d %d' % (
        PIDS['web'] + 1, PIDS['web'] + 2)
    assert (web / 'mode').read_text() == 'balance'
    assert (web / 'samples').read_text() == '7'
    assert (db / 'mode').read_text() == 'monitor'
    # the unmanaged domain's registration is never touched
    assert (plain / 'mode').read_text() == 'monitor'
    assert len(report.changes) == 2 and not report.errors
    again = host.reconcile()
    assert again.changes == [] and again.errors == []
    assert actions(again) == [('db', 'db', 'unchanged'),
                              ('plain', 'plain', 'skipped'),
                              ('web', 'web', 'unchanged')]


def test_stale_registration_is_registered_again(host):
    host.start('web', params='<tlbbalance:param name="samples" '
               'value="7"/>')
    host.load_module()
    d = host.vm_dir('web', pid=999)
    (d / 'mode').write_text('off')
    (d / 'samples').write_text('3')
    [o] = host.reconcile().outcomes
    assert (o.action, o.vm) == ('re-registered', 'web')
    for why in ('pid 999, QEMU is 4321', 'mode off, policy balance',
                'samples 3, policy 7'):
        assert why in o.detail
    assert (d / 'pid').read_text() == str(PIDS['web'])
    assert (d / 'samples').read_text() == '7'


def test_registration_whose_process_is_gone_is_removed(host):
    host.start('web')
    host.start('plain', policy=None)
    host.load_module()
    host.vm_dir('web', pid=PIDS['web'])
    gone = host.vm_dir('old-vm', pid=2222)      # no /proc/2222
    never = host.vm_dir('never-started')        # pid 0
    # an unmanaged domain's (by its uuid): never touched, even at pid 0
    kept = host.vm_dir(UUIDS['plain'])
    (host.cfs / 'vms' / 'web' / 'mode').write_text('balance')
    report = host.reconcile()
    assert actions(report) == [('', 'never-started', 'removed'),
                               ('', 'old-vm', 'removed'),
                               ('plain', UUIDS['plain'], 'skipped'),
                               ('web', 'web', 'unchanged')]
    assert kept.exists()
    assert not gone.exists() and not never.exists()
    assert 'pid 2222' in [o for o in report.outcomes
                          if o.vm == 'old-vm'][0].detail
    assert host.reconcile().changes == []


def test_an_error_names_the_domain_and_the_others_go_on(host):
    host.start('web')
    host.start('db')
    host.load_module()
    host.vm_dir('web')
    host.vm_dir('db')
    os.unlink('%s/db.pid' % host.run)           # QEMU not findable
    host.domains['plain'] = domain_xml('plain', policy='mode="warp"')
    report = host.reconcile()
    got = {o.domain: o for o in report.outcomes}
    assert got['web'].action == 'registered'
    assert got['db'].action == 'error'
    assert 'no pid file' in got['db'].detail
    assert got['plain'].action == 'error'
    assert "domain 'plain'" in got['plain'].detail
    assert "'warp'" in got['plain'].detail
    text = cli_reconcile.text(report)
    assert 'db: error: cannot inspect its QEMU' in text
    assert text.endswith('1 changed, 2 error(s), 0 already right')


def test_newer_policy_is_managed_and_a_strict_requirement_refused(host):
    host.start('web', policy='mode="monitor" colour="red"')
    host.start('newer', policy='mode="monitor" strict="true" '
               'require_numa="1"')
    host.load_module(version='2')
    host.vm_dir('web')
    newer = host.vm_dir('newer')
    report = host.reconcile()
    got = {o.domain: o for o in report.outcomes}
    assert got['web'].action == 'registered'
    assert 'attribute colour' in got['web'].warnings[0]
    assert got['newer'].action == 'error'
    assert 'require_numa' in got['newer'].detail
    assert (newer / 'pid').read_text() == ''    # not touched
    assert "interface version 2 is newer" in report.warnings[0]


def test_module_absent_is_an_error_per_managed_domain(host):
    host.start('web')
    host.start('plain', policy=None)
    report = host.reconcile()
    assert actions(report) == [('web', '', 'error')]
    assert 'not loaded' in report.outcomes[0].detail
    assert report.module.startswith('not loaded')


def test_json_document(host):
    host.start('web')
    host.load_module()
    host.vm_dir('web')
    doc = json.loads(json.dumps(host.reconcile().to_dict()))
    assert (doc['changed'], doc['errors']) == (1, 0)
    assert doc['module'] == 'loaded, interface version 1'
    [o] = doc['outcomes']
    assert (o['domain'], o['vm'], o['action']) == ('web', 'web',
                                                   'registered')


# -- `tlbbalance release`, then `tlbbalance reconcile --released` (the
# Ansible role's module upgrade: docs/upgrade.md, "Module upgrade")

def cli(host, capsys, monkeypatch, *argv):
    from nova_tlbbalance.cli import main
    monkeypatch.setattr(cli_reconcile, 'domains',
                        lambda uri: sorted(host.domains.items()))
    common = ['--configfs', str(host.cfs), '--proc', host.proc]
    if argv[0] == 'reconcile':
        common += ['--run-dir', host.run, '--sys', host.sys]
    rc = main(list(argv[:1]) + common + list(argv[1:]))
    return rc, capsys.readouterr()


def released_then_loaded(host, capsys, monkeypatch, tmp_path):
    """web (balance, samples 7) and db (monitor) registered, then every
    registration released into released.json, then the module "loaded
    again" (its VM directories stand for reconcile's mkdir)."""
    host.start('web', params='<tlbbalance:param name="samples" '
               'value="7"/>')
    host.start('db', policy='mode="monitor"')
    host.load_module()
    host.vm_dir('web')
    host.vm_dir('db')
    assert not host.reconcile().errors
    rc, out = cli(host, capsys, monkeypatch, 'release', '--json')
    assert rc == 0, out.err
    doc = json.loads(out.out)
    path = tmp_path / 'released.json'
    path.write_text(out.out)
    return doc, path


def test_release_lifts_every_registration(host, capsys, monkeypatch,
                                          tmp_path):
    doc, _ = released_then_loaded(host, capsys, monkeypatch, tmp_path)
    assert doc['errors'] == [] and doc['module'] == 'loaded'
    got = {e['vm']: e for e in doc['released']}
    assert sorted(got) == ['db', 'web']
    assert got['web']['pid'] == PIDS['web'] and \
        got['web']['mode'] == 'balance'
    assert got['db']['pid'] == PIDS['db'] and got['db']['mode'] == 'monitor'
    assert all(e['released_at'] > 0 for e in doc['released'])
    assert os.listdir(host.cfs / 'vms') == []       # module can unload
    # a second release has nothing to do
    rc, out = cli(host, capsys, monkeypatch, 'release')
    assert rc == 0 and out.out.endswith('0 released, 0 error(s)\n')


def test_release_counts_nohugepage_vmas_left(host, capsys, monkeypatch):
    """Only guest RAM's VMAs count: from Linux 6.8 the kernel marks every
    MAP_STACK thread stack VM_NOHUGEPAGE (QEMU's, registered or not)."""
    host.start('web')
    host.load_module()
    d = host.vm_dir('web', pid=PIDS['web'])
    (d / 'ranges').write_text('0x7f0000000000 0x4000000 0x0\n')
    write('%s/%d/smaps' % (host.proc, PIDS['web']),
          # a thread stack's guard page and the stack (the kernel's nh)
          '7eff00000000-7eff00001000 ---p 00000000 00:00 0 \n'
          'Size:                  4 kB\n'
          'VmFlags: mr mw me ac nh\n'
          '7eff00001000-7eff00801000 rw-p 00000000 00:00 0 \n'
          'VmFlags: rd wr mr mw me ac nh\n'
          # guest RAM, split in two: one still held, one not
          '7f0000000000-7f0002000000 rw-p 00000000 00:00 0 \n'
          'VmFlags: rd wr mr mw me ac hg\n'
          '7f0002000000-7f0004000000 rw-p 00000000 00:00 0 \n'
          'VmFlags: rd wr mr mw me ac nh\n'
          # right after guest RAM
          '7f0004000000-7f0004200000 rw-p 00000000 00:00 0 \n'
          'VmFlags: rd wr mr mw me ac nh\n')
    rc, out = cli(host, capsys, monkeypatch, 'release')
    assert rc == 0
    assert 'released web (pid %d, was ?), 1 VMA(s) with VM_NOHUGEPAGE ' \
        'left' % PIDS['web'] in out.out, out.out


def test_reconcile_released_prints_and_records_windows(
        host, capsys, monkeypatch, tmp_path):
    _, released = released_then_loaded(host, capsys, monkeypatch, tmp_path)
    host.vm_dir('web')              # the new module, nothing registered
    host.vm_dir('db')
    record = tmp_path / 'lib' / 'last-upgrade.json'
    rc, out = cli(host, capsys, monkeypatch, 'reconcile', '--released',
                  str(released), '--record', str(record),
                  '--note', 'result=upgraded', '--note', 'from=0.1.0')
    assert rc == 0, out
    for vm in ('web', 'db'):
        assert re.search(r'^window %s: unmanaged [\d.]+ s \(pid %d\)$'
                         % (vm, PIDS[vm]), out.out, re.M), out.out
    rec = json.loads(record.read_text())
    assert (rec['result'], rec['from']) == ('upgraded', '0.1.0')
    assert rec['reconcile_errors'] == 0 and rec['release_errors'] == []
    wins = {w['vm']: w for w in rec['windows']}
    assert sorted(wins) == ['db', 'web']
    for w in wins.values():
        assert w['registered'] and w['same_pid'], w
        assert 0 <= w['window_s'] < 60, w
    assert (host.cfs / 'vms' / 'web' / 'samples').read_text() == '7'


def test_reconcile_released_fails_when_a_vm_is_not_held_again(
        host, capsys, monkeypatch, tmp_path):
    _, released = released_then_loaded(host, capsys, monkeypatch, tmp_path)
    host.vm_dir('web')
    host.vm_dir('db')
    os.unlink('%s/db.pid' % host.run)           # db cannot be inspected
    rc, out = cli(host, capsys, monkeypatch, 'reconcile', '--released',
                  str(released), '--json')
    assert rc == 1
    assert 'not registered again: db' in out.err
    wins = {w['vm']: w for w in json.loads(out.out)['windows']}
    assert wins['web']['registered'] and not wins['db']['registered']
    assert 'no pid file' in wins['db']['error']


def test_reconcile_released_a_vm_whose_process_is_gone_is_no_failure(
        host, capsys, monkeypatch, tmp_path):
    _, released = released_then_loaded(host, capsys, monkeypatch, tmp_path)
    host.vm_dir('web')
    del host.domains['db']                      # destroyed meanwhile
    shutil.rmtree('%s/%d' % (host.proc, PIDS['db']))
    rc, out = cli(host, capsys, monkeypatch, 'reconcile', '--released',
                  str(released))
    assert rc == 0, out
    assert 'window db: not registered again (pid %d, its process is ' \
        'gone)' % PIDS['db'] in out.out


# -- `tlbbalance reload`: the same in one warm process, around the unload
# and load commands (here shell commands on the stand-in tree)

def reload_cli(host, capsys, monkeypatch, tmp_path, unload, load):
    from nova_tlbbalance.cli import main
    from nova_tlbbalance.probes import libvirt_conn

    class Conn:
        def __init__(self, uri):
            pass

        def running(self):
            return [(n, x, None) for n, x in sorted(host.domains.items())]

        def close(self):
            pass
    monkeypatch.setattr(libvirt_conn, 'Connection', Conn)
    rc = main(['reload', '--configfs', str(host.cfs), '--proc', host.proc,
               '--run-dir', host.run, '--sys', host.sys,
               '--released', str(tmp_path / 'released.json'),
               '--record', str(tmp_path / 'rec.json'), '--note', 'to=N',
               '--unload', unload, '--load', load])
    return rc, capsys.readouterr()


def registered_pair(host):
    host.start('web', params='<tlbbalance:param name="samples" '
               'value="7"/>')
    host.start('db', policy='mode="monitor"')
    host.load_module()
    host.vm_dir('web')
    host.vm_dir('db')
    assert not host.reconcile().errors


def new_module_cmd(host):
    """A load command for the stand-in: the new module's VM directories
    appear as reconcile's mkdir would make them."""
    return ' && '.join(
        'mkdir -p {d} && cd {d} && touch {files}'.format(
            d=host.cfs / 'vms' / vm, files=' '.join(
                ATTRS + tuple(p.name for p in module_defs.params())))
        for vm in ('web', 'db'))


def test_reload_releases_reloads_and_registers_again(
        host, capsys, monkeypatch, tmp_path):
    registered_pair(host)
    rc, out = reload_cli(host, capsys, monkeypatch, tmp_path, 'true',
                         new_module_cmd(host))
    assert rc == 0, out
    released = json.loads((tmp_path / 'released.json').read_text())
    assert sorted(e['vm'] for e in released['released']) == ['db', 'web']
    rec = json.loads((tmp_path / 'rec.json').read_text())
    assert rec['to'] == 'N' and rec['reconcile_errors'] == 0
    for w in rec['windows']:
        assert w['registered'] and w['same_pid'] and \
            0 <= w['window_s'] < 60, w
        assert re.search(r'^window %s: unmanaged [\d.]+ s' % w['vm'],
                         out.out, re.M)
    assert (host.cfs / 'vms' / 'web' / 'pid').read_text() == \
        str(PIDS['web'])


def test_reload_load_failure_is_status_5_and_named(
        host, capsys, monkeypatch, tmp_path):
    registered_pair(host)
    rc, out = reload_cli(host, capsys, monkeypatch, tmp_path, 'true',
                         'echo "insmod: ERROR: No such device" >&2; false')
    assert rc == 5
    assert out.err.startswith('tlbbalance reload: loading failed (')
    assert 'No such device' in out.err
    # what the roll back reads
    released = json.loads((tmp_path / 'released.json').read_text())
    assert len(released['released']) == 2


def test_reload_unload_failure_registers_the_vms_again(
        host, capsys, monkeypatch, tmp_path):
    registered_pair(host)
    rc, out = reload_cli(host, capsys, monkeypatch, tmp_path,
                         new_module_cmd(host) + ' && false', 'true')
    assert rc == 4
    assert 'unloading failed' in out.err and 'registered again' in out.err
    assert (host.cfs / 'vms' / 'db' / 'pid').read_text() == str(PIDS['db'])
