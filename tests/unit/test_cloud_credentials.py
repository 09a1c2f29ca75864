# SPDX-License-Identifier: Apache-2.0
"""The cloud in a box's credentials (tools/cloud): random per cloud, one
per role, in files only their owner reads, never on a command line, and
what tempest is configured with.

The configuration functions run for real and write their files here; the
services are not started (tox -e tempest brings the whole cloud up with
these credentials and drives it through them).
"""

import json
import os
import re
import stat

from cloudtools import cloud_modules

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
CLOUD = os.path.join(REPO, 'tools', 'cloud')
backends, cloud, configs, cloud_openstack, run_tempest = cloud_modules(
    'backends', 'cloud', 'configs', 'openstack', 'run_tempest')

OLD_FIXED = {'admin', 'guest', 'tlbb-cloud'}


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def secrets_of(s):
    return [s['admin'], s['db'], s['rabbit']] + list(s['services'].values())


def test_credentials_are_random_distinct_and_per_role():
    a, b = configs.new_secrets(), configs.new_secrets()
    assert set(a['services']) == set(configs.SERVICE_USERS) == {
        'placement', 'glance', 'nova', 'neutron'}
    va, vb = secrets_of(a), secrets_of(b)
    assert len(set(va)) == len(va), 'one password shared by two roles'
    assert not set(va) & set(vb), 'two clouds share a password'
    for v in va:
        assert len(v) >= 32 and v not in OLD_FIXED
        assert re.fullmatch(r'[A-Za-z0-9_-]+', v), v  # no quoting needed


def lay_with_secrets(tmp_path):
    top = str(tmp_path / 'cloud')
    cloud.fresh_top(top)
    lay = configs.Layout(top, 23400, '/v', configs.new_secrets())
    lay.save_secrets()
    return lay


def test_cloud_dir_and_secrets_file_are_private(tmp_path):
    top = tmp_path / 'cloud'
    top.mkdir(mode=0o755)
    (top / 'old').write_text('x')
    lay = lay_with_secrets(tmp_path)
    assert mode(str(top)) == 0o700 and os.listdir(str(top)) == [
        'secrets.json']
    path = os.path.join(lay.top, 'secrets.json')
    assert mode(path) == 0o600
    # a cloud already up: its credentials read back from the file
    again = configs.Layout(lay.top, 23400, '/v')
    assert again.secrets == lay.secrets
    assert json.load(open(path)) == lay.secrets


def test_each_service_config_has_its_own_password_0600(tmp_path):
    lay = lay_with_secrets(tmp_path)
    s = lay.secrets
    files = {}
    for name in ('keystone', 'placement', 'glance', 'neutron', 'nova'):
        files[name] = configs.write(lay.path('etc', name + '.conf'),
                                    getattr(configs, name)(lay))
        assert mode(files[name]) == 0o600, name
    text = {n: open(p).read() for n, p in files.items()}
    for n, t in text.items():
        assert 'guest' not in t and 'tlbb-cloud' not in t, n
        assert s['admin'] not in t, n      # no service holds the admin's
        # the database's password where a database is used
        if 'connection = mysql' in t:
            assert 'tlbb:%s@' % s['db'] in t, n
    for user in ('placement', 'glance', 'neutron', 'nova'):
        assert 'password = %s' % s['services'][user] in text[user], user
    # nova talks to placement and neutron as those users
    assert 'password = %s' % s['services']['placement'] in text['nova']
    assert 'password = %s' % s['services']['neutron'] in text['nova']
    assert 'rabbit://tlbb:%s@127.0.0.1' % s['rabbit'] in text['nova']


def test_rabbitmq_has_no_guest(tmp_path):
    lay = lay_with_secrets(tmp_path)
    conf = backends.rabbit_config(lay)
    assert 'default_user = tlbb\n' in conf
    assert 'default_pass = %s\n' % lay.secrets['rabbit'] in conf
    assert 'guest' not in conf


def test_no_password_on_a_command_line(tmp_path):
    lay = lay_with_secrets(tmp_path)
    chains = cloud_openstack.schema_chains(
        lay, {k: '/etc/%s.conf' % k for k in (
            'keystone', 'nova', 'placement', 'glance', 'neutron', 'ml2')})
    argvs = ' '.join(' '.join(a) for c in chains.values() for a in c)
    for v in secrets_of(lay.secrets):
        assert v not in argvs
    assert 'bootstrap' in argvs and '--bootstrap-password' not in argvs


def test_openrc_and_tempest_conf_carry_the_admin_password_0600(tmp_path):
    lay = lay_with_secrets(tmp_path)
    rc = cloud.openrc(lay)
    assert 'export OS_PASSWORD=%s\n' % lay.admin_password in rc
    facts = {'images': {'tlbb-payload': 'img'},
             'flavors': {'tlbb.tiny': 'f1', 'tlbb.tiny.alt': 'f2'},
             'logs': str(tmp_path), 'auth_url': lay.auth_url,
             'region': 'RegionOne', 'venv': '/v',
             'admin': {'user': 'admin', 'password': lay.admin_password,
                       'project': 'admin'},
             'hosts': [{'name': 'h0', 'kind': 'fast',
                        'hugetlbfs': '/var/lib/libvirt/hugepages'}]}
    ws = run_tempest.tempest_conf(facts, lay.top)
    path = os.path.join(ws, 'etc', 'tempest.conf')
    assert mode(path) == 0o600
    assert 'admin_password = %s\n' % lay.admin_password in open(path).read()
