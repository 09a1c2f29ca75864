"""A compute host of the cloud: libvirtd + nova-compute in a private
mount and UTS namespace on this machine.

platform.md ("libvirt beside another libvirtd"): a holder process made by
``unshare -m -u --propagation private`` keeps the namespaces; the host's
own directories are covered by the cloud's inside it (``/run``,
``/var/lib/libvirt``, ``/var/cache/libvirt``, ``/var/log/libvirt``,
``/etc/libvirt``), so a libvirtd already running on this machine is never
seen nor touched, and the hook is installed into the private
``/etc/libvirt``. The UTS namespace gives each host its own hostname,
which is what libvirt reports and nova names the hypervisor by: two such
hosts on one machine are two compute nodes. virtlogd, libvirtd and
nova-compute are entered with ``nsenter``; when the last of them exits the
namespace and its mounts are gone.
"""

import glob
import os
import shutil
import subprocess
import time

import configs
import procs

# /run as a whole: /run/libvirt does not exist on a machine where libvirtd
# never ran, and making it there would change this machine.
COVERED = ('/run', '/var/lib/libvirt', '/var/cache/libvirt',
           '/var/log/libvirt', '/etc/libvirt')
CAPS_CACHE = 'qemu/capabilities'


def _ns_inode(pid):
    return os.stat('/proc/%d/ns/mnt' % pid).st_ino


class ComputeHost:

    def __init__(self, lay, state, name, caps_cache=None):
        self.lay = lay
        self.state = state
        self.name = name
        self.top = lay.path('hosts', name)
        self.caps_cache = caps_cache

    # -- paths ------------------------------------------------------------

    def own(self, covered):
        return os.path.join(self.top, covered.strip('/').replace('/', '-'))

    @property
    def socket(self):
        return os.path.join(self.own('/run'), 'libvirt', 'libvirt-sock')

    @property
    def uri(self):
        return 'qemu+unix:///system?socket=' + self.socket

    @property
    def hook_log(self):
        return os.path.join(self.top, 'hook.jsonl')

    @property
    def conf(self):
        return self.lay.path('etc', 'nova', 'compute-%s.conf' % self.name)

    def facts(self):
        """What a client needs to reach this host (cloud.json)."""
        return {'name': self.name, 'kind': 'fast', 'uri': self.uri,
                'exec': self.ns(), 'hook_log': self.hook_log,
                'hugetlbfs': os.path.join(self.top, 'hugepages')}

    def ns(self):
        holder = self.state.proc('ns-' + self.name)['pid']
        return ['nsenter', '-t', str(holder), '-m', '-u', '--']

    # -- start ------------------------------------------------------------

    def prepare_etc(self):
        etc = self.own('/etc/libvirt')
        shutil.copytree('/etc/libvirt', etc, symlinks=True, dirs_exist_ok=True)
        # No network of libvirt's own (default network = a bridge with a
        # private-range address on this machine): servers boot with none.
        for p in glob.glob(os.path.join(etc, 'qemu', 'networks',
                                        'autostart', '*')):
            os.unlink(p)
        hooks = os.path.join(etc, 'hooks')
        shutil.rmtree(hooks, ignore_errors=True)
        os.makedirs(os.path.join(hooks, 'qemu.d'))
        hp = os.path.join(self.top, 'hugepages')
        os.makedirs(hp, exist_ok=True)
        with open(os.path.join(etc, 'qemu.conf'), 'a') as f:
            f.write('\n# tools/cloud: this host only\n'
                    'user = "root"\ngroup = "root"\n'
                    'hugetlbfs_mount = "%s"\n' % hp)
        return hp

    def install_hook(self):
        procs.run([self.lay.bin('python'), '-m',
                   'nova_tlbbalance.hook.install', '--dest',
                   os.path.join(self.own('/etc/libvirt'), 'hooks',
                                'qemu.d', 'tlbbalance'),
                   '--log-file', self.hook_log, '--syslog', '',
                   '--state-dir', os.path.join(self.top, 'hook-state')],
                  'install the libvirt hook on %s' % self.name,
                  self.lay.log('hosts-setup'))

    def enter_namespace(self):
        for d in COVERED:
            os.makedirs(self.own(d), exist_ok=True)
        hp = self.prepare_etc()
        if self.caps_cache and os.path.isdir(self.caps_cache):
            shutil.copytree(self.caps_cache,
                            os.path.join(self.own('/var/cache/libvirt'),
                                         CAPS_CACHE), dirs_exist_ok=True)
        rec = procs.spawn(self.state, 'ns-' + self.name, [
            'unshare', '-m', '-u', '--propagation', 'private', '--',
            'sleep', 'infinity'], self.lay.log('ns-' + self.name))
        mine = _ns_inode(os.getpid())

        def entered():
            procs.check_alive(self.state, 'ns-' + self.name)
            with open('/proc/%d/comm' % rec['pid']) as f:
                if f.read().strip() != 'sleep':
                    return False
            return _ns_inode(rec['pid']) != mine
        # Never nsenter before unshare has run: the mounts below would
        # land in this machine's own namespace.
        procs.wait_for('namespace of %s' % self.name, entered, 30,
                       interval=0.05)
        rec['ns'] = _ns_inode(rec['pid'])
        self.state.save()
        script = ['hostname %s' % self.name]
        for d in COVERED:
            script.append('mount --bind %s %s' % (self.own(d), d))
        script.append('mount -t hugetlbfs hugetlbfs %s' % hp)
        procs.run(self.ns() + ['sh', '-ec', '; '.join(script)],
                  'mounts of %s' % self.name, self.lay.log('hosts-setup'))

    def start_libvirt(self):
        self.install_hook()
        ns = self.ns()
        procs.spawn(self.state, 'virtlogd-' + self.name,
                    ns + ['virtlogd'], self.lay.log('virtlogd-' + self.name))
        procs.spawn(self.state, 'libvirtd-' + self.name,
                    ns + ['libvirtd'], self.lay.log('libvirtd-' + self.name))

    def wait_libvirt(self, timeout=180):
        def answers():
            p = subprocess.run(['virsh', '-c', self.uri, 'version'],
                               capture_output=True, text=True, timeout=60)
            return p.returncode == 0
        t0 = time.monotonic()
        procs.wait_for('libvirtd of %s' % self.name, answers, timeout,
                       interval=0.5, on_wait=lambda: procs.check_alive(
                           self.state, 'libvirtd-' + self.name))
        if self.caps_cache:
            src = os.path.join(self.own('/var/cache/libvirt'), CAPS_CACHE)
            if os.path.isdir(src):
                shutil.copytree(src, self.caps_cache, dirs_exist_ok=True)
        return time.monotonic() - t0

    def start_nova_compute(self, instances, provider_dir):
        configs.write(self.conf, configs.nova_compute(
            self.lay, self.name, instances, self.uri, provider_dir))
        os.makedirs(self.lay.path('data', 'nova-' + self.name),
                    exist_ok=True)
        procs.spawn(self.state, 'nova-compute-' + self.name,
                    self.ns() + [self.lay.bin('nova-compute'),
                                 '--config-file', self.conf],
                    self.lay.log('nova-compute-%s-stdout' % self.name),
                    # platform.md: SIGTERM may not finish in 40 s; it has
                    # nothing to save here
                    grace=5)


def domains(uri):
    p = subprocess.run(['virsh', '-c', uri, 'list', '--all', '--name'],
                       capture_output=True, text=True, timeout=60)
    return [n for n in p.stdout.split() if n] if p.returncode == 0 else []


def destroy_domains(uri, log=print):
    for n in domains(uri):
        log('destroying domain %s' % n)
        subprocess.run(['virsh', '-c', uri, 'destroy', n],
                       capture_output=True, timeout=60)
        subprocess.run(['virsh', '-c', uri, 'undefine', '--nvram', n],
                       capture_output=True, timeout=60)


def sweep_namespace(ns_inode, log=print):
    """SIGKILL every process still in the namespace (QEMU, privsep
    helpers: children that left their parent's process group)."""
    if ns_inode == _ns_inode(os.getpid()):
        raise procs.CloudError('refusing to sweep this machine\'s own '
                               'mount namespace')
    killed = []
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        pid = int(d)
        try:
            if os.stat('/proc/%d/ns/mnt' % pid).st_ino != ns_inode:
                continue
            with open('/proc/%d/comm' % pid) as f:
                comm = f.read().strip()
            os.kill(pid, 9)
            killed.append('%s(%d)' % (comm, pid))
        except OSError:
            continue
    if killed:
        log('killed what was left in the namespace: ' + ' '.join(killed))
    return killed
