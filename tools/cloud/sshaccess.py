# SPDX-License-Identifier: Apache-2.0
"""The fast compute hosts over SSH, as an operator's compute hosts are.

``run_tempest.py`` reruns the host-state tests with ``[tlbbalance]
host_access = ssh`` (the plugin's SSHHost: paramiko, as an operator's
tempest uses) after the local run, so both backends are exercised. Per
fast host, Debian's sshd runs inside that host's mount and UTS namespace
(the ``exec`` prefix of cloud.json, nsenter), listening on a loopback
address of its own (127.1.0.N) on the cloud's ``ssh`` port; a throwaway
ed25519 key made here is the only one it accepts, and its own host key
is the one recorded for it in ``ssh/known_hosts`` (the plugin refuses a
host it does not know: ``[tlbbalance] ssh_known_hosts_file``). A command
over SSH thus runs where the host's libvirtd, hugetlbfs and hook live,
with the same ``virsh -c qemu:///system`` and ``tlbbalance`` an operator
types there.

The sshds are recorded processes of the cloud (``cloud.py down`` stops
them by pid, also after a failure). The kvm host's commands go through its
node's agent, not SSH: its nova-compute service is disabled through the
compute API while the SSH tests run, so their servers land on the fast
hosts.
"""

import os
import socket

import api
import configs
import procs

SSHD = '/usr/sbin/sshd'
# sshd takes TCP connections within a second here; 30 s at load 8.
READY_TIMEOUT = 60
DISABLED_REASON = 'tlbbalance tempest: host-state tests over SSH'


def address(i):
    return configs.host_address(i)


def keys(top):
    """(dir, private key): a host key and a client key made once."""
    d = os.path.join(top, 'ssh')
    os.makedirs(d, exist_ok=True)
    for name in ('host_ed25519', 'id_ed25519'):
        path = os.path.join(d, name)
        if not os.path.exists(path):
            procs.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C',
                       'tlbb-cloud-' + name, '-f', path], 'ssh-keygen')
    with open(os.path.join(d, 'id_ed25519.pub')) as src, \
            open(os.path.join(d, 'authorized_keys'), 'w') as dst:
        dst.write(src.read())
    return d, os.path.join(d, 'id_ed25519')


def known_hosts(d, addrs, port):
    """ssh/known_hosts: the host key (one for every fast host) under each
    sshd's address and port; its path."""
    with open(os.path.join(d, 'host_ed25519.pub')) as f:
        kind, blob = f.read().split()[:2]
    path = os.path.join(d, 'known_hosts')
    with open(path, 'w') as f:
        for addr in sorted(addrs.values()):
            f.write('[%s]:%d %s %s\n' % (addr, port, kind, blob))
    return path


def sshd_config(d, addr, port):
    return '\n'.join([
        'ListenAddress %s:%d' % (addr, port),
        'HostKey %s/host_ed25519' % d,
        'AuthorizedKeysFile %s/authorized_keys' % d,
        'PidFile none', 'UsePAM no', 'StrictModes no',
        'PermitRootLogin prohibit-password', 'PubkeyAuthentication yes',
        'PasswordAuthentication no', 'KbdInteractiveAuthentication no',
        'MaxStartups 100', 'MaxSessions 100', 'UseDNS no',
        'LogLevel ERROR', ''])


def start(top, state, facts, port):
    """An sshd in each fast host; {host name: address}, the key file (the
    known hosts file is beside it: :func:`known_hosts`)."""
    d, key = keys(top)
    addrs = {}
    fast = [h for h in facts['hosts'] if h['kind'] != 'kvm']
    for i, h in enumerate(fast):
        name = 'sshd-' + h['name']
        addr = address(i)
        addrs[h['name']] = addr
        if name in [r['name'] for r in state.procs]:
            continue
        cfg = os.path.join(d, 'sshd-%s.conf' % h['name'])
        with open(cfg, 'w') as f:
            f.write(sshd_config(d, addr, port))
        # privilege separation directory, in the host's private /run
        procs.run(h['exec'] + ['mkdir', '-p', '/run/sshd'],
                  'mkdir /run/sshd in %s' % h['name'])
        # nsenter execs sshd: the recorded pid is sshd's (-D: no fork)
        procs.spawn(state, name, h['exec'] + [SSHD, '-D', '-e', '-f', cfg],
                    os.path.join(facts['logs'], name + '.log'), grace=5)
    for h, addr in addrs.items():
        procs.wait_for('sshd of %s on %s:%d' % (h, addr, port),
                       lambda: _check(state, 'sshd-' + h, addr, port),
                       READY_TIMEOUT, interval=0.5)
    known_hosts(d, addrs, port)
    return addrs, key


def _check(state, name, addr, port):
    procs.check_alive(state, name)
    try:
        socket.create_connection((addr, port), timeout=2).close()
        return True
    except OSError:
        return False


def tlbbalance_options(facts, addrs, key, port):
    """The ``[tlbbalance]`` options of the SSH run: what an operator
    writes for their cloud (docs/tempest.md)."""
    return {
        'host_access': 'ssh', 'ssh_user': 'root', 'ssh_key_file': key,
        'ssh_known_hosts_file': os.path.join(os.path.dirname(key),
                                             'known_hosts'),
        'ssh_port': port, 'ssh_sudo': False,
        'ssh_hosts': ','.join('%s:%s' % kv for kv in sorted(addrs.items())),
        'cli': os.path.join(facts['venv'], 'bin', 'tlbbalance'),
        'libvirt_uri': 'qemu:///system',
        'hugetlbfs_mount': [h['hugetlbfs'] for h in facts['hosts']
                            if h['kind'] != 'kvm'][0],
    }


class OnlyHosts:
    """Disable every nova-compute service but ``names`` through the
    compute API while the block runs (servers then land on those); the
    others are enabled again afterwards."""

    def __init__(self, facts, names):
        self.facts = facts
        self.names = set(names)
        self.disabled = []

    def __enter__(self):
        self.adm = api.Client(
            self.facts['auth_url'],
            password=self.facts['admin']['password']).authenticate()
        for s in self._services():
            if s['host'] not in self.names and s['status'] == 'enabled':
                self._set(s['id'], {'status': 'disabled',
                                    'disabled_reason': DISABLED_REASON})
                self.disabled.append(s['id'])
        return self

    def __exit__(self, *exc):
        for sid in self.disabled:
            self._set(sid, {'status': 'enabled'})

    def _services(self):
        return self.adm.get('compute:/os-services?binary=nova-compute',
                            headers=MICROVERSION)['services']

    def _set(self, sid, body):
        self.adm.put('compute:/os-services/%s' % sid, body,
                     headers=MICROVERSION)


# 2.53: services are addressed by UUID
MICROVERSION = {'OpenStack-API-Version': 'compute 2.53'}
