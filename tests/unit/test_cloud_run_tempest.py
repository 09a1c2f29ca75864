# SPDX-License-Identifier: Apache-2.0
"""tools/cloud's tempest runner: a process of the cloud that dies mid-run
stops the tempest run at once, named (watchdog.py), the kvm host's
commands name the node when it is gone (nodeexec.py), the kvm host is on
by default and the tempest.conf files and worker file (run_tempest.py).

Real processes throughout: recorded the way cloud.py records its
services (procs.spawn, state.json), a stand-in for ``tempest run`` with a
worker child in its own session, and nodeexec.py run as the plugin runs
it. The node itself (a QEMU guest, minutes to boot) is not booted here:
its keeper is stood in for by a process that prints what nodekeeper.py
prints when the node dies, then exits as nodekeeper.py does.
"""

import os
import subprocess
import sys
import time

import pytest

from cloudtools import cloud_modules

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
CLOUD = os.path.join(REPO, 'tools', 'cloud')
procs, run_tempest, sshaccess, watchdog = cloud_modules(
    'procs', 'run_tempest', 'sshaccess', 'watchdog')

DEATH = ('[nodekeeper 04:31:07] the node of compute host tlbb-kvm-1 died '
         '(QEMU exit 0)')


@pytest.fixture
def state(tmp_path):
    st = procs.State(str(tmp_path / 'state.json'))
    yield st
    for r in st.procs:
        if procs.alive(r):
            os.kill(r['pid'], 9)


def spawn(state, tmp_path, name, code):
    return procs.spawn(state, name, [sys.executable, '-c', code],
                       str(tmp_path / (name + '.log')))


def test_watchdog_stops_the_run_naming_the_dead_node(state, tmp_path):
    spawn(state, tmp_path, 'keystone', 'import time; time.sleep(120)')
    spawn(state, tmp_path, 'node-tlbb-kvm-1',
          'import time; time.sleep(1); print(%r, flush=True)' % DEATH)
    # tempest run and a worker of its own: both must go
    tempest = subprocess.Popen(
        ['sh', '-c', 'sleep 300 & echo $! > %s; wait'
         % (tmp_path / 'worker.pid')], start_new_session=True)
    said = []
    dog = watchdog.Watchdog(state.path, tempest, interval=0.2,
                            out=said.append)
    t0 = time.monotonic()
    dog.start()
    dog.join(60)
    took = time.monotonic() - t0
    assert not dog.is_alive()
    assert tempest.poll() is not None, 'tempest run was not stopped'
    worker = int((tmp_path / 'worker.pid').read_text())
    time.sleep(0.2)
    assert not os.path.exists('/proc/%d' % worker) or \
        'Z' in open('/proc/%d/stat' % worker).read().split()[2]
    assert dog.dead == ['node-tlbb-kvm-1']
    assert took < 30
    report = said[0]
    assert "the kvm host's node" in report
    assert 'compute host tlbb-kvm-1' in report
    assert 'node-tlbb-kvm-1.log' in report
    assert 'died (QEMU exit 0)' in report      # the keeper's own words


def test_watchdog_quiet_while_the_cloud_lives(state, tmp_path):
    spawn(state, tmp_path, 'keystone', 'import time; time.sleep(120)')
    tempest = subprocess.Popen(['sleep', '1.5'], start_new_session=True)
    said = []
    dog = watchdog.Watchdog(state.path, tempest, interval=0.2,
                            out=said.append)
    dog.start()
    dog.join(30)
    assert tempest.returncode == 0
    assert dog.dead == [] and said == []


def test_death_report_names_services():
    assert 'nova-compute of compute host tlbb-fast-2' == \
        watchdog.describe('nova-compute-tlbb-fast-2')
    assert 'a service of the cloud' == watchdog.describe('keystone')


def test_nodeexec_names_the_host_when_the_node_is_gone(tmp_path):
    log = str(tmp_path / 'node-tlbb-kvm-1.log')
    p = subprocess.run(
        [sys.executable, os.path.join(CLOUD, 'nodeexec.py'),
         str(tmp_path / 'agent.sock'), '--host', 'tlbb-kvm-1', '--log', log,
         '--', 'true'], capture_output=True, text=True, timeout=60)
    assert p.returncode == 125
    assert 'the node of compute host tlbb-kvm-1 is down' in p.stderr
    assert log in p.stderr


def test_kvm_host_on_by_default(monkeypatch):
    monkeypatch.delenv('TLBB_CLOUD_KVM_HOST', raising=False)
    assert run_tempest.kvm_host_wanted() is True
    assert os.environ['TLBB_CLOUD_KVM_HOST'] == '1'    # cloud.py reads it
    monkeypatch.setenv('TLBB_CLOUD_KVM_HOST', '0')
    assert run_tempest.kvm_host_wanted() is False
    monkeypatch.setenv('TLBB_CLOUD_KVM_HOST', 'yes')
    with pytest.raises(SystemExit, match='TLBB_CLOUD_KVM_HOST'):
        run_tempest.kvm_host_wanted()


def facts(tmp_path, kinds):
    return {'images': {'tlbb-payload': 'img'},
            'flavors': {'tlbb.tiny': 'f1', 'tlbb.tiny.alt': 'f2'},
            'logs': str(tmp_path), 'auth_url': 'http://127.0.0.1:1/v3',
            'region': 'RegionOne', 'venv': '/v',
            'admin': {'user': 'admin', 'password': 'pw', 'project': 'admin'},
            'hosts': [{'name': 'h%d' % i, 'kind': k,
                       'hugetlbfs': '/var/lib/libvirt/hugepages'}
                      for i, k in enumerate(kinds)]}


def conf(ws, name='tempest.conf'):
    import configparser
    c = configparser.RawConfigParser()
    c.read(os.path.join(ws, 'etc', name))
    return c


def test_tempest_conf_requires_a_module_host_with_the_kvm_host(tmp_path):
    ws = run_tempest.tempest_conf(facts(tmp_path, ['fast', 'kvm']),
                                  str(tmp_path))
    assert conf(ws).get('tlbbalance', 'module_host_required') == 'true'
    ws = run_tempest.tempest_conf(facts(tmp_path, ['fast', 'fast']),
                                  str(tmp_path))
    assert conf(ws).get('tlbbalance', 'module_host_required') == 'false'


def test_tempest_conf_for_the_ssh_pass(tmp_path):
    f = facts(tmp_path, ['fast', 'fast', 'kvm'])
    opts = sshaccess.tlbbalance_options(
        f, {'h0': '127.1.0.1', 'h1': '127.1.0.2'}, '/k', 24415)
    ws = run_tempest.tempest_conf(f, str(tmp_path), name='tempest-ssh.conf',
                                  **opts)
    c = conf(ws, 'tempest-ssh.conf')
    assert c.get('tlbbalance', 'host_access') == 'ssh'
    assert c.get('tlbbalance', 'ssh_hosts') == 'h0:127.1.0.1,h1:127.1.0.2'
    assert c.get('tlbbalance', 'ssh_port') == '24415'
    assert c.get('tlbbalance', 'cli') == '/v/bin/tlbbalance'
    assert c.get('tlbbalance', 'libvirt_uri') == 'qemu:///system'
    # the sshds' keys are known: the plugin refuses unknown hosts
    assert c.get('tlbbalance', 'ssh_known_hosts_file') == '/known_hosts'


def test_ssh_pass_known_hosts_file(tmp_path):
    d = tmp_path / 'ssh'
    d.mkdir()
    (d / 'host_ed25519.pub').write_text('ssh-ed25519 AAAAC3Nz tlbb\n')
    path = sshaccess.known_hosts(str(d), {'h1': '127.1.0.2',
                                          'h0': '127.1.0.1'}, 24415)
    assert open(path).read() == (
        '[127.1.0.1]:24415 ssh-ed25519 AAAAC3Nz\n'
        '[127.1.0.2]:24415 ssh-ed25519 AAAAC3Nz\n')


def test_worker_file_splits_kvm_tests_from_the_rest():
    import re
    import yaml
    workers = [w['worker'] for w in yaml.safe_load(run_tempest.WORKERS)]
    ids = ['tlbbalance_tempest_plugin.tests.scenario.test_module.'
           'ModuleTraitTest.test_registered_with_flavor_parameters',
           'tlbbalance_tempest_plugin.tests.scenario.test_mixed_versions.'
           'MixedVersionTest.test_servers_across_n1_and_n',
           'tlbbalance_tempest_plugin.tests.scenario.test_lifecycle.'
           'LifecycleTest.test_hard_reboot_then_delete',
           'tempest.api.compute.flavors.test_flavors.FlavorsV2TestJSON.'
           'test_get_flavor']
    got = [[i for i in ids if any(re.search(r, i) for r in w)]
           for w in workers]
    assert got == [ids[:2], ids[2:]]


def test_help_prints_the_knobs_and_starts_nothing(monkeypatch, capsys):
    """--help once brought a whole cloud up (no argument parser)."""
    def no_cloud(argv):
        raise AssertionError('cloud.main(%r) called for --help' % (argv,))
    monkeypatch.setattr(run_tempest.cloud, 'main', no_cloud)
    with pytest.raises(SystemExit) as exc:
        run_tempest.main(['--help'])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert 'TLBB_TEMPEST_REGEX' in out and 'tox -e tempest:' in out
