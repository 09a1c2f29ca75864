# SPDX-License-Identifier: Apache-2.0
"""The tempest plugin's SSH backend against a real OpenSSH sshd on
loopback, and its commands under the sudo rule of docs/tempest.md.

tlbbalance_tempest_plugin.access.SSHAccess (what the plugin's SSHHost is,
minus tempest.conf) connects with paramiko to Debian's sshd, started here
in a private mount namespace (unshare) on 127.0.0.1 and a free port.
That namespace sees its own /etc/passwd, /etc/shadow, /etc/group (the
host's plus a user ``tempest``), /etc/sudoers (the rule from
docs/tempest.md, its hugetlbfs path changed to HUGE) and a tmpfs on
/run (HUGE is in it): the host's own
files and users are untouched, and everything goes when the sshd is
killed. Root, sshd, ssh-keygen, unshare and sudo are needed
(tools/ci/system-packages.txt).
"""

import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from tlbbalance_tempest_plugin import access
from tlbbalance_tempest_plugin import ssh

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SSHD = '/usr/sbin/sshd'
USER = 'tempest'
# sshd answers within a second here; 20 s at load 8
READY_TIMEOUT = 30
DOC_CLI = '/opt/nova/bin/tlbbalance'
DOC_HUGE = '/dev/hugepages/'
# the hugetlbfs mount stand-in, in the namespace's own /run
HUGE = '/run/tlbb-hugepages/'


def keygen(path):
    subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C',
                    os.path.basename(path), '-f', path], check=True)
    with open(path + '.pub') as f:
        return ' '.join(f.read().split()[:2])


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def doc_sudo_rule():
    """The sudo rule block of docs/tempest.md."""
    with open(os.path.join(REPO, 'docs', 'tempest.md')) as f:
        text = f.read()
    m = re.search(r'```text\n(# /etc/sudoers\.d/tlbbalance-tempest.*?)```',
                  text, re.S)
    assert m, 'docs/tempest.md has no sudo rule block'
    return m.group(1)


def free_uid():
    uid = 4242
    while True:
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
        uid += 1


class Sshd:
    """sshd -D in a private mount namespace; stop() kills it by pid."""

    def __init__(self, work, host_key, port, cli):
        self.work = work
        self.port = port
        # readable by the user (sshd reads authorized_keys as the user)
        self.pub = tempfile.mkdtemp(prefix='tlbb-ssh-test-')
        os.chmod(self.pub, 0o755)
        etc = os.path.join(work, 'etc')
        os.makedirs(etc)
        uid = free_uid()
        home = os.path.join(self.pub, 'home')
        os.makedirs(home)
        os.chown(home, uid, uid)
        for name, line in (
                ('passwd', '%s:x:%d:%d::%s:/bin/sh\n' % (USER, uid, uid,
                                                         home)),
                ('group', '%s:x:%d:\n' % (USER, uid)),
                ('shadow', '%s:*:19000:0:99999:7:::\n' % USER)):
            with open('/etc/' + name) as f:
                text = f.read()
            with open(os.path.join(etc, name), 'w') as f:
                f.write(text + line)
        sudoers = os.path.join(etc, 'sudoers')
        with open(sudoers, 'w') as f:
            f.write('Defaults env_reset\n'
                    'Defaults secure_path="/usr/local/sbin:/usr/local/bin:'
                    '/usr/sbin:/usr/bin:/sbin:/bin"\n'
                    'root ALL=(ALL:ALL) ALL\n'
                    + doc_sudo_rule().replace(DOC_CLI, cli).replace(
                        DOC_HUGE, HUGE))
        os.chmod(sudoers, 0o440)
        p = subprocess.run(['visudo', '-c', '-f', sudoers],
                           capture_output=True, text=True)
        assert p.returncode == 0, 'visudo: %s%s' % (p.stdout, p.stderr)
        self.client_key = os.path.join(work, 'id_ed25519')
        keygen(self.client_key)
        shutil.copy(self.client_key + '.pub',
                    os.path.join(self.pub, 'authorized_keys'))
        os.chmod(os.path.join(self.pub, 'authorized_keys'), 0o644)
        cfg = os.path.join(work, 'sshd_config')
        with open(cfg, 'w') as f:
            f.write('\n'.join([
                'ListenAddress 127.0.0.1:%d' % port,
                'HostKey %s' % host_key,
                'AuthorizedKeysFile %s/authorized_keys' % self.pub,
                'PidFile none', 'UsePAM no', 'StrictModes no',
                'PermitRootLogin no', 'PubkeyAuthentication yes',
                'PasswordAuthentication no',
                'KbdInteractiveAuthentication no', 'UseDNS no',
                'MaxStartups 100', 'LoginGraceTime 120', 'LogLevel ERROR',
                '']))
        binds = ''.join('mount --bind %s/%s /etc/%s; ' % (etc, n, n)
                        for n in ('passwd', 'group', 'shadow', 'sudoers'))
        script = ('set -e; mount --make-rprivate /; %s'
                  'mount -t tmpfs tmpfs /run; mkdir -p /run/sshd %s; '
                  'exec %s -D -e -f %s' % (binds, HUGE, SSHD, cfg))
        self.log = open(os.path.join(work, 'sshd.log'), 'w')
        self.proc = subprocess.Popen(['unshare', '-m', 'sh', '-c', script],
                                     stdout=self.log, stderr=self.log)
        end = time.monotonic() + READY_TIMEOUT
        while True:
            assert self.proc.poll() is None, 'sshd died: %s' % self.logtext()
            try:
                socket.create_connection(('127.0.0.1', port), 2).close()
                break
            except OSError:
                assert time.monotonic() < end, \
                    'sshd not listening after %d s: %s' % (
                        READY_TIMEOUT, self.logtext())
                time.sleep(0.1)

    def logtext(self):
        with open(self.log.name) as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()
        shutil.rmtree(self.pub, ignore_errors=True)


@pytest.fixture(scope='module')
def sshd(tmp_path_factory):
    for tool in (SSHD, 'ssh-keygen', 'unshare', 'visudo', 'sudo'):
        assert shutil.which(tool), (
            '%s is missing: install tools/ci/system-packages.txt' % tool)
    assert os.geteuid() == 0, 'root is needed (a private mount namespace)'
    work = str(tmp_path_factory.mktemp('sshd'))
    host_key = os.path.join(work, 'host_key')
    impostor_key = os.path.join(work, 'impostor_key')
    real = keygen(host_key)
    impostor = keygen(impostor_key)
    # the tlbbalance command of this environment (its console script)
    cli = os.path.join(os.path.dirname(sys.executable), 'tlbbalance')
    assert os.access(cli, os.X_OK), '%s is missing: pip install -e .' % cli
    d = Sshd(work, host_key, free_port(), cli)
    d.known = real
    d.impostor = impostor
    d.cli = cli
    yield d
    d.stop()


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty HOME for the client: ~/.ssh/known_hosts is the test's."""
    h = tmp_path / 'home'
    (h / '.ssh').mkdir(parents=True)
    monkeypatch.setenv('HOME', str(h))
    return h


def known(path, sshd, key):
    path.write_text('[127.0.0.1]:%d %s\n' % (sshd.port, key))
    return str(path)


def host(sshd, **kw):
    return access.SSHAccess('cmp-1', '127.0.0.1', USER, port=sshd.port,
                            key_file=sshd.client_key, cli=[sshd.cli], **kw)


def test_known_key_from_user_known_hosts(sshd, home):
    known(home / '.ssh' / 'known_hosts', sshd, sshd.known)
    rc, out, err = host(sshd).run(['id', '-un'], root=False)
    assert (rc, out) == (0, USER + '\n'), err


def test_known_key_from_the_configured_file(sshd, home, tmp_path):
    extra = known(tmp_path / 'kh', sshd, sshd.known)
    rc, out, _ = host(sshd, known_hosts=extra).run(['id', '-un'],
                                                   root=False)
    assert (rc, out) == (0, USER + '\n')
    with pytest.raises(ssh.HostKeyRejected, match='does not exist'):
        host(sshd, known_hosts=str(tmp_path / 'nope')).run(['true'])


def test_impostor_key_refused_naming_the_host(sshd, home, tmp_path):
    """The user's known_hosts has another key for this host: refused
    before any command is sent (AutoAddPolicy used to believe it)."""
    known(home / '.ssh' / 'known_hosts', sshd, sshd.impostor)
    marker = os.path.join(sshd.pub, 'ran')
    with pytest.raises(ssh.HostKeyRejected) as e:
        host(sshd).run(['touch', marker], root=False)
    msg = str(e.value)
    print(msg)
    assert 'compute host cmp-1 ([127.0.0.1]:%d)' % sshd.port in msg
    assert 'is NOT the one recorded' in msg
    assert str(home / '.ssh' / 'known_hosts') in msg
    assert not os.path.exists(marker)


def test_unknown_host_refused(sshd, home):
    with pytest.raises(ssh.HostKeyRejected) as e:
        host(sshd).run(['true'], root=False)
    msg = str(e.value)
    assert 'compute host cmp-1 ([127.0.0.1]:%d) is not in the known ' \
        'hosts' % sshd.port in msg
    assert 'ssh-keyscan -p %d 127.0.0.1' % sshd.port in msg
    # and nothing was written to the user's known_hosts
    assert not (home / '.ssh' / 'known_hosts').exists()


DOMAIN = 'instance-0000002a'
OCCUPY = HUGE + 'tempest-occupy-8700de68-5f03-4b08-add1-b64dbaea62f9'


class Recorder(access.SSHAccess):
    """Records the argv and root flag of each command the plugin's host
    methods send, answering as a host would (nothing is run)."""

    def __init__(self, **kw):
        super().__init__('cmp-1', '127.0.0.1', USER, **kw)
        self.sent = []

    def run(self, argv, timeout=120, root=True, stdin=None):
        self.sent.append((list(argv), root))
        if argv[:1] == ['cat']:
            return 0, 'HugePages_Free: 4\nHugepagesize: 2048 kB\n', ''
        if argv[-2:] == ['--json', '--uri'] or 'status' in argv:
            return 0, '{"host": {"module": {"loaded": 0}}, "vms": []}', ''
        if 'verify' in argv:
            return 0, '{}', ''
        return 0, '', ''


def plugin_commands(cli):
    """Every command the plugin's host methods send, (argv, root)."""
    r = Recorder(cli=[cli])
    r.domain_xml(DOMAIN)
    r.domains()
    r.status()
    r.verify(DOMAIN)
    r.verify(DOMAIN, module=False, min_coverage=99.0)
    r.free_hugepages()
    r.occupy_hugepages(OCCUPY)
    r.release_hugepages(OCCUPY)
    r.read('/sys/kernel/mm/transparent_hugepage/khugepaged/'
           'scan_sleep_millisecs')
    r.write('/sys/kernel/mm/transparent_hugepage/khugepaged/'
            'scan_sleep_millisecs', '100\n')
    r.write('/sys/kernel/debug/tlbbalance/inject', 'vm1 off\n')
    return r.sent


def sudo_allows(sshd, argv):
    """`sudo -n -l ARGV` as the user over SSH: whether the rule allows
    it (nothing is run)."""
    known_file = os.path.join(sshd.work, 'known_hosts')
    with open(known_file, 'w') as f:
        f.write('[127.0.0.1]:%d %s\n' % (sshd.port, sshd.known))
    rc, out, err = host(sshd, known_hosts=known_file).run(
        ['sudo', '-n', '-l'] + argv, root=False)
    assert rc in (0, 1), (argv, rc, out, err)
    return rc == 0


def test_every_plugin_command_is_allowed_by_the_doc_rule(sshd):
    sent = plugin_commands(sshd.cli)
    as_root = [argv for argv, root in sent if root]
    assert len(as_root) == 9, sent
    assert [argv for argv, root in sent if not root] == [
        ['cat', '/proc/meminfo'], ['cat', '/proc/meminfo'],
        ['cat', '/sys/kernel/mm/transparent_hugepage/khugepaged/'
                'scan_sleep_millisecs']]
    for argv in as_root:
        assert sudo_allows(sshd, argv), argv


@pytest.mark.parametrize('argv', [
    ['virsh', '-c', 'qemu:///system', 'destroy', DOMAIN],
    ['virsh', '-c', 'qemu:///system', 'dumpxml', '--security-info',
     DOMAIN],
    ['virsh', '-c', 'qemu+tcp://evil/system', 'dumpxml', DOMAIN],
    ['virsh', '-c', 'qemu:///system', 'dumpxml', DOMAIN, ';', 'sh'],
    ['cli', 'verify', '--json', '--uri', 'qemu:///system', DOMAIN, 'x'],
    ['cli', 'status', '--json', '--uri', 'qemu:///system', '--all'],
    ['cli', 'domain', 'apply', DOMAIN],
    ['fallocate', '-l', '4K', '/etc/tempest-occupy-1'],
    ['fallocate', '-l', '4K', HUGE + '../../etc/passwd'],
    ['rm', '-f', HUGE + 'tempest-occupy-1', '/etc/passwd'],
    ['rm', '-rf', '/'],
    ['tee', '/etc/sudoers'],
    ['tee', '-a', '/sys/kernel/debug/tlbbalance/inject'],
    ['cat', '/etc/shadow'],
    ['sh', '-c', 'id'],
])
def test_neighbours_of_the_plugin_commands_are_refused(sshd, argv):
    argv = [sshd.cli if a == 'cli' else a for a in argv]
    assert not sudo_allows(sshd, argv), argv


def test_allowed_commands_really_run_under_sudo(sshd):
    """Not just listed: the huge-page file commands run as root through
    the rule (on the namespace's tmpfs, HUGE), and a
    command outside it is refused by sudo, not run."""
    known_file = os.path.join(sshd.work, 'known_hosts')
    with open(known_file, 'w') as f:
        f.write('[127.0.0.1]:%d %s\n' % (sshd.port, sshd.known))
    h = host(sshd, known_hosts=known_file)
    h.check(['fallocate', '-l', '8K', OCCUPY])
    out = h.check(['stat', '-c', '%U %s', OCCUPY], root=False)
    assert out.split() == ['root', '8192']
    h.release_hugepages(OCCUPY)
    rc, _, _ = h.run(['test', '-e', OCCUPY], root=False)
    assert rc == 1
    rc, _, err = h.run(['cat', '/etc/shadow'])
    assert rc == 1 and 'sudo: a password is required' in err, err
