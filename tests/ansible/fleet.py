# SPDX-License-Identifier: Apache-2.0
"""Compute hosts reached over SSH for the rollout test (docs/ansible.md).

Two kinds of host, the lightest real target for each check:

* **namespace hosts** (h1, h2, h3): each its own network, mount and UTS
  namespace made here, with Debian's sshd started by hand on its own
  address. The controller runs in a namespace of its own (ctl), joined to
  each host by a veth pair; every address (10.251.N.0/24) exists only
  inside these namespaces. /etc is an overlay whose writes land in the
  host's own directory, /run a fresh tmpfs, nova's virtualenv a directory
  of its own. They run the host's kernel, which loads no module: they
  serve the package, hook, nova.conf, provider config, restart and rolling
  checks at native speed.
* **the kernel node** (qnode): a Debian kernel under QEMU
  (tools/node), sshd started in it, its port 22 forwarded to 127.0.0.1 of
  the ctl namespace (QEMU runs there; its user network is restricted: no
  route out). It serves what needs a kernel of its own: DKMS, module
  load and reload, huge page reservation, the module trait.

Keys (client and host) are generated per run. Every process started here
is stopped by its pid in stop(), also after a failure; the namespaces are
deleted.
"""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)),
                                'tools'))

from _repo import REPO  # noqa: E402  (the checkout on sys.path)
from tlbbwait import WaitTimeout, wait_until  # noqa: E402

PLAYBOOK = os.path.join(REPO, 'ansible', 'site.yml')
# where the kernel node reaches the controller's apt archive
# (Fleet.serve_archive): QEMU's user network forwards it to ctl
ARCHIVE_ADDR = '10.0.2.100:80'
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable),
                            'ansible-playbook')
SSHD = '/usr/sbin/sshd'
# root's home on a test host: a fresh, empty one, as on a new compute
# node. This machine's /root/.bashrc (which bash runs for every SSH
# session) starts pyenv: ~10 s per session in the TCG node.
CLEAN_ROOT_HOME = ("mkdir -p /run/root && sed -i "
                   "'s|^root:x:0:0:root:/root:|root:x:0:0:root:/run/root:|'"
                   " /etc/passwd")
# sshd answers within a second at home; a loaded machine gets 30.
SSHD_WAIT = 30
RECAP_RE = re.compile(
    r'^(\S+)\s*: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+'
    r'failed=(\d+)\s+skipped=(\d+)\s+rescued=(\d+)\s+ignored=(\d+)', re.M)


def sh(argv, check=True, **kw):
    p = subprocess.run(argv, capture_output=True, text=True, **kw)
    if check and p.returncode != 0:
        raise RuntimeError('%s failed (rc=%d): %s%s' % (
            ' '.join(map(shlex.quote, argv)), p.returncode, p.stdout,
            p.stderr))
    return p


class Recap:
    """One ansible-playbook run: rc, output, per-host recap and times."""

    def __init__(self, proc, secs, load):
        self.rc = proc.returncode
        self.out = proc.stdout + proc.stderr
        self.secs = secs
        self.load = load
        self.hosts = {}
        for m in RECAP_RE.finditer(self.out):
            self.hosts[m.group(1)] = dict(zip(
                ('ok', 'changed', 'unreachable', 'failed', 'skipped',
                 'rescued', 'ignored'), map(int, m.groups()[1:])))
        self.times = {}
        for m in re.finditer(r'^FLEET-TIME (\S+) ([\d.]+)$', self.out, re.M):
            self.times[m.group(1)] = float(m.group(2))

    def recap_text(self):
        i = self.out.find('PLAY RECAP')
        return self.out[i:].split('\n\n')[0] if i >= 0 else '(no recap)'

    def changed_lines(self):
        return '\n'.join(ln for ln in self.out.splitlines()
                         if ln.startswith(('changed:', 'TASK [')))

    def changed_tasks(self, host):
        """The names of the tasks (and handlers) that reported a change
        on host, in order."""
        out, task = [], None
        for ln in self.out.splitlines():
            m = re.match(r'(?:TASK|RUNNING HANDLER) \[(.*)\]', ln)
            if m:
                task = m.group(1)
            elif re.match(r'changed: \[%s[\]\s]' % re.escape(host), ln):
                out.append(task)
        return out

    def summary(self, name):
        hosts = ', '.join('%s %.1f s' % kv for kv in sorted(
            self.times.items()))
        return ('%s: rc %d in %.1f s (load average %.1f before, %.1f '
                'after); per host: %s\n%s' % (
                    name, self.rc, self.secs, self.load[0], self.load[1],
                    hosts or '-', self.recap_text()))


class NsHost:
    def __init__(self, fleet, index):
        self.fleet = fleet
        self.name = 'h%d' % index
        self.index = index
        self.netns = '%s-%s' % (fleet.tag, self.name)
        self.addr = '10.251.%d.2' % index
        self.dir = os.path.join(fleet.dir, self.name)
        self.venv = os.path.join(self.dir, 'venv')
        self.proc = None

    def create(self):
        f = self.fleet
        for d in ('etc-upper', 'etc-work'):
            os.makedirs(os.path.join(self.dir, d))
        sh(['ip', 'netns', 'add', self.netns])
        f.netns_made.append(self.netns)
        sh(['ip', 'link', 'add', 'v%d' % self.index, 'netns', f.ctl,
            'type', 'veth', 'peer', 'name', 'eth0', 'netns', self.netns])
        for ns, dev, addr in ((f.ctl, 'v%d' % self.index,
                               '10.251.%d.1/24' % self.index),
                              (self.netns, 'eth0', self.addr + '/24')):
            sh(['ip', '-n', ns, 'addr', 'add', addr, 'dev', dev])
            sh(['ip', '-n', ns, 'link', 'set', dev, 'up'])
        sh(['ip', '-n', self.netns, 'link', 'set', 'lo', 'up'])
        # nova's virtualenv stand-in: Debian's python3 with its site
        # packages (python3-libvirt, lxml), the wheel goes in by the role.
        sh(['/usr/bin/python3', '-m', 'venv', '--system-site-packages',
            self.venv])

    def start_sshd(self):
        f = self.fleet
        cfg = os.path.join(self.dir, 'sshd_config')
        with open(cfg, 'w') as fh:
            fh.write(f.sshd_config(self.addr, 22))
        setup = (
            'set -e; hostname %(name)s; '
            'mount -t overlay overlay -o lowerdir=/etc,upperdir=%(up)s,'
            'workdir=%(work)s /etc; '
            'mount -t tmpfs -o mode=0755 tmpfs /run; mkdir -p /run/sshd; '
            '%(home)s; exec %(sshd)s -D -e -f %(cfg)s' % {
                'name': self.name, 'up': os.path.join(self.dir, 'etc-upper'),
                'work': os.path.join(self.dir, 'etc-work'), 'sshd': SSHD,
                'cfg': cfg, 'home': CLEAN_ROOT_HOME})
        log = open(os.path.join(self.dir, 'sshd.log'), 'w')
        # ip netns exec and unshare exec: the pid is sshd's.
        self.proc = subprocess.Popen(
            ['ip', 'netns', 'exec', self.netns, 'unshare', '--mount',
             '--uts', '--propagation', 'private', '/bin/sh', '-c', setup],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        f.procs.append(self.proc)

    def sh(self, cmd, check=True):
        """Run cmd inside this host's namespaces (as its sshd sees)."""
        return sh(['nsenter', '-t', str(self.proc.pid), '-m', '-u', '-n',
                   '/bin/sh', '-c', cmd], check=check)

    def inventory(self):
        return {'ansible_host': self.addr, 'tlbbalance_venv': self.venv}


class Fleet:
    def __init__(self, nhosts=3):
        self.dir = tempfile.mkdtemp(prefix='tlbb-fleet-')
        self.tag = 'tlbbf%d' % os.getpid()
        self.ctl = self.tag + '-ctl'
        self.netns_made = []
        self.procs = []
        self.hosts = [NsHost(self, i) for i in range(1, nhosts + 1)]
        self.node = None
        self.node_port = 2222
        # the apt archive the role's deb mode installs from
        # (serve_archive), on 127.0.0.1 of ctl; the node reaches it as
        # ARCHIVE_ADDR (the node's guestfwd: conftest.py)
        self.archive_port = 8080
        self.key = os.path.join(self.dir, 'ssh', 'id_ed25519')
        self.runs = []
        self.run_names = []
        # the controller's TMPDIR (the role's scratch directory is made
        # in it, per run)
        self.ctl_tmp = os.path.join(self.dir, 'ctl-tmp')

    # -- set-up
    def start_network(self):
        os.makedirs(os.path.join(self.dir, 'ssh'))
        os.makedirs(os.path.join(self.dir, 'cp'))
        sh(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C',
            'tlbb-fleet-controller', '-f', self.key])
        sh(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C',
            'tlbb-fleet-host', '-f', os.path.join(self.dir, 'ssh',
                                                  'host_ed25519')])
        shutil.copy(self.key + '.pub',
                    os.path.join(self.dir, 'ssh', 'authorized_keys'))
        sh(['ip', 'netns', 'add', self.ctl])
        self.netns_made.append(self.ctl)
        sh(['ip', '-n', self.ctl, 'link', 'set', 'lo', 'up'])
        for h in self.hosts:
            h.create()

    def start_hosts(self):
        for h in self.hosts:
            h.start_sshd()
        self.wait_tcp([h.addr for h in self.hosts], 22)

    def sshd_config(self, addr, port):
        ssh = os.path.join(self.dir, 'ssh')
        return '\n'.join([
            'ListenAddress %s' % addr, 'Port %d' % port,
            'HostKey %s/host_ed25519' % ssh,
            'AuthorizedKeysFile %s/authorized_keys' % ssh,
            'PidFile none', 'UsePAM no', 'StrictModes no',
            'PermitRootLogin prohibit-password',
            'PasswordAuthentication no', 'KbdInteractiveAuthentication no',
            'Subsystem sftp internal-sftp', 'MaxStartups 100',
            'MaxSessions 100', 'UseDNS no', 'LogLevel ERROR', ''])

    def ssh_args(self):
        return ('-o UserKnownHostsFile=%s/known_hosts '
                '-o StrictHostKeyChecking=accept-new -o IdentitiesOnly=yes '
                '-o ControlMaster=auto -o ControlPersist=300 '
                '-o ServerAliveInterval=10 -o ServerAliveCountMax=12'
                % os.path.join(self.dir, 'ssh'))

    def wait_tcp(self, addrs, port, deadline_s=SSHD_WAIT):
        """Until each server this fleet started (sshds, the archive's)
        takes a TCP connection on port (from ctl)."""
        code = ('import socket,sys\n'
                'for a in sys.argv[2:]:\n'
                ' socket.create_connection((a, int(sys.argv[1])), 2).close()')
        last = None

        def answers():
            nonlocal last
            last = sh(['ip', 'netns', 'exec', self.ctl, sys.executable, '-c',
                       code, str(port)] + list(addrs), check=False)
            return last.returncode == 0

        def servers_alive():
            for proc in self.procs:
                if proc.poll() is not None:
                    raise RuntimeError(
                        'a server of the fleet (an sshd, the archive\'s) '
                        'exited (rc %s): %s; logs in %s'
                        % (proc.returncode, ' '.join(proc.args)[-120:],
                           self.dir))
        try:
            wait_until('%s:%d answers' % (addrs, port), answers,
                       deadline_s, 0.3, on_wait=servers_alive)
        except WaitTimeout as e:
            raise RuntimeError('%s: %s' % (e, last.stderr))

    def start_node_sshd(self, node):
        """sshd inside the kernel node (node booted with ssh_port and
        netns=self.ctl)."""
        self.node = node
        cfg = self.sshd_config('10.0.2.15', 22)
        node.write_file('/run/sshd_config', cfg)
        node.check('%s && mkdir -p /run/sshd && %s -f /run/sshd_config '
                   '-E /run/sshd.log' % (CLEAN_ROOT_HOME, SSHD))
        self.wait_tcp(['127.0.0.1'], self.node_port, 120)

    def serve_archive(self, path):
        """An HTTP server of the directory path (an apt archive,
        tools/deb/archive.sh) on 127.0.0.1:archive_port of ctl, the
        node's ARCHIVE_ADDR; stopped with the fleet."""
        log = open(os.path.join(self.dir, 'archive-http.log'), 'w')
        proc = subprocess.Popen(
            ['ip', 'netns', 'exec', self.ctl, sys.executable, '-m',
             'http.server', '--bind', '127.0.0.1', '--directory', path,
             str(self.archive_port)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        self.procs.append(proc)
        self.wait_tcp(['127.0.0.1'], self.archive_port)

    # -- ansible
    def write_inventory(self, common, ns_vars, node_vars):
        inv = {'compute': {'vars': dict(common), 'hosts': {}}}
        hosts = inv['compute']['hosts']
        order = [self.hosts[0]] + (['qnode'] if self.node else []) + \
            self.hosts[1:]
        for h in order:
            if h == 'qnode':
                hv = {'ansible_host': '127.0.0.1',
                      'ansible_port': self.node_port}
                hv.update(node_vars)
            else:
                hv = h.inventory()
                hv.update(ns_vars)
            hosts[h if h == 'qnode' else h.name] = hv
        path = os.path.join(self.dir, 'inventory.json')
        with open(path, 'w') as f:
            json.dump(inv, f, indent=1)
        return path

    def playbook(self, inventory, extra=None, timeout=900, limit=None,
                 check=False):
        env = dict(os.environ)
        env.update({
            'ANSIBLE_NOCOLOR': '1', 'ANSIBLE_FORCE_COLOR': '0',
            'ANSIBLE_HOME': os.path.join(self.dir, 'ansible-home'),
            'ANSIBLE_LOCAL_TEMP': os.path.join(self.dir, 'ansible-tmp'),
            'ANSIBLE_SSH_CONTROL_PATH_DIR': os.path.join(self.dir, 'cp'),
            'ANSIBLE_PIPELINING': '1', 'ANSIBLE_TIMEOUT': '60',
            'ANSIBLE_FORKS': '10', 'ANSIBLE_HOST_KEY_CHECKING': '0',
            'ANSIBLE_CALLBACKS_ENABLED': 'fleet_times',
            'ANSIBLE_CALLBACK_PLUGINS': os.path.join(HERE, 'callback_plugins'),
            'TMPDIR': self.ctl_tmp,
        })
        os.makedirs(env['TMPDIR'], exist_ok=True)
        argv = ['ip', 'netns', 'exec', self.ctl, PLAYBOOK_BIN, '-i',
                inventory, PLAYBOOK, '--ssh-common-args', self.ssh_args(),
                '--private-key', self.key]
        if extra:
            argv += ['-e', json.dumps(extra)]
        if limit:
            argv += ['--limit', limit]
        if check:
            argv += ['--check']
        load0 = os.getloadavg()[0]
        t0 = time.monotonic()
        p = subprocess.run(argv, capture_output=True, text=True, env=env,
                           timeout=timeout)
        res = Recap(p, time.monotonic() - t0, (load0, os.getloadavg()[0]))
        self.runs.append(res)
        return res

    # -- tear-down
    def stop(self):
        errors = []
        cp = os.path.join(self.dir, 'cp')
        # ssh control masters (ControlPersist) of this run's controller
        for pid in _pids_with(cp):
            _kill(pid)
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        for ns in reversed(self.netns_made):
            # sessions sshd forked live in the namespace: stop them by pid
            for pid in _netns_pids(ns):
                _kill(pid)
            p = sh(['ip', 'netns', 'del', ns], check=False)
            if p.returncode:
                errors.append(p.stderr.strip())
        return errors

    def cleanup_dir(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def _pids_with(text):
    out = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                if text.encode() in f.read():
                    out.append(int(pid))
        except OSError:
            pass
    return out


def _netns_pids(ns):
    p = sh(['ip', 'netns', 'pids', ns], check=False)
    return [int(x) for x in p.stdout.split() if x.isdigit()]


def _kill(pid):
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
