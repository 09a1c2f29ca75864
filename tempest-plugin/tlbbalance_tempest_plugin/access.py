# SPDX-License-Identifier: Apache-2.0
"""The host side of the tempest plugin, without tempest: what a test asks
a compute host (:class:`HostAccess`) and the two ways to reach it.
:mod:`tlbbalance_tempest_plugin.hosts` builds them from tempest.conf;
this module imports no tempest, so the SSH backend's host key checks
and its commands under the documented sudo rule are tested on their own
(tests/unit/test_tempest_ssh.py).

Commands that need root (``virsh`` on ``qemu:///system``, ``tlbbalance``,
the huge-page file and the sysfs writes) are run with ``root=True``: over
SSH as a non-root user they go through ``sudo -n``, and each is one of
the argument patterns the sudo rule of docs/tempest.md allows (nothing
goes through a shell). Reading ``/proc/meminfo`` and sysfs needs no
root and no sudo.
"""

import json
import os
import shlex
import subprocess

from tlbbalance_tempest_plugin import ssh


class HostCommandFailed(Exception):
    pass


class HostAccess:
    name = None
    uri = None
    cli = None
    hugetlbfs_mount = None

    def run(self, argv, timeout=120, root=True):
        """(rc, stdout, stderr) of argv on the host; root: the command
        needs root (sudo -n over SSH as a non-root user)."""
        raise NotImplementedError

    def write(self, path, text, check=True):
        """Write text to a sysfs/debugfs file on the host, as root; a
        failure raises HostCommandFailed unless check is false."""
        raise NotImplementedError

    def check(self, argv, timeout=120, root=True):
        rc, out, err = self.run(argv, timeout, root)
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
        meminfo = self.check(['cat', '/proc/meminfo'], root=False)
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

    def read(self, path):
        """A world-readable file on the host (sysfs, /proc): no root."""
        return self.check(['cat', path], root=False)

    def libvirt_run_files(self, domain):
        """libvirt's files of a running domain in its run directory
        (``<domain>.xml``, ``.pid``, the monitor's socket directory...):
        none once the domain is gone from this host."""
        out = self.check(['ls', '-A', '/run/libvirt/qemu'])
        return sorted(n for n in out.split()
                      if n.startswith(domain + '.') or n.endswith(
                          '-' + domain))

    def hook_state_files(self, domain):
        """The hook's per-domain files in its state_dir (the lock of a
        background phase): none once the domain left. None: the
        state_dir is not known over this access."""
        return None


class LocalHost(HostAccess):
    """A compute host of the cloud in a box (tools/cloud)."""

    def __init__(self, facts, host):
        self.name = host['name']
        self.uri = host['uri']
        self.prefix = host['exec']
        # a host on another release has that release's CLI
        self.cli = host.get('cli') or [facts['venv'] + '/bin/tlbbalance']
        self.release = host.get('release')      # None: this checkout
        self.compute_log = host.get('compute_log')
        self.hugetlbfs_mount = host['hugetlbfs']
        self.hook_log = host.get('hook_log')
        self.hook_state = host.get('hook_state')

    def hook_state_files(self, domain):
        if not self.hook_state:
            return None
        from nova_tlbbalance.hook import detach
        path = detach.lock_path(self.hook_state, domain)
        return [path] if os.path.exists(path) else []

    def run(self, argv, timeout=120, root=True):
        # the box's hosts are entered as root (no sudo there)
        p = subprocess.run(self.prefix + list(argv), capture_output=True,
                           text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr

    def write(self, path, text, check=True):
        # the kvm host's agent takes an argv and no stdin: a fixed
        # script, text and path as its arguments
        argv = ['sh', '-c', 'printf %s "$1" > "$2"', 'sh', text, path]
        if check:
            self.check(argv)
        else:
            self.run(argv)

    def hook_records(self, domain):
        """The hook's own JSON lines for a domain (the box logs them)."""
        try:
            with open(self.hook_log) as f:
                recs = [json.loads(ln) for ln in f if ln.strip()]
        except FileNotFoundError:
            return []
        return [r for r in recs if r.get('domain') == domain]


class SSHAccess(HostAccess):
    """A compute host of a real cloud, over SSH (paramiko, as tempest's
    own client; that client raises on a non-zero exit and keeps neither
    the status nor stderr, and ``verify`` exits 1 to say FAIL).

    The host key must be known (:mod:`tlbbalance_tempest_plugin.ssh`:
    the system's and the user's known hosts and ``known_hosts``, else
    :class:`ssh.HostKeyRejected` naming the host). As a user other than
    root with ``sudo`` true, the commands that need root go through
    ``sudo -n``."""

    def __init__(self, name, addr, user, port=22, key_file=None,
                 known_hosts=None, sudo=True, uri='qemu:///system',
                 cli=('tlbbalance',), hugetlbfs_mount='/dev/hugepages'):
        self.name = name
        self.addr = addr
        self.user = user
        self.port = port
        self.key = key_file or None
        self.known_hosts = known_hosts or None
        self.sudo = sudo and user != 'root'
        self.uri = uri
        self.cli = list(cli)
        self.hugetlbfs_mount = hugetlbfs_mount
        self.hook_log = None

    def command(self, argv, root=True):
        """The command line sent: each argument quoted, ``sudo -n``
        first when it needs root and the user is not root."""
        cmd = ' '.join(shlex.quote(a) for a in argv)
        return 'sudo -n ' + cmd if root and self.sudo else cmd

    def run(self, argv, timeout=120, root=True, stdin=None):
        return ssh.run(self.name, self.addr, self.port, self.user,
                       self.command(argv, root), key_file=self.key,
                       known_hosts=self.known_hosts, timeout=timeout,
                       stdin=stdin)

    def write(self, path, text, check=True):
        # tee, stdout thrown away: no shell on the host (the sudo rule
        # allows tee on the two files the tests write)
        rc, _, err = self.run(['tee', path], stdin=text)
        if rc and check:
            raise HostCommandFailed('writing %s on %s: rc %d: %s'
                                    % (path, self.name, rc, err))

    def hook_records(self, domain):
        return []
