# SPDX-License-Identifier: Apache-2.0
"""Every service's configuration, written with configparser.

One function per service returns ``{section: {option: value}}``; all of
them read the same ``Layout`` (directories, ports, credentials), so each
fact about the cloud is stated once. Everything listens on 127.0.0.1 only.

Credentials are made afresh for every ``cloud.py up`` (:func:`new_secrets`:
the admin's, each service user's, the database's and RabbitMQ's, each its
own random password) and kept in ``<dir>/secrets.json``; every file that
holds one is written 0600, and the cloud's directory is 0700: another
local user of a shared machine gets nothing from it.
"""

import configparser
import json
import os
import secrets as _secrets

REGION = 'RegionOne'
# keystone users of the services (openstack.SERVICES), the database user,
# the RabbitMQ user
SERVICE_USERS = ('placement', 'glance', 'nova', 'neutron')
DB_USER = 'tlbb'
RABBIT_USER = 'tlbb'
SECRETS = 'secrets.json'

# Port offsets from the base port (TLBB_CLOUD_PORT_BASE).
PORTS = {
    'mysql': 0,
    'rabbit': 1,
    'epmd': 2,
    'rabbit_dist': 3,
    'keystone': 10,
    'placement': 11,
    'glance': 12,
    'nova': 13,
    'neutron': 14,
    # the fast hosts' sshds (sshaccess.py), each on its own 127.1.0.N
    'ssh': 15,
    # QEMU's incoming live-migration streams: MIGRATION_PORTS ports per
    # fast host from here (qemu_migration), host i from +20 + i * 4
    'migration': 20,
}
# Ports of one host's incoming migrations (libvirt's migration_port_min
# to _max): a live migration takes one while it runs (two at once into
# one host need two).
MIGRATION_PORTS = 4

DATABASES = ('keystone', 'placement', 'glance', 'nova_api', 'nova',
             'nova_cell0', 'neutron')


def new_secrets():
    """Random credentials for one cloud: admin, each service user, the
    database, RabbitMQ (32 URL-safe characters each)."""
    def token():
        return _secrets.token_urlsafe(24)
    return {'admin': token(), 'db': token(), 'rabbit': token(),
            'services': {u: token() for u in SERVICE_USERS}}


def write_private(path, text):
    """Write text to a new file readable by its owner only (0600 from its
    creation: no moment at which it is readable by others)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                 0o600)
    with os.fdopen(fd, 'w') as f:
        f.write(text)
    return path


class Layout:
    """Where everything of one cloud lives, its ports and credentials.

    secrets: the cloud's credentials (:func:`new_secrets`); None reads
    them from ``<top>/secrets.json`` (a cloud already up)."""

    def __init__(self, top, port_base, venv, secrets=None):
        self.top = top
        self.venv = venv
        self.port_base = port_base
        self.etc = os.path.join(top, 'etc')
        self.logs = os.path.join(top, 'log')
        self.data = os.path.join(top, 'data')
        self.run = os.path.join(top, 'run')
        self._secrets = secrets

    @property
    def secrets(self):
        if self._secrets is None:
            path = os.path.join(self.top, SECRETS)
            try:
                with open(path) as f:
                    self._secrets = json.load(f)
            except FileNotFoundError:
                raise FileNotFoundError(
                    'no credentials at %s: is the cloud up (tools/cloud/'
                    'cloud.py up)?' % path) from None
        return self._secrets

    def save_secrets(self):
        return write_private(os.path.join(self.top, SECRETS),
                             json.dumps(self.secrets, indent=1,
                                        sort_keys=True) + '\n')

    @property
    def admin_password(self):
        return self.secrets['admin']

    def password(self, user):
        """The keystone password of service user ``user``."""
        return self.secrets['services'][user]

    def port(self, name):
        return self.port_base + PORTS[name]

    def url(self, name, path=''):
        return 'http://127.0.0.1:%d%s' % (self.port(name), path)

    @property
    def auth_url(self):
        return self.url('keystone', '/v3')

    def db(self, name):
        return ('mysql+pymysql://%s:%s@127.0.0.1:%d/%s?charset=utf8'
                % (DB_USER, self.secrets['db'], self.port('mysql'), name))

    @property
    def transport_url(self):
        return 'rabbit://%s:%s@127.0.0.1:%d/' % (
            RABBIT_USER, self.secrets['rabbit'], self.port('rabbit'))

    def path(self, *parts):
        return os.path.join(self.top, *parts)

    def bin(self, name):
        return os.path.join(self.venv, 'bin', name)

    def log(self, name):
        return os.path.join(self.logs, name + '.log')


def write(path, sections):
    cp = configparser.RawConfigParser()
    cp.optionxform = str
    for sec, opts in sections.items():
        if sec != 'DEFAULT':
            cp.add_section(sec)
        for k, v in opts.items():
            if isinstance(v, bool):
                v = 'true' if v else 'false'
            cp.set(sec, k, str(v))
    import io
    buf = io.StringIO()
    cp.write(buf)
    # passwords in most of them: 0600, every one
    return write_private(path, buf.getvalue())


def _authtoken(lay, user):
    return {
        'www_authenticate_uri': lay.auth_url,
        'auth_url': lay.auth_url,
        'auth_type': 'password',
        'project_domain_name': 'Default',
        'user_domain_name': 'Default',
        'project_name': 'service',
        'username': user,
        'password': lay.password(user),
        'service_token_roles_required': True,
        # token validation is cached in-process: keystone's own cache
        # below keeps each validation cheap when the machine is busy
        'token_cache_time': 300,
    }


def _service_auth(lay, user='nova', section_extra=None):
    d = {
        'auth_type': 'password',
        'auth_url': lay.auth_url,
        'project_domain_name': 'Default',
        'user_domain_name': 'Default',
        'project_name': 'service',
        'username': user,
        'password': lay.password(user),
        'region_name': REGION,
    }
    d.update(section_extra or {})
    return d


def _common(lay, name):
    return {
        'debug': False,
        'log_file': lay.log(name),
        'use_stderr': False,
    }


def keystone(lay):
    return {
        'DEFAULT': _common(lay, 'keystone'),
        'database': {'connection': lay.db('keystone')},
        'token': {'provider': 'fernet'},
        'fernet_tokens': {'key_repository': lay.path('data', 'fernet')},
        'fernet_receipts': {
            'key_repository': lay.path('data', 'fernet-receipts')},
        'credential': {'key_repository': lay.path('data', 'credential')},
        # docs/design/platform.md#a-real-cloud-on-this-machine: without
        # a cache token validation took 1-18 s
        'cache': {'enabled': True, 'backend': 'oslo_cache.dict'},
    }


def placement(lay):
    return {
        'DEFAULT': _common(lay, 'placement'),
        'placement_database': {'connection': lay.db('placement')},
        'api': {'auth_strategy': 'keystone'},
        'keystone_authtoken': _authtoken(lay, 'placement'),
    }


def glance(lay):
    return {
        'DEFAULT': dict(_common(lay, 'glance'),
                        enabled_backends='local:file'),
        'database': {'connection': lay.db('glance')},
        'keystone_authtoken': _authtoken(lay, 'glance'),
        'paste_deploy': {'flavor': 'keystone', 'config_file': os.path.join(
            lay.venv, 'etc', 'glance', 'glance-api-paste.ini')},
        'glance_store': {'default_backend': 'local'},
        'local': {'filesystem_store_datadir': lay.path('data', 'images')},
        'os_glance_staging_store': {
            'filesystem_store_datadir': lay.path('data', 'glance-staging')},
        'os_glance_tasks_store': {
            'filesystem_store_datadir': lay.path('data', 'glance-tasks')},
        'oslo_concurrency': {'lock_path': lay.path('run', 'glance-lock')},
    }


def neutron(lay):
    return {
        'DEFAULT': dict(_common(lay, 'neutron'), **{
            'core_plugin': 'ml2',
            'service_plugins': '',
            'auth_strategy': 'keystone',
            'transport_url': lay.transport_url,
            'notify_nova_on_port_status_changes': False,
            'notify_nova_on_port_data_changes': False,
            'api_paste_config': os.path.join(lay.venv, 'etc', 'neutron',
                                             'api-paste.ini'),
            'api_workers': 1,
            'rpc_workers': 0,
            'rpc_state_report_workers': 0,
        }),
        'database': {'connection': lay.db('neutron')},
        'keystone_authtoken': _authtoken(lay, 'neutron'),
        'nova': _service_auth(lay, 'nova'),
        'oslo_concurrency': {'lock_path': lay.path('run', 'neutron-lock')},
        'agent': {'root_helper': '', 'use_helper_for_ns_read': False},
    }


def neutron_ml2(lay):
    # ML2 with no agents and no mechanism driver that needs one: servers
    # boot with "networks": "none"; nova still lists ports and security
    # groups through the real API.
    return {
        'ml2': {
            'type_drivers': 'flat,vlan',
            'tenant_network_types': '',
            'mechanism_drivers': '',
            'extension_drivers': 'port_security',
        },
        'ml2_type_flat': {'flat_networks': '*'},
        'securitygroup': {'firewall_driver': 'noop'},
    }


def _nova_base(lay, name):
    return {
        'DEFAULT': dict(_common(lay, name), **{
            'transport_url': lay.transport_url,
            'my_ip': '127.0.0.1',
            'state_path': lay.path('data', 'nova'),
        }),
        'keystone_authtoken': _authtoken(lay, 'nova'),
        'placement': _service_auth(lay, 'placement'),
        'neutron': _service_auth(lay, 'neutron', {
            'service_metadata_proxy': False}),
        'glance': {'api_servers': lay.url('glance'),
                   'region_name': REGION},
        'service_user': _service_auth(lay, 'nova',
                                      {'send_service_user_token': True}),
        'oslo_concurrency': {'lock_path': lay.path('run', name + '-lock')},
        'oslo_messaging_notifications': {'driver': 'noop'},
        'vnc': {'enabled': False},
        'spice': {'enabled': False},
        'serial_console': {'enabled': False},
        'cinder': {'os_region_name': REGION},
    }


def nova(lay):
    """nova-api, nova-conductor, nova-scheduler (they hold [database])."""
    c = _nova_base(lay, 'nova')
    c['DEFAULT'].update({
        # one compute node in a box: resize to the same host is the only
        # resize there is; migrations go between the box's compute hosts
        'allow_resize_to_same_host': True,
    })
    c['api_database'] = {'connection': lay.db('nova_api')}
    c['database'] = {'connection': lay.db('nova')}
    c['api'] = {'auth_strategy': 'keystone'}
    c['scheduler'] = {
        # docs/design/platform.md#a-real-cloud-on-this-machine: 40-55 s
        # of the start went into host discovery
        'discover_hosts_in_cells_interval': 2,
        'workers': 1,
    }
    c['conductor'] = {'workers': 1}
    c['filter_scheduler'] = {
        'enabled_filters': ','.join((
            'ComputeFilter', 'ComputeCapabilitiesFilter',
            'ImagePropertiesFilter', 'ServerGroupAntiAffinityFilter',
            'ServerGroupAffinityFilter', 'SameHostFilter',
            'DifferentHostFilter', 'NUMATopologyFilter')),
    }
    return c


def libvirt_sock(lay, host):
    """The libvirtd socket of fast host ``host`` as seen from this
    machine (computehost.ComputeHost's LibvirtHost keeps it there)."""
    return lay.path('hosts', host, 'run', 'libvirt', 'libvirt-sock')


def live_migration_uri(lay):
    """nova's ``[libvirt] live_migration_uri`` of the fast hosts: a
    format with ``%s``, which nova replaces by the destination's host
    name (tlbb-fast-2), giving that host's libvirtd socket. The source's
    libvirtd opens it (a peer-to-peer migration): its mount namespace
    covers /run/libvirt but not the cloud's directory."""
    path = libvirt_sock(lay, '%s')
    if path.count('%') != 1:
        raise ValueError('the cloud directory %r has a %% in it: nova '
                         'formats live_migration_uri with %%' % lay.top)
    return 'qemu+unix:///system?socket=' + path


def host_address(index):
    """The address of fast host number ``index`` (0, 1, ...) on this
    machine's loopback: its sshd (sshaccess.py) and QEMU's incoming
    migrations listen there."""
    return '127.1.0.%d' % (index + 1)


def qemu_migration(lay, index):
    """qemu.conf settings of fast host number ``index`` for incoming live
    migrations: QEMU listens on the host's own loopback address
    (:func:`host_address`; ``migration_host`` is what the source's QEMU
    connects to: the default, the host name tlbb-fast-N, resolves
    nowhere, and libvirt refuses 127.0.0.1 and localhost there), on
    ports of its own, so that neither two hosts nor two clouds on this
    machine take the same one."""
    first = lay.port('migration') + index * MIGRATION_PORTS
    return {'migration_address': host_address(index),
            'migration_host': host_address(index),
            'migration_port_min': first,
            'migration_port_max': first + MIGRATION_PORTS - 1}


# compute_driver of the plugin, and of the fast hosts (box_compute.py:
# the plugin's driver, live migrations with VIR_MIGRATE_UNSAFE)
DRIVER = 'tlbbalance.TLBBalanceLibvirtDriver'
BOX_DRIVER = 'tlbbalance_box.BoxDriver'


def nova_compute(lay, host, instances, libvirt_uri, provider_dir,
                 driver=DRIVER):
    """One nova-compute (no [database]: computes reach it via conductor)."""
    c = _nova_base(lay, 'nova-compute-' + host)
    helper = ('%s --config-file %s --privsep_context %%s'
              % (lay.bin('privsep-helper'),
                 lay.path('etc', 'nova', 'compute-%s.conf' % host)))
    c['DEFAULT'].update({
        'host': host,
        # nova writes compute_id here: one state_path per compute host
        'state_path': lay.path('data', 'nova-' + host),
        'compute_driver': driver,
        'instances_path': instances,
        'cpu_allocation_ratio': 16.0,
        'ram_allocation_ratio': 1.0,
        'reserved_host_memory_mb': 512,
        'reserved_host_disk_mb': 0,
        'heal_instance_info_cache_interval': -1,
        'resume_guests_state_on_host_boot': False,
        'use_cow_images': True,
        'force_raw_images': False,
        # nova's periodic update of the resource tracker: fast enough for
        # a test to see a new trait/provider without waiting a minute
        'update_resources_interval': 10,
    })
    c['libvirt'] = {
        'virt_type': 'qemu',
        'cpu_mode': 'none',
        'connection_uri': libvirt_uri,
        # live migration between the fast hosts (docs/cloud.md, "Live
        # migration"): the destination's libvirtd socket; no
        # live_migration_inbound_addr, so nova formats this URI with the
        # destination's name and libvirt sends QEMU's stream to the
        # destination's qemu.conf migration_host (qemu_migration)
        'live_migration_uri': live_migration_uri(lay),
    }
    c['compute'] = {
        'provider_config_location': provider_dir,
        'resource_provider_association_refresh': 10,
    }
    c['workarounds'] = {'disable_compute_service_check_for_ffu': True}
    # No sudo here and no rootwrap config: nova's privsep daemons are
    # started directly (we are root).
    for ctx in ('nova_sys_admin',):
        c[ctx] = {'helper_command':
                  helper % 'nova.privsep.sys_admin_pctxt'}
    c['vif_plug_ovs_privileged'] = {
        'helper_command': helper % 'vif_plug_ovs.privsep.vif_plug'}
    c['vif_plug_linux_bridge_privileged'] = {
        'helper_command': helper % 'vif_plug_linux_bridge.privsep.'
                                   'vif_plug'}
    return c


def nova_compute_kvm(lay, host, instances, libvirt_uri, provider_dir):
    """nova-compute of the kvm host: on this machine, driving the node's
    libvirtd over the relayed socket (docs/cloud.md, "The kvm host")."""
    c = nova_compute(lay, host, instances, libvirt_uri, provider_dir)
    c['libvirt'].update({
        'virt_type': 'kvm',
        # nova probes O_DIRECT on its own instances_path (this machine's
        # file system: supported) and would give disks cache='none'; QEMU
        # in the node opens them through a 9p share.
        'disk_cachemodes': 'file=writeback',
    })
    # this nova-compute cannot see the node's module (another kernel):
    # the node's provider config gives CUSTOM_TLBBALANCE_MODULE instead
    # (kvmhost.write_provider_config)
    c.setdefault('tlbbalance', {})['report_module_trait'] = False
    return c


def uwsgi(lay, name, module, extra=()):
    """uwsgi argv for one API service on 127.0.0.1."""
    return [
        lay.bin('uwsgi'),
        '--http-socket', '127.0.0.1:%d' % lay.port(name),
        '--module', module,
        '--master', '--processes', '1', '--threads', '4',
        '--enable-threads', '--lazy-apps', '--die-on-term',
        '--need-app', '--buffer-size', '65535',
        # docs/design/platform.md#a-real-cloud-on-this-machine:
        # kept-alive clients got resets mid-setup without it
        '--add-header', 'Connection: close',
        '--pidfile', lay.path('run', name + '.uwsgi.pid'),
    ] + list(extra)
