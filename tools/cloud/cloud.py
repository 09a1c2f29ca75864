#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A real OpenStack cloud in a box, on this machine, on loopback.

    tools/cloud/cloud.py up        start it (prints the time and RSS)
    tools/cloud/cloud.py down      stop everything it started, by pid
    tools/cloud/cloud.py status    what runs, what died
    tools/cloud/cloud.py env       OS_* variables for the openstack client

MariaDB and RabbitMQ (Debian's packages, started by hand), keystone,
placement, glance (file store), neutron (ML2, no agents), nova-api under
uWSGI; nova-conductor and nova-scheduler; and compute hosts, each a
libvirtd and a nova-compute with ``compute_driver =
tlbbalance.TLBBalanceLibvirtDriver`` in a private mount and UTS namespace
(computehost.py), with the libvirt hook installed. Every process is
recorded by pid in ``<dir>/state.json`` the moment it starts; ``down``
(and an ``up`` that fails) stops the compute hosts (tools/libvirthost.py:
everything in their namespaces, ``vm.nr_hugepages`` given back), then
exactly the recorded processes, newest first.

Environment:
    TLBB_CLOUD_DIR        where it lives (default <repo>/out/cloud)
    TLBB_CLOUD_PORT_BASE  first of its ports on 127.0.0.1 (default 23400;
                          configs.PORTS lists the offsets)
    TLBB_CLOUD_HOSTS      compute hosts to start (default 2: tlbb-fast-1,
                          tlbb-fast-2; migrations need two)
    TLBB_CLOUD_HUGEPAGES  2 MiB pages each compute host adds to the pool
                          while it runs (default 48)
    TLBB_CLOUD_KVM_HOST   1 (default): also a kvm host, tlbb-kvm-1
                          (kvmhost.py: a node with real KVM, tlbbalance.ko
                          and the hook, driven by a nova-compute here);
                          0 leaves it out (~1 GiB of RAM less)
    TLBB_CLOUD_RELEASE_N1 fast hosts (comma-separated) that run release
                          N-1 (tools/releases.py's PREVIOUS): its driver,
                          hook and CLI; nova stays the cloud's. Default
                          none; ``up --release-n1 HOST`` does the same
                          (docs/cloud.md, "A host on release N-1")
    TLBB_CACHE            cache dir (virtualenv, libvirt capabilities)

Facts a client needs (URLs, image and flavor ids, hosts and their libvirt
URIs) go to ``<dir>/cloud.json``; ``docs/cloud.md`` has the details.
"""

import argparse
import concurrent.futures
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
# tools/cloud's modules, tools/libvirthost.py, and nova_tlbbalance (the
# hook installer) from this checkout
for _p in (REPO, os.path.dirname(HERE), HERE):
    sys.path.insert(0, _p)

import api  # noqa: E402
import backends  # noqa: E402
import computehost  # noqa: E402
import configs  # noqa: E402
import kvmhost  # noqa: E402
import libvirthost  # noqa: E402
import openstack  # noqa: E402
import procs  # noqa: E402
import releases  # noqa: E402

CACHE = os.environ.get('TLBB_CACHE') or os.path.join(
    os.environ.get('XDG_CACHE_HOME') or os.path.expanduser('~/.cache'),
    'nova-tlbbalance')


def venv_for(repo):
    """The services' virtualenv of checkout ``repo``: one per checkout
    (``cloud-venv-<12 hex of its path>``), since ``up`` installs the
    checkout's own package and tempest plugin into it: two checkouts
    sharing one would test each other's code. ``TLBB_CLOUD_VENV``
    overrides it."""
    import hashlib
    key = hashlib.sha256(os.path.realpath(repo).encode()).hexdigest()[:12]
    return os.environ.get('TLBB_CLOUD_VENV') or os.path.join(
        CACHE, 'cloud-venv-' + key)


VENV = venv_for(REPO)
# the file in a virtualenv naming the checkout it belongs to
CHECKOUT_FILE = '.tlbb-checkout'
REQUIREMENTS = os.path.join(HERE, 'requirements.txt')
CONSTRAINTS = os.path.join(REPO, 'constraints.txt')

FLAVORS = (
    # name, MiB, vCPUs, GB disk: tempest's flavor_ref and flavor_ref_alt
    ('tlbb.tiny', 64, 1, 1),
    ('tlbb.tiny.alt', 96, 1, 1),
)
PAYLOAD_CMDLINE = 'pattern=seq pause_ms=200 report=64'


def top_dir():
    return os.path.abspath(os.environ.get('TLBB_CLOUD_DIR') or
                           os.path.join(REPO, 'out', 'cloud'))


def say(msg):
    print('[cloud %s] %s' % (time.strftime('%H:%M:%S'), msg), flush=True)


# -- the virtualenv -----------------------------------------------------------

def _stamp():
    import hashlib
    h = hashlib.sha256()
    for p in (REQUIREMENTS, CONSTRAINTS):
        with open(p, 'rb') as f:
            h.update(f.read())
    return h.hexdigest()


def ensure_venv():
    """The services' virtualenv: nova, placement, keystone, glance,
    neutron, tempest, uWSGI... pinned by constraints.txt; remade when the
    requirements or pins change. Then this checkout's package and its
    tempest plugin into it. Locked: two clouds of one checkout (each its
    TLBB_CLOUD_DIR) wait for each other's install."""
    import fcntl
    os.makedirs(CACHE, exist_ok=True)
    with open(VENV + '.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _ensure_venv()
    prune_venvs()


def prune_venvs():
    """Remove the checkout virtualenvs whose checkout is gone (each names
    its own in CHECKOUT_FILE); one locked by a running install is kept."""
    import fcntl
    for name in sorted(os.listdir(CACHE)):
        path = os.path.join(CACHE, name)
        if not name.startswith('cloud-venv-') or name.endswith('.lock') \
                or path == VENV:
            continue
        try:
            with open(os.path.join(path, CHECKOUT_FILE)) as f:
                checkout = f.read().strip()
        except OSError:
            continue    # not made by venv_for(): not ours to judge
        if os.path.isdir(checkout):
            continue
        with open(path + '.lock', 'w') as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue
            say('removing %s: its checkout %s is gone' % (path, checkout))
            shutil.rmtree(path, ignore_errors=True)
        os.unlink(path + '.lock')


def _ensure_venv():
    stamp = os.path.join(VENV, '.tlbb-stamp')
    want = _stamp()
    t0 = time.monotonic()
    if not (os.path.exists(stamp) and open(stamp).read() == want):
        say('installing the services into %s (a few minutes)' % VENV)
        shutil.rmtree(VENV, ignore_errors=True)
        procs.run([sys.executable, '-m', 'venv', VENV], 'python3 -m venv')
        procs.run([os.path.join(VENV, 'bin', 'pip'), 'install', '-q',
                   '-c', CONSTRAINTS, '-r', REQUIREMENTS],
                  'pip install -r tools/cloud/requirements.txt',
                  timeout=1800)
        with open(os.path.join(VENV, CHECKOUT_FILE), 'w') as f:
            f.write(os.path.realpath(REPO) + '\n')
        with open(stamp, 'w') as f:
            f.write(want)
    # the package, then the tempest plugin, a distribution of its own
    # (docs/tempest.md)
    for src, what in ((REPO, 'this checkout'),
                      (os.path.join(REPO, 'tempest-plugin'),
                       'the tempest plugin (tempest-plugin/)')):
        had_build = os.path.exists(os.path.join(src, 'build'))
        procs.run([os.path.join(VENV, 'bin', 'pip'), 'install', '-q',
                   '--no-deps', '--force-reinstall', src],
                  'pip install %s' % what, timeout=600)
        if not had_build:   # setuptools leaves build/ in the source
            shutil.rmtree(os.path.join(src, 'build'), ignore_errors=True)
    say('virtualenv ready (%.0f s)' % (time.monotonic() - t0))


# -- images and flavors -------------------------------------------------------

def _mbr_disk(size=1 << 20):
    """A raw disk with one partition entry (glance refuses a raw image
    whose MBR has none). Nothing boots from it: the payload is the
    image's kernel (kernel_id)."""
    disk = bytearray(size)
    # partition 1: type 0x83, LBA 2048.., as many sectors as fit
    entry = struct.pack('<B3sB3sII', 0, b'\0\0\0', 0x83, b'\0\0\0', 2048,
                        max(1, size // 512 - 2048))
    disk[446:462] = entry
    disk[510:512] = b'\x55\xaa'
    return bytes(disk)


def upload_images(lay, adm):
    build = lay.path('build', 'payload')
    procs.run(['make', '-s', '-C', os.path.join(REPO, 'tools', 'payload'),
               'O=' + build], 'build the guest payload',
              lay.log('images'))
    ids = {}
    with open(os.path.join(build, 'tlbb-payload.elf'), 'rb') as f:
        kernel = f.read()
    for name, data, props in (
            ('tlbb-payload-kernel', kernel,
             {'disk_format': 'aki', 'container_format': 'aki'}),
            ('tlbb-payload', _mbr_disk(),
             {'disk_format': 'raw', 'container_format': 'bare',
              'os_command_line': PAYLOAD_CMDLINE})):
        if name == 'tlbb-payload':
            props['kernel_id'] = ids['tlbb-payload-kernel']
        img = adm.post('image:/v2/images', dict(
            props, name=name, visibility='public'))
        adm.put('image:/v2/images/%s/file' % img['id'], raw=data)
        ids[name] = img['id']
    return ids


def create_flavors(adm):
    ids = {}
    for name, ram, vcpus, disk in FLAVORS:
        f = adm.post('compute:/flavors', {'flavor': {
            'name': name, 'ram': ram, 'vcpus': vcpus, 'disk': disk}})
        ids[name] = f['flavor']['id']
    return ids


# -- readiness ----------------------------------------------------------------

def wait_computes(lay, state, hosts, timeout=300):
    adm = api.Client(lay.auth_url,
                     password=lay.admin_password).authenticate()

    def alive():
        for h in hosts:
            dead = h.alive()
            if dead:
                raise procs.CloudError('%s died (logs in %s)'
                                       % (dead, lay.logs))
        for n in ('nova-conductor', 'nova-scheduler'):
            procs.check_alive(state, n)

    def up():
        svcs = adm.get('compute:/os-services?binary=nova-compute')
        ok = {s['host'] for s in svcs['services']
              if s['state'] == 'up' and s['status'] == 'enabled'}
        return all(h.name in ok for h in hosts)

    def discovered():
        hyp = adm.get('compute:/os-hypervisors')['hypervisors']
        names = {x['hypervisor_hostname'] for x in hyp}
        rps = adm.get('placement:/resource_providers')[
            'resource_providers']
        have = {r['name'] for r in rps}
        return all(h.name in names and h.name in have for h in hosts)

    procs.wait_for('nova-compute services up', up, timeout, interval=1,
                   on_wait=alive)
    procs.wait_for('compute hosts discovered by the scheduler and in '
                   'placement', discovered, timeout, interval=1,
                   on_wait=alive)


# -- up / down ----------------------------------------------------------------

def ports_free(lay):
    busy = []
    for name in configs.PORTS:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(('127.0.0.1', lay.port(name)))
        except OSError:
            busy.append('%s (%d)' % (name, lay.port(name)))
        finally:
            s.close()
    if busy:
        raise procs.CloudError(
            'ports in use on 127.0.0.1: %s; another cloud running? '
            '(tools/cloud/cloud.py down) or set TLBB_CLOUD_PORT_BASE'
            % ', '.join(busy))


def rss_mib(state):
    """RSS of the whole cloud: every recorded process and its children."""
    pids = {pid for _, pid, alive in processes(state) if alive}
    kids = {}
    for d in os.listdir('/proc'):
        if d.isdigit():
            try:
                with open('/proc/%s/stat' % d) as f:
                    ppid = int(f.read().rsplit(')', 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    todo, seen = list(pids), set()
    while todo:
        p = todo.pop()
        if p not in seen:
            seen.add(p)
            todo.extend(kids.get(p, ()))
    total = 0
    for p in seen:
        try:
            with open('/proc/%d/statm' % p) as f:
                total += int(f.read().split()[1]) * os.sysconf('SC_PAGESIZE')
        except (OSError, ValueError):
            pass
    return total / 2 ** 20, len(seen)


def fresh_top(top):
    """The cloud's directory, emptied, 0700: only root reads the cloud's
    files (credentials in many of them)."""
    shutil.rmtree(top, ignore_errors=True)
    os.makedirs(top, mode=0o700)
    os.chmod(top, 0o700)        # whatever the umask


def release_n1_hosts(args, names):
    """The fast hosts to run release N-1 on (``--release-n1`` or
    ``TLBB_CLOUD_RELEASE_N1``); a name the cloud does not have is an
    error naming it and the ones it has."""
    given = list(getattr(args, 'release_n1', None) or []) or [
        n.strip() for n in os.environ.get(
            'TLBB_CLOUD_RELEASE_N1', '').split(',') if n.strip()]
    bad = [n for n in given if n not in names]
    if bad:
        raise procs.CloudError(
            'release N-1 on %s: not a fast host of this cloud (fast hosts: '
            '%s; the kvm host runs this checkout)'
            % (', '.join(bad), ', '.join(names)))
    return given


def up(args):
    top = top_dir()
    state_path = os.path.join(top, 'state.json')
    if os.path.exists(state_path):
        old = procs.State(state_path)
        live = [n for n, _, alive in processes(old) if alive]
        if live:
            raise procs.CloudError(
                'a cloud already runs from %s (%s): tools/cloud/cloud.py '
                'down first' % (top, ', '.join(live)))
    base = int(os.environ.get('TLBB_CLOUD_PORT_BASE', '23400'))
    nhosts = int(os.environ.get('TLBB_CLOUD_HOSTS', '2'))
    # fresh credentials for this cloud (configs.new_secrets)
    lay = configs.Layout(top, base, VENV, configs.new_secrets())
    ports_free(lay)
    if os.geteuid() != 0:
        raise procs.CloudError('the cloud runs libvirtd and mounts in a '
                               'private namespace: run it as root')
    t_all = time.monotonic()
    ensure_venv()
    fresh_top(top)
    lay.save_secrets()
    for d in (lay.logs, lay.run, lay.data):
        os.makedirs(d)
    state = procs.State(state_path)
    state['top'] = top
    state['port_base'] = base
    t0 = time.monotonic()
    steps = {}
    names = ['tlbb-fast-%d' % (i + 1) for i in range(nhosts)]
    n1 = release_n1_hosts(args, names)
    release = None
    if n1:
        commit = releases.PREVIOUS
        release = {'commit': commit, 'tree': releases.export(
            commit, lay.path('release-n1'))}
        say('release N-1 (%s) on %s' % (commit, ', '.join(n1)))
    hosts = [computehost.ComputeHost(
        lay, name,
        caps_cache=os.path.join(CACHE, 'libvirt-capabilities'),
        hugepages=int(os.environ.get('TLBB_CLOUD_HUGEPAGES', '48')),
        index=i, release=release if name in n1 else None)
        for i, name in enumerate(names)]
    kvm = os.environ.get('TLBB_CLOUD_KVM_HOST', '1')
    if kvm not in ('0', '1'):
        raise procs.CloudError('TLBB_CLOUD_KVM_HOST=%r: 1 (the default: '
                               'with the kvm host) or 0' % kvm)
    if kvm == '1':
        hosts.append(kvmhost.KvmHost(lay, state, 'tlbb-kvm-1'))
    # the hosts' libvirtds start (and probe QEMU) while the schemas sync
    pool = concurrent.futures.ThreadPoolExecutor(max(1, len(hosts)))
    futs = []
    try:
        backends.start_mariadb(lay, state)
        backends.start_rabbit(lay, state)
        cfg = openstack.write_configs(lay)
        for h in hosts:
            if h.kind == 'kvm':
                h.boot()    # records its keeper: from this thread
        futs = [pool.submit(h.start_libvirt) for h in hosts]
        backends.setup_databases(lay, state)
        steps['databases'] = time.monotonic() - t0
        say('MariaDB ready; schemas (keystone, placement, glance, '
            'neutron, nova)')
        openstack.sync_schemas(lay, cfg)
        steps['schemas'] = time.monotonic() - t0
        openstack.start_apis(lay, state, cfg)
        openstack.wait_apis(lay, state)
        steps['apis'] = time.monotonic() - t0
        say('APIs answer; service users and catalog')
        openstack.register_services(lay)
        backends.wait_rabbit(lay, state)
        steps['rabbitmq'] = time.monotonic() - t0
        openstack.start_nova_services(lay, state, cfg)
        provider_dir = lay.path('etc', 'nova', 'provider_config')
        os.makedirs(provider_dir, exist_ok=True)
        os.makedirs(lay.path('data', 'instances'), exist_ok=True)
        for f in futs:
            f.result()
        steps['libvirt'] = time.monotonic() - t0
        for h in hosts:
            h.start_nova_compute(lay.path('data', 'instances'),
                                 provider_dir)
            if h.kind == 'kvm':
                say('node of %s: booted in %.0f s, module loaded: %s'
                    % (h.name, h.node_info['boot_seconds'],
                       h.node_info['module_loaded']))
        state['hosts'] = [h.state() for h in hosts]
        say('waiting for the compute hosts')
        wait_computes(lay, state, hosts)
        steps['computes'] = time.monotonic() - t0
        adm = api.Client(lay.auth_url,
                         password=lay.admin_password).authenticate()
        images = upload_images(lay, adm)
        flavors = create_flavors(adm)
        facts = {
            'auth_url': lay.auth_url, 'region': configs.REGION,
            'admin': {'user': 'admin', 'password': lay.admin_password,
                      'project': 'admin'},
            'images': images, 'flavors': flavors,
            'hosts': [h.facts() for h in hosts], 'venv': VENV, 'top': top,
            'logs': lay.logs,
            'ports': {n: lay.port(n) for n in configs.PORTS},
        }
        # both hold the admin password: 0600
        configs.write_private(os.path.join(top, 'cloud.json'), json.dumps(
            facts, indent=1, sort_keys=True))
        configs.write_private(os.path.join(top, 'openrc'), openrc(lay))
    except BaseException as exc:
        say('FAILED: %s' % exc)
        say('tearing down what was started')
        # a host still starting is waited for (bounded by libvirthost's
        # probe timeout), then stopped with everything else
        concurrent.futures.wait(futs)
        for h in hosts:
            try:
                h.stop()
            except Exception as e:    # noqa: BLE001 - keep cleaning
                say('stopping %s: %s' % (h.name, e))
        state['hosts'] = []
        down_state(state)
        raise
    finally:
        pool.shutdown(wait=False)
    took = time.monotonic() - t0
    mib, n = rss_mib(state)
    state['ready_seconds'] = took
    say('cloud ready in %.0f s (%.0f s with the virtualenv check); '
        '%d processes, RSS %.0f MiB; steps (s since start): %s'
        % (took, time.monotonic() - t_all, n, mib,
           ', '.join('%s %.0f' % kv for kv in steps.items())))
    say('facts: %s; client env: . %s/openrc' % (
        os.path.join(top, 'cloud.json'), top))
    return 0


# The compute API microversion the cloud's openrc asks for: nova-api
# validates flavor extra specs (a bad tlbbalance:* value is a 400) from
# 2.86 on; below it, the client's default, any value is stored.
COMPUTE_API_VERSION = '2.86'


def openrc(lay):
    return ''.join('export %s=%s\n' % kv for kv in (
        ('OS_AUTH_URL', lay.auth_url), ('OS_USERNAME', 'admin'),
        ('OS_PASSWORD', lay.admin_password), ('OS_PROJECT_NAME', 'admin'),
        ('OS_USER_DOMAIN_ID', 'default'),
        ('OS_PROJECT_DOMAIN_ID', 'default'),
        ('OS_IDENTITY_API_VERSION', '3'),
        ('OS_REGION_NAME', configs.REGION),
        ('OS_COMPUTE_API_VERSION', COMPUTE_API_VERSION))) + (
        # the cloud's own client (openstack, tlbbalance) first on PATH
        'export PATH=%s:"$PATH"\n' % os.path.join(lay.venv, 'bin'))


def down_state(state):
    """Stop the compute hosts (everything in their namespaces), then the
    recorded processes, newest first; raise if anything survived."""
    errors = []
    for saved in state.get('hosts', []):
        try:
            computehost.stop_saved(saved, log=say)
        except Exception as exc:    # noqa: BLE001 - keep cleaning
            errors.append('%s: %s' % (saved['name'], exc))
    state['hosts'] = []
    ok = procs.stop_all(state, grace=20, log=say)
    left = [r['name'] for r in state.procs if procs.alive(r)]
    if left or not ok or errors:
        raise procs.CloudError('still running after teardown: %s'
                               % ', '.join(left + errors))
    return True


def down(args):
    path = os.path.join(top_dir(), 'state.json')
    if not os.path.exists(path):
        say('no cloud state at %s: nothing to stop' % path)
        return 0
    state = procs.State(path)
    down_state(state)
    say('stopped; logs kept in %s' % os.path.join(top_dir(), 'log'))
    return 0


def processes(state):
    """(name, pid, alive) of every process of the cloud, the compute
    hosts' daemons and nova-computes included."""
    out = [(r['name'], r['pid'], procs.alive(r)) for r in state.procs]
    for h in state.get('hosts', []):
        if h.get('kind') == 'kvm':
            continue    # its processes are in state.procs
        # .get(): a state.json from an older tools/cloud lacks these
        recs = [('ns', h.get('holder'))] + \
            list(h.get('daemons', {}).items()) + \
            list(h.get('procs', {}).items())
        for n, r in recs:
            if r:
                out.append(('%s-%s' % (n, h['name']), r['pid'],
                            libvirthost._Pid(**r).poll() is None))
    return out


def status(args):
    path = os.path.join(top_dir(), 'state.json')
    if not os.path.exists(path):
        print('no cloud at %s' % top_dir())
        return 1
    dead = 0
    for name, pid, alive in processes(procs.State(path)):
        dead += not alive
        print('%-28s %7d  %s' % (name, pid, 'running' if alive else 'GONE'))
    return 1 if dead else 0


def env(args):
    lay = configs.Layout(top_dir(), int(os.environ.get(
        'TLBB_CLOUD_PORT_BASE', '23400')), VENV)
    sys.stdout.write(openrc(lay))
    return 0


def host_argv(facts, name, argv):
    """The argv that runs ``argv`` on compute host ``name`` (inside its
    namespaces, or in the kvm host's node); ``tlbbalance`` is the cloud's
    own CLI. A host the cloud does not have is an error naming it and
    the ones it has."""
    hosts = {h['name']: h for h in facts['hosts']}
    if name not in hosts:
        raise procs.CloudError('no compute host %r in this cloud (hosts: %s)'
                               % (name, ', '.join(sorted(hosts))))
    if argv and argv[0] == 'tlbbalance':
        # the host's own release's CLI (a host on release N-1 has one)
        argv = hosts[name].get('cli', [
            os.path.join(facts['venv'], 'bin', 'tlbbalance')]) + argv[1:]
    return hosts[name]['exec'] + argv


def host(args):
    """``cloud.py host NAME CMD...``: run CMD on compute host NAME (nova's
    hypervisor host name, ``openstack server show -c
    OS-EXT-SRV-ATTR:host``); its exit status."""
    path = os.path.join(top_dir(), 'cloud.json')
    if not os.path.exists(path):
        print('no cloud at %s' % top_dir(), file=sys.stderr)
        return 1
    with open(path) as f:
        facts = json.load(f)
    argv = args.argv[1:] if args.argv[:1] == ['--'] else args.argv
    if not argv:
        print('cloud: host %s: no command given' % args.name,
              file=sys.stderr)
        return 2
    return subprocess.call(host_argv(facts, args.name, argv))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = p.add_subparsers(dest='cmd', required=True)
    for name, fn in (('up', up), ('down', down), ('status', status),
                     ('env', env)):
        sp = sub.add_parser(name)
        sp.set_defaults(fn=fn)
        if name == 'up':
            sp.add_argument('--release-n1', action='append', metavar='HOST',
                            help='run this fast host on release N-1 '
                            '(tools/releases.py); repeatable')
    h = sub.add_parser('host', help='run a command on a compute host '
                       '(tlbbalance is the cloud\'s own CLI)')
    h.add_argument('name', help='compute host (nova\'s hypervisor host)')
    h.add_argument('argv', nargs=argparse.REMAINDER, metavar='CMD',
                   help='the command and its arguments')
    h.set_defaults(fn=host)
    args = p.parse_args(argv)
    try:
        return args.fn(args)
    except procs.CloudError as exc:
        print('cloud: %s' % exc, file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as exc:
        print('cloud: %s' % exc, file=sys.stderr)
        return 1


if __name__ == '__main__':
    sys.exit(main())
