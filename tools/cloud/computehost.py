# SPDX-License-Identifier: Apache-2.0
"""A compute host of the cloud: libvirtd + nova-compute in a private mount
and UTS namespace on this machine.

The namespace, libvirt's private directories, the hook in the private
``/etc/libvirt``, hugetlbfs and the daemons are tools/libvirthost.py's
``LibvirtHost`` (the same code the integration tests use), with a hostname
of its own: that is what libvirt reports and nova names the hypervisor
by, so two such hosts on one machine are two compute nodes. nova-compute
runs inside the namespace beside them. ``facts()`` is what clients need
(cloud.json); ``state()`` is what ``cloud.py down`` needs to stop it all
by pid from another process.

A host on an earlier release (``release``: tools/releases.py's commit and
the tree exported from it; ``TLBB_CLOUD_RELEASE_N1``, docs/cloud.md) runs
that release's code for everything of tlbbalance on it: its hook
(installed by its own installer) and its driver (its tree first on
nova-compute's ``PYTHONPATH``: nova's loader shim ``nova.virt.tlbbalance``
imports ``nova_tlbbalance.driver`` by name, so it resolves there), and its
CLI for clients (``cli`` in the facts). nova itself is the cloud's.
"""

import os
import subprocess
import uuid

import configs
import libvirthost


BOX_COMPUTE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           'box_compute.py')


class ComputeHost:
    kind = 'fast'

    def __init__(self, lay, name, caps_cache, hugepages, index=0,
                 release=None):
        self.lay = lay
        self.release = release      # None: this checkout
        self.name = name
        self.top = lay.path('hosts', name)
        self.hook_log = os.path.join(self.top, 'hook.jsonl')
        self.hook_state = os.path.join(self.top, 'hook-state')
        self.lh = libvirthost.LibvirtHost(
            self.top, hook=True, hugepages=hugepages,
            python=lay.bin('python'), cache_dir=caps_cache, hostname=name,
            # live migration between the fast hosts (docs/cloud.md): a
            # host UUID each, QEMU's incoming streams on ports of its own
            host_uuid=host_uuid(self.top),
            qemu_conf=configs.qemu_migration(lay, index),
            hook_settings={'log_file': self.hook_log, 'syslog': '',
                           'state_dir': self.hook_state},
            hook_tree=release['tree'] if release else None)

    @property
    def conf(self):
        return self.lay.path('etc', 'nova', 'compute-%s.conf' % self.name)

    def start_libvirt(self):
        """The namespace, the hook, virtlogd and libvirtd; returns once
        libvirtd answers (LibvirtHost stops what it started on failure)."""
        self.lh.start()
        return self.lh.start_seconds

    def start_nova_compute(self, instances, provider_dir):
        configs.write(self.conf, configs.nova_compute(
            self.lay, self.name, instances, self.lh.uri, provider_dir,
            driver=configs.BOX_DRIVER))
        os.makedirs(self.lay.path('data', 'nova-' + self.name),
                    exist_ok=True)
        # nova-compute with the plugin's driver and one flag for live
        # migrations between hosts of one machine (box_compute.py)
        env = None
        if self.release:
            env = dict(os.environ, PYTHONPATH=self.release['tree'])
        self.lh.spawn('nova-compute', [
            self.lay.bin('python'), BOX_COMPUTE, '--config-file',
            self.conf],
            self.lay.log('nova-compute-%s-stdout' % self.name), env=env)

    def alive(self):
        """None, or what died."""
        p = self.lh.procs.get('nova-compute')
        if p is not None and p.poll() is not None:
            return 'nova-compute of %s (rc %s)' % (self.name, p.poll())
        pid = self.lh.pids.get('libvirtd')
        if pid and not libvirthost._alive(pid):
            return 'libvirtd of %s' % self.name
        return None

    def facts(self):
        """What a client needs to reach this host (cloud.json)."""
        out = {'name': self.name, 'kind': self.kind, 'uri': self.lh.uri,
               'exec': self.lh.ns_prefix(), 'hook_log': self.hook_log,
               'hook_state': self.hook_state,
               'compute_log': self.lay.log('nova-compute-' + self.name),
               'hugetlbfs': libvirthost.HUGETLBFS_IN_NS}
        if self.release:
            # the host's own release: its commit, and its CLI
            out['release'] = self.release['commit']
            out['cli'] = cli_of(self.lay.bin('python'),
                                self.release['tree'])
        return out

    def state(self):
        return dict(self.lh.state(), name=self.name, uri=self.lh.uri,
                    kind=self.kind)

    def stop(self):
        self.lh.stop()


def cli_of(python, tree):
    """argv of the ``tlbbalance`` CLI of the release in ``tree``."""
    return ['env', 'PYTHONPATH=' + tree, python, '-m', 'nova_tlbbalance']


def host_uuid(top):
    """libvirt's host UUID of the host kept in ``top``: one per host
    and cloud directory, the same at every start."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, 'file://' + top))


def domains(uri):
    p = subprocess.run(['virsh', '-c', uri, 'list', '--all', '--name'],
                       capture_output=True, text=True, timeout=60)
    return [n for n in p.stdout.split() if n] if p.returncode == 0 else []


def destroy_domains(uri, log=print):
    """Domains nova left (a failed run): destroyed through libvirt first,
    so QEMU exits cleanly before its namespace is emptied."""
    for n in domains(uri):
        log('destroying domain %s' % n)
        subprocess.run(['virsh', '-c', uri, 'destroy', n],
                       capture_output=True, timeout=60)
        subprocess.run(['virsh', '-c', uri, 'undefine', '--nvram', n],
                       capture_output=True, timeout=60)


def stop_saved(saved, log=print):
    """Stop a host from its saved state (another process started it).
    A kvm host has nothing here: its processes are the cloud's recorded
    ones (kvmhost.py)."""
    if saved.get('kind') == 'kvm':
        return
    if 'workdir' not in saved:
        log('compute host %s: state from an older tools/cloud, nothing '
            'to stop by it' % saved.get('name'))
        return
    lh = libvirthost.LibvirtHost.from_state(saved)
    if lh.pids.get('libvirtd'):
        destroy_domains(saved['uri'], log=log)
    log('stopping compute host %s' % saved['name'])
    lh.stop()
