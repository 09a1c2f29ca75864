# SPDX-License-Identifier: Apache-2.0
"""The cloud in a box's set-up for live migration between its fast hosts
(tools/cloud, docs/cloud.md "Live migration"): the configuration
functions run for real and write their files here; no daemon is started
(tox -e tempest migrates a server between the hosts they configure:
tlbbalance_tempest_plugin/tests/scenario/test_live_migration.py)."""

import configparser
import os

import pytest

from cloudtools import cloud_modules

computehost, configs, libvirthost, run_tempest = cloud_modules(
    'computehost', 'configs', 'libvirthost', 'run_tempest')


def layout(tmp_path, base=23400):
    return configs.Layout(str(tmp_path / 'cloud'), base, '/v',
                          configs.new_secrets())


def hosts(lay, n=2):
    return [computehost.ComputeHost(lay, 'tlbb-fast-%d' % (i + 1),
                                    caps_cache=None, hugepages=0, index=i)
            for i in range(n)]


def test_live_migration_uri_reaches_each_destination_libvirtd(tmp_path):
    lay = layout(tmp_path)
    uri = configs.nova_compute(lay, 'tlbb-fast-1', '/i', 'qemu:///x',
                               '/p')['libvirt']['live_migration_uri']
    for h in hosts(lay):
        # nova: CONF.libvirt.live_migration_uri % <destination host>
        assert uri % h.name == h.lh.uri
    # no inbound address: nova would put it in place of the host name
    assert 'live_migration_inbound_addr' not in configs.nova_compute(
        lay, 'tlbb-fast-1', '/i', 'qemu:///x', '/p')['libvirt']


def test_a_percent_in_the_cloud_dir_is_refused_by_name(tmp_path):
    lay = configs.Layout(str(tmp_path / '50%cloud'), 23400, '/v',
                         configs.new_secrets())
    with pytest.raises(ValueError, match='50%cloud'):
        configs.live_migration_uri(lay)


def test_each_host_its_own_uuid_and_migration_ports(tmp_path):
    lay = layout(tmp_path)
    a, b = hosts(lay)
    assert a.lh.host_uuid != b.lh.host_uuid
    # the same at every start of the same cloud directory
    assert a.lh.host_uuid == hosts(lay)[0].lh.host_uuid
    ranges = []
    for i, h in enumerate((a, b)):
        q = h.lh.qemu_conf
        # libvirt refuses 127.0.0.1 as migration_host; a loopback
        # address of the host's own (its sshd's, sshaccess.py)
        assert q['migration_address'] == q['migration_host'] == \
            configs.host_address(i) == '127.1.0.%d' % (i + 1)
        ranges.append(set(range(q['migration_port_min'],
                                q['migration_port_max'] + 1)))
    assert ranges[0] and ranges[1] and not ranges[0] & ranges[1]
    # none is another service's port of this cloud
    others = {lay.port(n) for n in configs.PORTS if n != 'migration'}
    assert not (ranges[0] | ranges[1]) & others
    # a cloud on another port base (another helper's) gets other ports
    c, _ = hosts(layout(tmp_path / 'other', base=24400))
    assert c.lh.qemu_conf['migration_port_min'] not in ranges[0] | ranges[1]


def test_private_libvirt_configs_carry_uuid_and_migration(tmp_path):
    lay = layout(tmp_path)
    h = hosts(lay)[1]
    lh = h.lh
    os.makedirs(lh.workdir)
    lh._make_dirs()
    etc = lh.path(libvirthost.HOST_ETC)
    with open(os.path.join(etc, 'libvirtd.conf')) as f:
        text = f.read()
    assert text.count('\nhost_uuid =') == 1
    assert 'host_uuid = "%s"\n' % lh.host_uuid in text
    with open(os.path.join(etc, 'qemu.conf')) as f:
        qemu = f.read()
    first = lay.port('migration') + configs.MIGRATION_PORTS
    for line in ('migration_address = "127.1.0.2"',
                 'migration_host = "127.1.0.2"',
                 'migration_port_min = %d' % first,
                 'migration_port_max = %d' % (
                     first + configs.MIGRATION_PORTS - 1)):
        assert line + '\n' in qemu
    # written twice (a second start): each setting once
    lh._make_dirs()
    with open(os.path.join(etc, 'libvirtd.conf')) as f:
        assert f.read().count('\nhost_uuid =') == 1
    with open(os.path.join(etc, 'qemu.conf')) as f:
        assert f.read().count('\nmigration_port_min =') == 1


def test_a_bad_qemu_conf_value_is_refused_by_name():
    with pytest.raises(ValueError, match='a"b'):
        libvirthost._conf_value('a"b')


def test_tempest_conf_enables_live_migration_between_fast_hosts(tmp_path):
    lay = layout(tmp_path)
    facts = {'images': {'tlbb-payload': 'img'},
             'flavors': {'tlbb.tiny': 'f1', 'tlbb.tiny.alt': 'f2'},
             'logs': str(tmp_path), 'auth_url': lay.auth_url,
             'region': 'RegionOne', 'venv': '/v',
             'admin': {'user': 'admin', 'password': 'x', 'project': 'a'},
             'hosts': [{'name': 'tlbb-fast-1', 'kind': 'fast'},
                       {'name': 'tlbb-fast-2', 'kind': 'fast'},
                       {'name': 'tlbb-kvm-1', 'kind': 'kvm'}]}
    os.makedirs(lay.top)
    ws = run_tempest.tempest_conf(facts, lay.top)
    c = configparser.RawConfigParser()
    c.read(os.path.join(ws, 'etc', 'tempest.conf'))
    assert c.get('compute-feature-enabled', 'live_migration') == 'true'
    assert c.get('tlbbalance', 'live_migration_hosts') == \
        'tlbb-fast-1,tlbb-fast-2'


def test_figures_lines_of_this_run_only(tmp_path):
    log = tmp_path / 'tempest.log'
    log.write_text('2026 INFO x [-] FIGURES old run\n')
    since = run_tempest.log_size(str(log))
    with open(log, 'a') as f:
        f.write('2026 INFO t [-] noise\n'
                '2026 INFO t [-] FIGURES live migration a -> b: 3.1 s\n')
    assert run_tempest.figures(str(log), since) == [
        'FIGURES live migration a -> b: 3.1 s']
    assert run_tempest.figures(str(tmp_path / 'none.log')) == []


def test_fast_hosts_run_the_box_driver_the_kvm_host_the_plugins(tmp_path):
    lay = layout(tmp_path)
    fast = configs.nova_compute(lay, 'tlbb-fast-1', '/i', 'qemu:///x', '/p',
                                driver=configs.BOX_DRIVER)
    kvm = configs.nova_compute_kvm(lay, 'tlbb-kvm-1', '/i', 'qemu:///x',
                                   '/p')
    assert fast['DEFAULT']['compute_driver'] == 'tlbbalance_box.BoxDriver'
    assert kvm['DEFAULT']['compute_driver'] == \
        'tlbbalance.TLBBalanceLibvirtDriver'
    # the name nova imports (nova.virt.<compute_driver>) is the one
    # box_compute.py installs
    with open(computehost.BOX_COMPUTE) as f:
        src = f.read()
    assert "MODULE = 'nova.virt.%s'" % configs.BOX_DRIVER.split('.')[0] \
        in src
