# SPDX-License-Identifier: Apache-2.0
"""How a test reaches a compute host: one small interface, two backends.

``HostAccess.run(argv)`` runs a command as root on the compute host and
returns ``(rc, stdout, stderr)``; everything else is built on it, with the
operator's own tools: ``virsh`` for the live domain XML and ``tlbbalance
status/verify --json`` for what the host gives each VM (the same commands
an operator types, so a test asserts what an operator would see).

- ``SSHHost``: an operator's real cloud; SSH to the compute host
  (paramiko, tempest's own dependency), ``sudo -n`` when not root.
- ``LocalHost``: the cloud in a box (tools/cloud): each compute host is a
  private mount/UTS namespace on this machine, entered with ``nsenter``.
"""

import json
import shlex
import subprocess

from oslo_log import log as logging
import paramiko
from tempest import config

from nova_tlbbalance import wait

CONF = config.CONF
LOG = logging.getLogger(__name__)


class HostCommandFailed(Exception):
    pass


class HostAccess:
    name = None
    uri = None
    cli = None
    hugetlbfs_mount = None

    def run(self, argv, timeout=120):
        raise NotImplementedError

    def check(self, argv, timeout=120):
        rc, out, err = self.run(argv, timeout)
        if rc:
            raise HostCommandFailed('%s on %s: rc %d\n%s%s'
                                    % (' '.join(argv), self.name, rc, out,
                                       err))
        return out

    # -- what the tests ask ------------------------------------------------

    def domain_xml(self, domain):
        return self.check(['virsh', '-c', self.uri, 'dumpxml', domain])

    def domains(self):
        out = self.check(['virsh', '-c', self.uri, 'list', '--all',
                          '--name'])
        return [d for d in out.split() if d]

    def status(self):
        """``tlbbalance status --json``: {'host': {...}, 'vms': [...]}."""
        return json.loads(self.check(self.cli + ['status', '--json',
                                                 '--uri', self.uri]))

    def vm(self, domain):
        for rep in self.status()['vms']:
            if rep['name'] == domain:
                return rep
        return None

    def verify(self, domain, module=True, min_coverage=None):
        """``tlbbalance verify --json DOMAIN``: the list of reasons it
        fails (empty: OK)."""
        argv = self.cli + ['verify', '--json', '--uri', self.uri]
        if not module:
            argv.append('--no-module')
        if min_coverage is not None:
            argv += ['--min-coverage', str(min_coverage)]
        rc, out, err = self.run(argv + [domain])
        if rc not in (0, 1):
            raise HostCommandFailed('tlbbalance verify %s on %s: rc %d: %s'
                                    % (domain, self.name, rc, err))
        return json.loads(out).get(domain, [])

    def module_loaded(self):
        return bool(self.status()['host']['module']['loaded'])

    def free_hugepages(self):
        """(free, size KiB) of the default huge page size."""
        meminfo = self.check(['cat', '/proc/meminfo'])
        vals = dict(ln.split(':', 1) for ln in meminfo.splitlines()
                    if ':' in ln)
        return (int(vals['HugePages_Free'].split()[0]),
                int(vals['Hugepagesize'].split()[0]))

    def occupy_hugepages(self, path):
        """Take every free default-size huge page with a file on the
        host's hugetlbfs (undo: ``release_hugepages(path)``)."""
        free, kib = self.free_hugepages()
        if free:
            self.check(['fallocate', '-l', '%dK' % (free * kib), path])
        return free

    def release_hugepages(self, path):
        self.run(['rm', '-f', path])


class LocalHost(HostAccess):
    """A compute host of the cloud in a box (tools/cloud)."""

    def __init__(self, facts, host):
        self.name = host['name']
        self.uri = host['uri']
        self.prefix = host['exec']
        self.cli = [facts['venv'] + '/bin/tlbbalance']
        self.hugetlbfs_mount = host['hugetlbfs']
        self.hook_log = host.get('hook_log')

    def run(self, argv, timeout=120):
        p = subprocess.run(self.prefix + list(argv), capture_output=True,
                           text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr

    def hook_records(self, domain):
        """The hook's own JSON lines for a domain (the box logs them)."""
        try:
            with open(self.hook_log) as f:
                recs = [json.loads(ln) for ln in f if ln.strip()]
        except FileNotFoundError:
            return []
        return [r for r in recs if r.get('domain') == domain]


class SSHHost(HostAccess):
    """A compute host of a real cloud, over SSH (paramiko, as tempest's
    own client; that client raises on a non-zero exit and keeps neither
    the status nor stderr, and ``verify`` exits 1 to say FAIL)."""

    def __init__(self, name):
        c = CONF.tlbbalance
        self.name = name
        self.uri = c.libvirt_uri
        self.cli = shlex.split(c.cli)
        self.hugetlbfs_mount = c.hugetlbfs_mount
        self.hook_log = None
        self.addr = c.ssh_hosts.get(name, name)
        self.user = c.ssh_user
        self.port = c.ssh_port
        self.key = c.ssh_key_file or None
        self.sudo = c.ssh_sudo and c.ssh_user != 'root'

    def run(self, argv, timeout=120):
        cmd = ' '.join(shlex.quote(a) for a in argv)
        if self.sudo:
            cmd = 'sudo -n ' + cmd
        client = paramiko.SSHClient()
        client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
        try:
            client.connect(self.addr, port=self.port, username=self.user,
                           key_filename=self.key, timeout=timeout,
                           look_for_keys=self.key is None)
            _, out, err = client.exec_command(cmd, timeout=timeout)
            stdout = out.read().decode(errors='replace')
            stderr = err.read().decode(errors='replace')
            return out.channel.recv_exit_status(), stdout, stderr
        finally:
            client.close()

    def hook_records(self, domain):
        return []


_FACTS = {}


def _facts():
    path = CONF.tlbbalance.local_cloud_facts
    if path not in _FACTS:
        with open(path) as f:
            _FACTS[path] = json.load(f)
    return _FACTS[path]


def for_host(name):
    """The HostAccess of compute host ``name`` (nova's service host)."""
    if CONF.tlbbalance.host_access == 'local':
        for h in _facts()['hosts']:
            if h['name'] == name:
                return LocalHost(_facts(), h)
        raise KeyError('compute host %r is not in %s' % (
            name, CONF.tlbbalance.local_cloud_facts))
    return SSHHost(name)


def wait_until(what, probe, timeout, interval=1.0):
    """Poll probe() until it returns a true value; that value. On timeout
    an AssertionError (a test failure) says what was waited for and the
    last value: nova_tlbbalance.wait.wait_until, which this distribution
    ships beside the plugin."""
    return wait.wait_until(what, probe, timeout, interval,
                           error=AssertionError)
