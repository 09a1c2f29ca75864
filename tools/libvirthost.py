# SPDX-License-Identifier: Apache-2.0
"""A private virtlogd + libvirtd for tests and tools (root, this host).

Used by tests/integration, tools/bench and anything else that needs a real
libvirtd of its own; import it with ``<repo>/tools`` on ``sys.path``.

Isolation (docs/design/platform.md#a-real-cloud-on-this-machine, "libvirt
beside another libvirtd"): a holder
process (``unshare -m --propagation private sleep infinity``) owns a
private mount namespace in which the object's own directories are
bind-mounted over the five places libvirt keeps state::

    <workdir>/run/libvirt        -> /run/libvirt
    <workdir>/var/lib/libvirt    -> /var/lib/libvirt
    <workdir>/var/cache/libvirt  -> /var/cache/libvirt
    <workdir>/var/log/libvirt    -> /var/log/libvirt
    <workdir>/etc/libvirt        -> /etc/libvirt

virtlogd, libvirtd (hence QEMU and the hooks) and :meth:`spawn`-ed
processes run inside it (``nsenter -t <holder> -m``). So a libvirtd
already running on the host does not matter, and the host's files are
never touched:

- the private ``/etc/libvirt`` is a copy of the host's, without its
  ``hooks/`` and ``qemu/`` (domains, networks, autostart links); the
  tlbbalance hook, if asked for, is installed in the PRIVATE
  ``/etc/libvirt/hooks/qemu.d/tlbbalance`` (:attr:`hook_path` is where
  that file is seen from the host), its settings file in
  ``<workdir>/etc/tlbbalance/hook.conf`` (:attr:`hook_conf`);
- a mount point missing on the host (``/run/libvirt`` when no libvirtd
  ever ran) is made inside an overlay of its parent (upper layer in
  ``<workdir>/ns``) that exists in the namespace only;
- the private qemu.conf runs QEMU as root (see :meth:`_make_dirs`);
- ``hugepages=N`` mounts a hugetlbfs at ``/var/lib/libvirt/hugepages``
  inside the namespace (``hugetlbfs_mount`` in the private qemu.conf) and
  adds N pages to the global ``vm.nr_hugepages`` (added, not set: another
  user of the pool, e.g. a cloud on the same machine, keeps its pages);
  :meth:`stop` writes back the exact value found at start. If another
  writer changed the pool in between, it takes back only the pages it
  added and keeps their change (a note on stderr).

Public API:

- ``LibvirtHost(workdir, hook=True, hook_settings=None, hugepages=0,
  python=None, cache_dir=None)``; :meth:`start` / :meth:`stop`, or use it
  as a context manager. :meth:`stop` is safe after a partial start (any
  step failing, a daemon killed by hand) and leaves nothing behind: it
  ends the spawned processes, destroys the domains it defined, stops the
  daemons, then kills every process still in the namespace (an orphaned
  QEMU), then the holder (which takes every private mount with it), and
  restores ``nr_hugepages``. :meth:`start` calls it itself on failure.
- :attr:`uri`: ``qemu+unix:///system?socket=<workdir>/run/libvirt/
  libvirt-sock``, usable from the host's own namespace (virsh,
  libvirt-python, ``tlbbalance --uri``).
- :meth:`path`: where a path of the namespace (``/run/libvirt/qemu``) is
  seen from the host.
- :meth:`ns_prefix`: argv prefix running a command inside the namespace.
- :meth:`spawn` ``(name, argv, log_path, env=None)``: a long-running
  process inside the namespace, in its own session (process group),
  tracked by name; :meth:`stop` ends it (SIGTERM to the group, bounded
  wait, SIGKILL) before the daemons.
- :meth:`virsh`, :meth:`define`, :meth:`start_domain`, :meth:`destroy`,
  :meth:`restart_libvirtd`; :func:`plain_domain` for a tiny TCG domain.
- ``cache_dir``: a directory that persists libvirt's QEMU capability
  cache between runs. Its files are copied into the private
  ``/var/cache/libvirt/qemu/capabilities`` at start and the (possibly
  refreshed) cache copied back at stop; libvirt itself decides whether a
  cached entry is still valid (QEMU binary, libvirtd, kernel). A cold
  probe of QEMU costs ~12-18 s on this machine kind, a warm start a few.
  :data:`CAPS_CACHE` (``$TLBB_LIBVIRT_CAPS_CACHE`` or
  ``~/.cache/nova-tlbbalance/libvirt-capabilities``) is the one the tests
  and benchmarks share.
"""

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

from tlbbwait import WaitTimeout, wait_until

NS_DIRS = ('/run/libvirt', '/var/lib/libvirt', '/var/cache/libvirt',
           '/var/log/libvirt', '/etc/libvirt')
HOOK_IN_NS = '/etc/libvirt/hooks/qemu.d/tlbbalance'
HUGETLBFS_IN_NS = '/var/lib/libvirt/hugepages'
CAPS_IN_NS = '/var/cache/libvirt/qemu/capabilities'
NR_HUGEPAGES = '/proc/sys/vm/nr_hugepages'
# Where tests and benchmarks keep the QEMU capability cache (cache_dir=).
CAPS_CACHE = os.environ.get(
    'TLBB_LIBVIRT_CAPS_CACHE',
    os.path.join(os.environ.get('XDG_CACHE_HOME')
                 or os.path.expanduser('~/.cache'),
                 'nova-tlbbalance', 'libvirt-capabilities'))
HOST_ETC = '/etc/libvirt'
# Bounds on waits (the machine is shared: 2 cores, load up to ~10).
TERM_WAIT = 20.0        # a process given SIGTERM
NS_WAIT = 10.0          # the holder's unshare to take effect
PIDFILE_WAIT = 30.0     # a daemon (-d) to write its pid file
PROBE_TIMEOUT = 180     # first virsh call: libvirtd probes QEMU


def _alive(pid):
    """True while ``pid`` runs (a zombie counts as gone)."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(') ', 1)[1][0] != 'Z'
    except (OSError, IndexError):
        return False


def _start_time(pid):
    """The kernel's start time of ``pid`` (clock ticks), None if gone."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            return int(f.read().rsplit(')', 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


class _Pid:
    """A process known by pid and start time only (from a saved state):
    the part of subprocess.Popen that stop() uses. A pid whose start time
    changed is another process now and counts as gone."""

    def __init__(self, pid, start):
        self.pid = pid
        self.start = start

    def poll(self):
        alive = _alive(self.pid) and _start_time(self.pid) == self.start
        return None if alive else 0

    def wait(self, timeout):
        if _wait_gone([self.pid], timeout) and self.poll() is None:
            raise subprocess.TimeoutExpired('pid %d' % self.pid, timeout)
        return 0


def _wait_gone(pids, timeout):
    """The pids still alive after waiting up to timeout s for all to go."""
    with contextlib.suppress(WaitTimeout):
        wait_until('pids %s gone' % pids,
                   lambda: not any(_alive(p) for p in pids), timeout, 0.05)
    return [p for p in pids if _alive(p)]


def _vq(word):
    """``word`` as one argument in a virsh command string (backslash
    before every character but letters and digits)."""
    return ''.join(c if c.isalnum() else '\\' + c for c in word)


def _mnt_ns(pid):
    try:
        return os.readlink('/proc/%s/ns/mnt' % pid)
    except OSError:
        return None


def _sock_answers(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


def _read_pidfile(path, timeout=PIDFILE_WAIT):
    def pid():
        with open(path) as f:
            return int(f.read())
    return wait_until('%s written (a pid in it)' % path, pid, timeout, 0.05,
                      retry_on=(OSError, ValueError), error=RuntimeError)


def _conf_value(v):
    """A value in libvirt's configuration syntax (qemu.conf)."""
    if isinstance(v, bool):
        return '1' if v else '0'
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str) and '"' not in v and '\n' not in v:
        return '"%s"' % v
    raise ValueError('qemu.conf value %r: an int, a bool or a string '
                     'without quotes' % (v,))


class LibvirtHost:
    """virtlogd + libvirtd in a private mount namespace (see module doc)."""

    def __init__(self, workdir, hook=True, hook_settings=None,
                 hugepages=0, python=None, cache_dir=None, hostname=None,
                 host_uuid=None, qemu_conf=None, hook_tree=None):
        self.workdir = os.path.abspath(workdir)
        self.hostname = hostname    # set: a UTS namespace with this name
        # libvirtd.conf host_uuid: libvirt refuses to migrate to a host
        # with its own UUID (by default the machine's SMBIOS one, the
        # same for every LibvirtHost on this machine)
        self.host_uuid = host_uuid
        self.qemu_conf = dict(qemu_conf or {})  # more qemu.conf settings
        self.hook = hook
        self.hook_settings = dict(hook_settings or {})
        # another release's tree (tools/releases.py): its installer
        # installs its hook, with the tree on the hook's path
        self.hook_tree = hook_tree
        self.hugepages = hugepages
        self.python = python or sys.executable
        self.cache_dir = cache_dir
        self.sock = self.path('/run/libvirt/libvirt-sock')
        self.uri = 'qemu+unix:///system?socket=%s' % self.sock
        self.hook_path = self.path(HOOK_IN_NS)
        # the hook's settings file, in the workdir (the host's
        # /etc/tlbbalance/hook.conf is never touched)
        self.hook_conf = self.path('/etc/tlbbalance/hook.conf')
        self.holder = None          # subprocess.Popen of the holder
        self.ns = None              # 'mnt:[inode]' of the namespace
        self.pids = {}              # daemon name -> pid
        self.procs = {}             # spawn() name -> subprocess.Popen
        self.defined = []
        self._mount_sig = {}        # see _record_mounts()
        self.term_wait = TERM_WAIT  # bound on each SIGTERM/SIGKILL wait
        self._old_nr = None
        self._set_nr = None
        self.start_seconds = None

    def path(self, ns_path):
        """Where ``ns_path`` (under one of NS_DIRS) is seen from the
        host."""
        return self.workdir + ns_path

    def ns_prefix(self):
        """argv prefix running a command inside the namespace."""
        if self.holder is None:
            raise RuntimeError('namespace not started')
        return ['nsenter', '-t', str(self.holder.pid), '-m'] + (
            ['-u'] if self.hostname else []) + ['--']

    def _ns_run(self, argv, **kw):
        kw.setdefault('check', True)
        return subprocess.run(self.ns_prefix() + argv, **kw)

    # -- start ---------------------------------------------------------------

    def start(self):
        if os.geteuid() != 0:
            raise RuntimeError('a real libvirtd needs root')
        try:
            t0 = time.monotonic()
            self._make_dirs()
            self._start_namespace()
            if self.hugepages:
                self._setup_hugepages()
            if self.hook and self.hook_tree:
                self._install_hook_of(self.hook_tree)
            elif self.hook:
                from nova_tlbbalance.hook import install
                install.install(self.hook_path, self.python,
                                self.hook_settings, conf=self.hook_conf)
            self._seed_caps()
            self._start_daemon('virtlogd')
            self._start_daemon('libvirtd')
            # the first call waits for the QEMU capability probe
            self.virsh('version', timeout=PROBE_TIMEOUT)
            self.start_seconds = time.monotonic() - t0
        except BaseException:
            self.stop()
            raise
        return self

    def _install_hook_of(self, tree):
        """The hook of the release in ``tree``, installed by that
        release's own installer (in a process of its own: two releases
        cannot share one ``nova_tlbbalance`` in one interpreter)."""
        code = ('import json, sys\n'
                'sys.path.insert(0, %r)\n'
                'import nova_tlbbalance\n'
                'assert nova_tlbbalance.__file__.startswith(%r), '
                'nova_tlbbalance.__file__\n'
                'from nova_tlbbalance.hook import install\n'
                'install.install(%r, %r, json.loads(sys.argv[1]), conf=%r)\n'
                % (tree, tree, self.hook_path, self.python, self.hook_conf))
        p = subprocess.run([self.python, '-I', '-c', code,
                            json.dumps(self.hook_settings)],
                           capture_output=True, text=True, timeout=120)
        if p.returncode:
            raise RuntimeError('installing the hook of %s: %s'
                               % (tree, p.stderr.strip()))

    def _make_dirs(self):
        for d in NS_DIRS:
            if d != HOST_ETC:
                os.makedirs(self.path(d), exist_ok=True)
        etc = self.path(HOST_ETC)
        if not os.path.isdir(etc):
            # the host's configuration, without its hooks and its
            # domains/networks (qemu/): this libvirtd starts empty
            shutil.copytree(HOST_ETC, etc, symlinks=True,
                            ignore=lambda d, names: [
                                n for n in names if d == HOST_ETC and
                                n in ('hooks', 'qemu')])
        os.makedirs(os.path.dirname(self.hook_path), exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.hook_path)       # from an earlier run
        conf = os.path.join(etc, 'qemu.conf')
        with open(conf) as f:
            lines = [ln for ln in f if not ln.lstrip().startswith(
                ('hugetlbfs_mount', 'user', 'group') +
                tuple(self.qemu_conf))]
        # QEMU as root: /dev/kvm here is root-only (PVM,
        # docs/design/platform.md#virtualization), so
        # for the default user libvirt finds KVM "not available now" while
        # its probe (as root) found it, drops the cached capabilities and
        # probes again at every domain start (~40 s each).
        lines.append('\n# LibvirtHost: QEMU runs as root\n'
                     'user = "root"\ngroup = "root"\n')
        if self.hugepages:
            lines.append('\n# LibvirtHost: private hugetlbfs\n'
                         'hugetlbfs_mount = "%s"\n' % HUGETLBFS_IN_NS)
        if self.qemu_conf:
            lines.append('\n# LibvirtHost: qemu_conf=\n' + ''.join(
                '%s = %s\n' % (k, _conf_value(v))
                for k, v in sorted(self.qemu_conf.items())))
        with open(conf, 'w') as f:
            f.writelines(lines)
        conf = os.path.join(etc, 'libvirtd.conf')
        with open(conf) as f:
            lines = [ln for ln in f
                     if not ln.lstrip().startswith('host_uuid')]
        if self.host_uuid:
            lines.append('\n# LibvirtHost: a host UUID of its own\n'
                         'host_uuid = "%s"\n' % self.host_uuid)
        with open(conf, 'w') as f:
            f.writelines(lines)

    def _start_namespace(self):
        self.holder = subprocess.Popen(
            ['unshare', '-m'] + (['-u'] if self.hostname else []) +
            ['--propagation', 'private', '--', 'sleep', 'infinity'],
            start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        own = _mnt_ns('self')

        def holder_alive():
            if self.holder.poll() is not None:
                raise RuntimeError('unshare -m exited (rc %s) before giving a '
                                   'private mount namespace'
                                   % self.holder.poll())

        def private_ns():
            ns = _mnt_ns(self.holder.pid)
            return ns if ns and ns != own else None
        self.ns = wait_until('unshare -m gives a private mount namespace',
                             private_ns, NS_WAIT, 0.02, on_wait=holder_alive,
                             error=RuntimeError)
        if self.hostname:
            # what libvirt reports as its host name (nova's hypervisor
            # name): two such hosts on one machine are two compute nodes
            self._ns_run(['hostname', self.hostname])
        overlaid = set()
        for d in NS_DIRS:
            parent = os.path.dirname(d)
            if not os.path.isdir(d) and parent not in overlaid:
                # no mount point on the host: make it in an overlay of
                # the parent that only this namespace sees
                up = os.path.join(self.workdir, 'ns', parent.strip('/'))
                os.makedirs(up + '/upper', exist_ok=True)
                os.makedirs(up + '/work', exist_ok=True)
                self._ns_run(['mount', '-t', 'overlay', 'overlay', '-o',
                              'lowerdir=%s,upperdir=%s/upper,workdir=%s/work'
                              % (parent, up, up), parent])
                overlaid.add(parent)
            self._ns_run(['mkdir', '-p', d])
            self._ns_run(['mount', '--bind', self.path(d), d])
        self._record_mounts()

    def _setup_hugepages(self):
        self._ns_run(['mkdir', '-p', HUGETLBFS_IN_NS])
        self._ns_run(['mount', '-t', 'hugetlbfs', 'hugetlbfs',
                      HUGETLBFS_IN_NS])
        with open(NR_HUGEPAGES) as f:
            self._old_nr = int(f.read())
        with open(NR_HUGEPAGES, 'w') as f:
            f.write(str(self._old_nr + self.hugepages))
        with open(NR_HUGEPAGES) as f:
            self._set_nr = int(f.read())    # the kernel may give fewer

    def _seed_caps(self):
        if not self.cache_dir or not os.path.isdir(self.cache_dir):
            return
        dst = self.path(CAPS_IN_NS)
        os.makedirs(dst, exist_ok=True)
        for n in os.listdir(self.cache_dir):
            if n.endswith('.xml'):
                shutil.copy2(os.path.join(self.cache_dir, n), dst)

    def _save_caps(self):
        src = self.path(CAPS_IN_NS)
        if not self.cache_dir or not os.path.isdir(src):
            return
        files = [n for n in os.listdir(src) if n.endswith('.xml')]
        if not files:
            return
        os.makedirs(self.cache_dir, exist_ok=True)
        for n in files:
            tmp = os.path.join(self.cache_dir, '.%s.tmp' % n)
            shutil.copy2(os.path.join(src, n), tmp)
            os.replace(tmp, os.path.join(self.cache_dir, n))

    def _start_daemon(self, name):
        pidfile = os.path.join(self.workdir, name + '.pid')
        with contextlib.suppress(FileNotFoundError):
            os.unlink(pidfile)
        self._ns_run([name, '-d', '-p', pidfile],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        self.pids[name] = _read_pidfile(pidfile)

    def restart_libvirtd(self):
        """Stop and start libvirtd only (running domains stay up); it
        reconnects to them and runs the hook's `reconnect` phase."""
        pid = self.pids.pop('libvirtd')
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
        if _wait_gone([pid], self.term_wait):
            raise RuntimeError('libvirtd %d ignored SIGTERM for %.0f s'
                               % (pid, self.term_wait))
        self._start_daemon('libvirtd')
        self.virsh('version', timeout=PROBE_TIMEOUT)

    # -- processes inside ----------------------------------------------------

    def spawn(self, name, argv, log_path, env=None):
        """Start ``argv`` inside the namespace, in its own session, output
        to ``log_path``; returns its Popen (stop() ends it)."""
        if name in self.procs and self.procs[name].poll() is None:
            raise RuntimeError('%s already running' % name)
        with open(log_path, 'ab') as log:
            p = subprocess.Popen(self.ns_prefix() + list(argv),
                                 stdin=subprocess.DEVNULL, stdout=log,
                                 stderr=subprocess.STDOUT, env=env,
                                 start_new_session=True)
        self.procs[name] = p
        return p

    def _end_group(self, p):
        if p.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(self.term_wait)
            except subprocess.TimeoutExpired:
                pass
        # the rest of its group too (children it left behind); never the
        # group of another process that has the pid of a saved one now
        if not (isinstance(p, _Pid) and _alive(p.pid) and
                p.poll() is not None):
            with contextlib.suppress(OSError):
                os.killpg(p.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.wait(self.term_wait)

    # -- saved state ---------------------------------------------------------

    def state(self):
        """What stop() needs, as JSON-able data: a process that did not
        start this host (tools/cloud's ``down``) stops it with
        ``LibvirtHost.from_state(d).stop()``, by pid."""
        def rec(pid):
            return {'pid': pid, 'start': _start_time(pid)}
        return {
            'workdir': self.workdir, 'hostname': self.hostname,
            'cache_dir': self.cache_dir, 'ns': self.ns,
            'mount_sig': self._mount_sig, 'defined': list(self.defined),
            'holder': rec(self.holder.pid) if self.holder else None,
            'daemons': {n: rec(p) for n, p in self.pids.items()},
            'procs': {n: rec(p.pid) for n, p in self.procs.items()},
            'old_nr': self._old_nr, 'set_nr': self._set_nr,
        }

    @classmethod
    def from_state(cls, d):
        self = cls(d['workdir'], hook=False, cache_dir=d['cache_dir'],
                   hostname=d['hostname'])
        self.ns = d['ns']
        self._mount_sig = d['mount_sig']
        self.defined = list(d['defined'])
        if d['holder']:
            self.holder = _Pid(**d['holder'])
        self.pids = {n: r['pid'] for n, r in d['daemons'].items()
                     if _Pid(**r).poll() is None}
        self.procs = {n: _Pid(**r) for n, r in d['procs'].items()}
        self._old_nr, self._set_nr = d['old_nr'], d['set_nr']
        return self

    # -- stop ----------------------------------------------------------------

    def in_namespace(self):
        """pids of every process in the namespace, the holder included,
        and in namespaces made from it: libvirt starts each QEMU in a
        mount namespace of its own (qemu.conf ``namespaces``), a copy of
        ours, which still holds our bind mounts."""
        if self.ns is None:
            return []
        out = []
        for d in os.listdir('/proc'):
            if not d.isdigit():
                continue
            ns = _mnt_ns(d)
            if ns == self.ns or (ns and ns != _mnt_ns('self') and
                                 self._has_our_mounts(d)):
                out.append(int(d))
        return out

    def _has_our_mounts(self, pid):
        try:
            with open('/proc/%s/mountinfo' % pid) as f:
                info = f.read()
        except OSError:
            return False
        return all(self._mount_sig[d] in info for d in self._mount_sig)

    def _record_mounts(self):
        """' <dev> <root> <mount point> ' of each bind mount, as
        /proc/<pid>/mountinfo shows them in the namespace."""
        with open('/proc/%d/mountinfo' % self.holder.pid) as f:
            for ln in f:
                fields = ln.split()
                if fields[4] in NS_DIRS:
                    self._mount_sig[fields[4]] = ' %s %s %s ' % tuple(
                        fields[2:5])

    def stop(self):
        """Idempotent; each step runs even if an earlier one failed. The
        first error is raised at the end."""
        errors = []

        def step(fn, *a, **kw):
            try:
                fn(*a, **kw)
            except Exception as exc:        # noqa: BLE001 keep cleaning
                errors.append(exc)

        for name in list(self.procs):
            step(self._end_group, self.procs.pop(name))
        if self.defined and self.pids.get('libvirtd') and \
                _alive(self.pids['libvirtd']):
            # one virsh process for all: each connection costs ~0.5 s here
            step(self.virsh, ' ; '.join('destroy %s ; undefine %s'
                                        % (_vq(n), _vq(n))
                                        for n in self.defined),
                 check=False, timeout=600)
        self.defined = []
        for name in ('libvirtd', 'virtlogd'):
            pid = self.pids.pop(name, None)
            if pid is not None:
                step(self._term, [pid])
        step(self._term, [p for p in self.in_namespace()
                          if self.holder is None or p != self.holder.pid])
        if self.holder is not None:
            step(self._end_group, self.holder)
            if self.holder.poll() is not None:
                # the namespace, and every mount in it, is gone
                self.holder = None
                self.ns = None
        step(self._save_caps)
        if self._old_nr is not None:
            step(self._restore_nr)
        if errors:
            raise errors[0]

    def _term(self, pids):
        for p in pids:
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGTERM)
        left = _wait_gone(pids, self.term_wait)
        for p in left:
            with contextlib.suppress(OSError):
                os.kill(p, signal.SIGKILL)
        left = _wait_gone(left, self.term_wait)
        if left:
            raise RuntimeError('processes %s survived SIGKILL' % left)

    def _restore_nr(self):
        with open(NR_HUGEPAGES) as f:
            now = int(f.read())
        want = self._old_nr
        if self._set_nr is None:
            self._old_nr = None     # the write at start failed: no change
            return
        if now != self._set_nr:
            # another writer (a cloud, another test) changed the global
            # pool since: take back only what we added, keep their change
            want = max(0, now - (self._set_nr - self._old_nr))
            sys.stderr.write('libvirthost: vm.nr_hugepages is %d, not the '
                             '%d set at start (%d before): writing %d\n'
                             % (now, self._set_nr, self._old_nr, want))
        with open(NR_HUGEPAGES, 'w') as f:
            f.write(str(want))
        with open(NR_HUGEPAGES) as f:
            now = int(f.read())
        self._old_nr = self._set_nr = None
        if now != want:
            raise RuntimeError('vm.nr_hugepages is %d, could not restore %d'
                               % (now, want))

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- domains -------------------------------------------------------------

    def virsh(self, *args, check=True, timeout=60):
        """One virsh process (host side, through :attr:`uri`); a single
        argument may hold several commands separated by ' ; '."""
        p = subprocess.run(['virsh', '-q', '-c', self.uri] + list(args),
                           capture_output=True, text=True, timeout=timeout)
        if check and p.returncode:
            raise RuntimeError('virsh %s failed (%d): %s'
                               % (' '.join(args), p.returncode,
                                  p.stderr.strip()))
        return p

    def define(self, xml, name, start_paused=False):
        path = os.path.join(self.workdir, 'domain-%d.xml' % len(self.defined))
        with open(path, 'w') as f:
            f.write(xml)
        cmd = 'define %s' % _vq(path)
        if start_paused:
            cmd += ' ; start --paused %s' % _vq(name)
        self.defined.append(name)
        self.virsh(cmd)

    def start_domain(self, name, check=True):
        t0 = time.monotonic()
        p = self.virsh('start', name, check=check)
        return time.monotonic() - t0, p

    def destroy(self, name):
        self.virsh('destroy', name, check=False)


def plain_domain(name, memory_mib=256, vcpus=2, pins=None, cells=None,
                 machine='pc'):
    """A tiny TCG domain: no disk, nothing bootable (SeaBIOS keeps retrying
    while QEMU holds the guest RAM). ``pins``: vcpu -> cpuset string;
    ``cells``: [MiB per guest NUMA cell]."""
    pin = ''.join("<vcpupin vcpu='%d' cpuset='%s'/>" % (v, c)
                  for v, c in sorted((pins or {}).items()))
    numa = ''
    if cells:
        per = max(1, vcpus // len(cells))
        numa = '<cpu><numa>%s</numa></cpu>' % ''.join(
            "<cell id='%d' cpus='%d-%d' memory='%d' unit='MiB'/>"
            % (i, i * per, min(vcpus, (i + 1) * per) - 1, m)
            for i, m in enumerate(cells))
    return ("""<domain type='qemu'>
  <name>%s</name>
  <memory unit='MiB'>%d</memory>
  <vcpu placement='static'>%d</vcpu>
  %s
  %s
  <os><type arch='x86_64' machine='%s'>hvm</type><boot dev='network'/></os>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
    <console type='pty'/>
  </devices>
</domain>
""" % (name, sum(cells) if cells else memory_mib, vcpus,
       '<cputune>%s</cputune>' % pin if pin else '', numa, machine))
