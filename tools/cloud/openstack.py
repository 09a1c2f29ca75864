# SPDX-License-Identifier: Apache-2.0
"""The OpenStack services: schemas, keystone's catalog, the API servers
under uWSGI and nova's conductor and scheduler as plain processes."""

import concurrent.futures
import os
import shutil

import api
import configs
import procs

# (service type, name, user, port name, URL path)
SERVICES = (
    ('placement', 'placement', 'placement', 'placement', ''),
    ('image', 'glance', 'glance', 'glance', ''),
    ('compute', 'nova', 'nova', 'nova', '/v2.1'),
    ('network', 'neutron', 'neutron', 'neutron', ''),
)


def write_configs(lay):
    c = {}
    c['keystone'] = configs.write(lay.path('etc', 'keystone',
                                           'keystone.conf'),
                                  configs.keystone(lay))
    c['placement'] = configs.write(lay.path('etc', 'placement',
                                            'placement.conf'),
                                   configs.placement(lay))
    c['glance'] = configs.write(lay.path('etc', 'glance',
                                         'glance-api.conf'),
                                configs.glance(lay))
    c['neutron'] = configs.write(lay.path('etc', 'neutron', 'neutron.conf'),
                                 configs.neutron(lay))
    c['ml2'] = configs.write(lay.path('etc', 'neutron', 'plugins', 'ml2',
                                      'ml2_conf.ini'),
                             configs.neutron_ml2(lay))
    c['nova'] = configs.write(lay.path('etc', 'nova', 'nova.conf'),
                              configs.nova(lay))
    shutil.copy(os.path.join(lay.venv, 'etc', 'nova', 'api-paste.ini'),
                lay.path('etc', 'nova', 'api-paste.ini'))
    for d in ('fernet', 'fernet-receipts', 'credential', 'images',
              'glance-staging', 'glance-tasks', 'nova'):
        os.makedirs(lay.path('data', d), exist_ok=True)
    return c


def _chain(lay, name, steps):
    # keystone-manage bootstrap reads the admin password from here
    env = {'OS_BOOTSTRAP_PASSWORD': lay.admin_password}
    for argv in steps:
        procs.run(argv, '%s: %s' % (name, os.path.basename(argv[0])),
                  lay.log(name + '-setup'), timeout=900,
                  env=env if name == 'keystone' else None)
    return name


def schema_chains(lay, cfg):
    """{service: [argv, ...]}: the commands that make each service's
    database schema, in order. No password in any argv (/proc shows it
    to every local user, the setup logs keep it)."""
    b = lay.bin
    kc = ['--config-file', cfg['keystone']]
    nc = ['--config-file', cfg['nova']]
    return {
        'keystone': [
            [b('keystone-manage')] + kc + ['db_sync'],
            [b('keystone-manage')] + kc + ['fernet_setup',
                                           '--keystone-user', 'root',
                                           '--keystone-group', 'root'],
            [b('keystone-manage')] + kc + ['credential_setup',
                                           '--keystone-user', 'root',
                                           '--keystone-group', 'root'],
            # the admin password through the environment
            # (OS_BOOTSTRAP_PASSWORD), not the command line, which any
            # local user can read in /proc and which the setup log keeps
            [b('keystone-manage')] + kc + [
                'bootstrap',
                '--bootstrap-admin-url', lay.auth_url,
                '--bootstrap-internal-url', lay.auth_url,
                '--bootstrap-public-url', lay.auth_url,
                '--bootstrap-region-id', configs.REGION],
        ],
        'placement': [[b('placement-manage'), '--config-file',
                       cfg['placement'], 'db', 'sync']],
        'glance': [[b('glance-manage'), '--config-file', cfg['glance'],
                    'db_sync']],
        'neutron': [[b('neutron-db-manage'), '--config-file',
                     cfg['neutron'], '--config-file', cfg['ml2'],
                     'upgrade', 'heads']],
        'nova': [
            [b('nova-manage')] + nc + ['api_db', 'sync'],
            # cell0's database: nova's own name + _cell0 (nova_cell0),
            # read from nova.conf, not given on the command line
            [b('nova-manage')] + nc + ['cell_v2', 'map_cell0'],
            [b('nova-manage')] + nc + ['cell_v2', 'create_cell',
                                       '--name', 'cell1', '--verbose'],
            [b('nova-manage')] + nc + ['db', 'sync'],
        ],
    }


def sync_schemas(lay, cfg):
    """Every service's database schema, in parallel (MariaDB does the
    work; each chain is a few processes in a row)."""
    chains = schema_chains(lay, cfg)
    with concurrent.futures.ThreadPoolExecutor(len(chains)) as ex:
        futs = [ex.submit(_chain, lay, n, s) for n, s in chains.items()]
        for f in concurrent.futures.as_completed(futs):
            f.result()


def start_apis(lay, state, cfg):
    env = {
        'keystone': {'OS_KEYSTONE_CONFIG_FILES': cfg['keystone']},
        'placement': {'OS_PLACEMENT_CONFIG_DIR': os.path.dirname(
            cfg['placement'])},
        'glance': {'OS_GLANCE_CONFIG_DIR': os.path.dirname(cfg['glance'])},
        'neutron': {'OS_NEUTRON_CONFIG_DIR': lay.path('etc', 'neutron')},
        # nova's wsgi_app takes the first file as its paste config
        'nova': {'OS_NOVA_CONFIG_DIR': os.path.dirname(cfg['nova']),
                 'OS_NOVA_CONFIG_FILES': 'api-paste.ini;nova.conf'},
    }
    modules = {
        'keystone': 'keystone.wsgi.api:application',
        'placement': 'placement.wsgi.api:application',
        'glance': 'glance.wsgi.api:application',
        'neutron': 'neutron.wsgi.api:application',
        'nova': 'nova.wsgi.osapi_compute:application',
    }
    # glance takes image data as chunked uploads
    extra = {'glance': ['--http-chunked-input', '--http-raw-body',
                        '--chunked-input-limit', '10485760']}
    for name, module in modules.items():
        procs.spawn(state, name + '-api',
                    configs.uwsgi(lay, name, module, extra.get(name, ())),
                    lay.log(name + '-uwsgi-stdout'), env=env[name])


def wait_apis(lay, state, timeout=300):
    for name in ('keystone', 'placement', 'glance', 'neutron', 'nova'):
        procs.wait_for(
            '%s API on port %d' % (name, lay.port(name)),
            lambda: api.reachable(lay.url(name, '/')), timeout,
            interval=0.5,
            on_wait=lambda: procs.check_alive(state, name + '-api'))


def register_services(lay):
    """Service project, users and the catalog, through keystone's API."""
    adm = api.Client(lay.auth_url,
                     password=lay.admin_password).authenticate()
    proj = adm.post(lay.auth_url + '/projects', {'project': {
        'name': 'service', 'domain_id': 'default'}})['project']
    roles = {r['name']: r['id'] for r in
             adm.get(lay.auth_url + '/roles')['roles']}
    for role in ('service', 'member', 'reader'):
        if role not in roles:
            roles[role] = adm.post(lay.auth_url + '/roles', {
                'role': {'name': role}})['role']['id']
    for stype, name, user, port, path in SERVICES:
        u = adm.post(lay.auth_url + '/users', {'user': {
            'name': user, 'password': lay.password(user),
            'domain_id': 'default', 'default_project_id': proj['id']}})
        uid = u['user']['id']
        for role in ('admin', 'service'):
            adm.put('%s/projects/%s/users/%s/roles/%s'
                    % (lay.auth_url, proj['id'], uid, roles[role]))
        svc = adm.post(lay.auth_url + '/services', {'service': {
            'type': stype, 'name': name}})['service']
        for iface in ('public', 'internal', 'admin'):
            adm.post(lay.auth_url + '/endpoints', {'endpoint': {
                'service_id': svc['id'], 'interface': iface,
                'region_id': configs.REGION,
                'url': lay.url(port, path)}})


def start_nova_services(lay, state, cfg):
    for name in ('nova-conductor', 'nova-scheduler'):
        procs.spawn(state, name, [lay.bin(name), '--config-file',
                                  cfg['nova'], '--log-file', lay.log(name)],
                    lay.log(name + '-stdout'))
