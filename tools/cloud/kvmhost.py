# SPDX-License-Identifier: Apache-2.0
"""The kvm compute host: a node (tools/node) whose libvirtd runs KVM
guests with the real tlbbalance.ko and hook, driven by a nova-compute on
this machine.

Started with ``TLBB_CLOUD_KVM_HOST=1`` (``tox -e tempest`` sets it unless
it is 0: run_tempest.py). docs/cloud.md ("The kvm
host") says why nova-compute runs here and not in the node, and what was
measured. The pieces:

- nodekeeper.py boots the node and holds its agent; nodeexec.py (this
  host's ``exec`` prefix in cloud.json) runs a command in the node through
  it, so tests reach the node's ``virsh``, ``tlbbalance`` and configfs
  with the same LocalHost as a fast host;
- the node's libvirtd is relayed to ``libvirt.sock`` here over a
  virtio-serial port (tools/node/relay.py): nova-compute's
  ``connection_uri``, its only client (one byte stream, one client);
- the instances directory is shared writable into the node at the same
  path (9p, caching off): nova-compute writes disks and kernels there and
  QEMU in the node opens them;
- nova-compute runs on this machine as a recorded process of the cloud
  (it reaches libvirt only through the relay), with ``virt_type = kvm``
  and a provider config giving the node's resource provider the module
  trait, written only when the module is loaded in the node.
"""

import json
import os
import subprocess
import sys
import time

import configs
import procs

HERE = os.path.dirname(os.path.abspath(__file__))


class KvmHost:
    kind = 'kvm'

    def __init__(self, lay, state, name, kernel='6.1', mem_mb=2048):
        self.lay = lay
        self.state_ = state
        self.name = name
        self.top = lay.path('hosts', name)
        self.kernel = kernel
        self.mem_mb = mem_mb
        self.node_info = None

    # -- paths ------------------------------------------------------------

    @property
    def daemon(self):
        return 'node-' + self.name

    @property
    def conf(self):
        return self.lay.path('etc', 'nova', 'compute-%s.conf' % self.name)

    @property
    def relay(self):
        return os.path.join(self.top, 'libvirt.sock')

    @property
    def agent_sock(self):
        return os.path.join(self.top, 'agent.sock')

    @property
    def ready_file(self):
        return os.path.join(self.top, 'node-ready.json')

    @property
    def uri(self):
        """nova-compute's URI: the node's libvirtd through the relay."""
        return 'qemu+unix:///system?socket=' + self.relay

    @property
    def instances(self):
        return self.lay.path('data', 'instances-' + self.name)

    @property
    def provider_dir(self):
        return self.lay.path('etc', 'nova', 'provider_config-' + self.name)

    def exec_prefix(self):
        return [sys.executable, os.path.join(HERE, 'nodeexec.py'),
                self.agent_sock, '--host', self.name,
                '--log', self.lay.log(self.daemon), '--']

    def facts(self):
        """What a client needs (cloud.json). ``uri`` is for commands run
        through ``exec`` (in the node); nova-compute's own is
        ``nova_uri`` (the relay carries one client)."""
        f = {'name': self.name, 'kind': self.kind, 'uri': 'qemu:///system',
             'nova_uri': self.uri, 'exec': self.exec_prefix(),
             'hugetlbfs': '/dev/hugepages', 'instances': self.instances}
        if self.node_info:
            f['hook_log'] = self.node_info['hook_log']
            f['node'] = {k: self.node_info[k] for k in (
                'boot_seconds', 'kernel', 'module_loaded', 'console')}
        return f

    def state(self):
        """For ``cloud.py down``: nothing beyond the recorded processes
        (the keeper and nova-compute are in state.json's procs)."""
        return {'name': self.name, 'kind': self.kind}

    # -- start ------------------------------------------------------------

    def boot(self):
        """Start the keeper, which boots the node (libvirtd, module and
        hook inside) in the background. Called from the main thread: it
        records a process in the cloud's state."""
        if self.daemon in [r['name'] for r in self.state_.procs]:
            return
        os.makedirs(self.top, exist_ok=True)
        os.makedirs(self.instances, exist_ok=True)
        procs.spawn(self.state_, self.daemon, [
            sys.executable, os.path.join(HERE, 'nodekeeper.py'),
            '--name', self.name, '--run-dir', os.path.join(self.top, 'node'),
            '--instances', self.instances, '--relay', self.relay,
            '--agent-sock', self.agent_sock, '--ready', self.ready_file,
            '--kernel', self.kernel, '--mem', str(self.mem_mb)],
            self.lay.log(self.daemon),
            # SIGTERM powers the node off: its domains are destroyed first
            grace=120)

    def node_run(self, argv, what, timeout=300):
        p = subprocess.run(self.exec_prefix() + list(argv),
                           capture_output=True, text=True, timeout=timeout)
        if p.returncode:
            raise procs.CloudError('%s in the node of %s: rc %d\n%s%s' % (
                what, self.name, p.returncode, p.stdout, p.stderr))
        return p.stdout

    def start_libvirt(self, timeout=900):
        """Wait for the node (2 boot attempts of up to 300 s each at load
        8, docs/node.md), then libvirtd answering inside it: asked through
        the agent, never through the relay (nova-compute must be its first
        and only client). Writes the provider config. Returns seconds."""
        self.boot()
        t0 = time.monotonic()

        def ready():
            dead = self.alive()
            if dead:
                raise procs.CloudError('%s (log: %s)' % (
                    dead, self.lay.log(self.daemon)))
            return os.path.exists(self.ready_file)
        procs.wait_for('the node of %s ready' % self.name, ready, timeout,
                       interval=1)
        with open(self.ready_file) as f:
            self.node_info = json.load(f)
        self.node_run(['virsh', '-q', '-c', 'qemu:///system', 'version'],
                      'libvirtd answering', timeout=120)
        self.write_provider_config()
        return time.monotonic() - t0

    def write_provider_config(self):
        """The node's traits, as an operator's host gets them (the Ansible
        role runs the same command): ``python3 -m
        nova_tlbbalance.provider_config`` run in the node reads its facts
        there. With ``--module-trait``, CUSTOM_TLBBALANCE_MODULE when the
        module is loaded: on an operator's host the driver plugin reports
        that trait, but this nova-compute runs outside the node and cannot
        see the node's module (its ``report_module_trait`` is off:
        configs.nova_compute_kvm). The node sees this machine's files
        read-only, so the text comes back on stdout and is written here."""
        os.makedirs(self.provider_dir, exist_ok=True)
        text = self.node_run(
            [self.lay.bin('python'), '-m', 'nova_tlbbalance.provider_config',
             '--module-trait', '--name', self.name], 'provider config')
        with open(os.path.join(self.provider_dir, 'tlbbalance.yaml'),
                  'w') as f:
            f.write(text)
        loaded = "'CUSTOM_TLBBALANCE_MODULE'" in text
        self.node_info['module_loaded'] = loaded
        return loaded

    def start_nova_compute(self, instances=None, provider_dir=None):
        """nova-compute on this machine (no namespace of its own: it
        reaches libvirt only through the relay socket)."""
        configs.write(self.conf, configs.nova_compute_kvm(
            self.lay, self.name, self.instances, self.uri,
            self.provider_dir))
        os.makedirs(self.lay.path('data', 'nova-' + self.name),
                    exist_ok=True)
        procs.spawn(self.state_, 'nova-compute-' + self.name,
                    [self.lay.bin('nova-compute'), '--config-file',
                     self.conf],
                    self.lay.log('nova-compute-%s-stdout' % self.name),
                    grace=5)

    def alive(self):
        """None, or what died."""
        for r in self.state_.procs:
            if r['name'] in (self.daemon, 'nova-compute-' + self.name) \
                    and not procs.alive(r):
                return '%s (pid %d)' % (r['name'], r['pid'])
        return None

    def stop(self):
        """Nothing of its own: its processes are the cloud's recorded
        ones, stopped by ``cloud.py down``."""
