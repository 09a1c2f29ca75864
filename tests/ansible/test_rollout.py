"""ansible/site.yml, run with ansible-core inside a compute node in a box
(connection local: the node has no sshd; the role is the same one an
operator runs over SSH). The node booted without the hook; the test
unloads the module first, so the role has everything to do:

* first run: the module is loaded (prebuilt, with its parameters), the
  hook installed, nova's config fragment written, libvirtd restarted (a
  new pid) and nova-compute's restart command run; `tlbbalance status`
  agrees; a VM started afterwards is registered by the installed hook;
* second run: nothing changes and nothing restarts (idempotent);
* bad variables stop the run with a message naming them.

The node runs no nova-compute: its restart command only leaves a marker.
What the DKMS path does is not exercised here (building a module inside
the TCG node takes minutes); see docs/ansible.md.
"""

import json
import os
import re
import shlex
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, 'tools', 'node'))

import scenario  # noqa: E402

PLAYBOOK = os.path.join(REPO, 'ansible', 'site.yml')
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable),
                            'ansible-playbook')
MARKER = '/run/nova-compute-restarted'
CONF = '/etc/nova/nova.conf.d/50-tlbbalance.conf'
HOOK = '/etc/libvirt/hooks/qemu.d/tlbbalance'


def playbook(node, **extra):
    ev = {
        'tlbbalance_hosts': 'all',
        'ansible_become': False,
        'ansible_python_interpreter': sys.executable,
        'tlbbalance_python': '/usr/bin/python3',
        'tlbbalance_package_install': 'none',
        'tlbbalance_module_install': 'prebuilt',
        'tlbbalance_module_ko': node.ko,
        'tlbbalance_module_params': {'allow_inject': 1},
        'tlbbalance_hook_args': '--log-file /var/log/tlbbalance-hook.log',
        'tlbbalance_options': {'default_mode': 'monitor',
                               'allocation_threads': False},
        'tlbbalance_restart': 'command',
        'tlbbalance_restart_libvirtd_cmd':
            'pkill -x libvirtd; while pgrep -x libvirtd >/dev/null; '
            'do sleep 0.2; done; libvirtd -d -p /run/libvirtd.pid',
        'tlbbalance_restart_nova_compute_cmd': 'touch %s' % MARKER,
    }
    ev.update(extra)
    cmd = ('ANSIBLE_NOCOLOR=1 ANSIBLE_PIPELINING=1 '
           'ANSIBLE_LOCAL_TEMP=/tmp/ansible-local '
           'ANSIBLE_REMOTE_TEMP=/tmp/ansible-remote %s -i localhost, '
           '-c local %s -e %s' % (PLAYBOOK_BIN, PLAYBOOK,
                                  shlex.quote(json.dumps(ev))))
    res = node.run(cmd, timeout=600)
    print('ansible-playbook in the node: rc %d in %.1f s' % (res.rc, res.secs))
    recap = re.search(r'^localhost\s*: ok=(\d+)\s+changed=(\d+)\s+'
                      r'unreachable=(\d+)\s+failed=(\d+)', res.stdout, re.M)
    return res, recap


def libvirtd_pid(node):
    return node.check('pgrep -x libvirtd').strip()


@pytest.fixture(scope='module')
def first_run(node):
    node.check('rmdir %s/vms/* 2>/dev/null; rmmod tlbbalance'
               % scenario.CONFIGFS)
    pid0 = libvirtd_pid(node)
    res, recap = playbook(node)
    return {'res': res, 'recap': recap, 'pid0': pid0}


def test_first_run_installs_everything(node, first_run):
    res, recap = first_run['res'], first_run['recap']
    assert res.rc == 0 and recap, res.stdout[-3000:] + res.stderr[-2000:]
    assert int(recap.group(4)) == 0 and int(recap.group(2)) >= 4, \
        recap.group(0)
    assert node.check('cat /sys/module/tlbbalance/parameters/allow_inject'
                      ).strip() in ('1', 'Y')
    assert node.run('test -x %s' % HOOK).rc == 0
    conf = node.check('cat %s' % CONF)
    assert re.search(r'^compute_driver = tlbbalance\.TLBBalanceLibvirtDriver$',
                     conf, re.M), conf
    assert re.search(r'^\[tlbbalance\]\ndefault_mode = monitor\n'
                     r'allocation_threads = false\n', conf, re.M) or \
        re.search(r'^\[tlbbalance\]\nallocation_threads = false\n'
                  r'default_mode = monitor$', conf, re.M), conf
    assert node.run('test -e %s' % MARKER).rc == 0, \
        'the nova-compute restart handler did not run'
    assert libvirtd_pid(node) != first_run['pid0'], \
        'libvirtd was not restarted after the hook was installed'
    data = json.loads(node.check('tlbbalance status --json'))
    assert data['host']['module']['loaded'] is True, data['host']


def test_vm_started_after_rollout_is_registered(node, first_run, payload):
    name = 'ansible-vm'
    scenario.start_vm(node, name, payload, mem_mib=64,
                      specs={'mode': 'monitor', 'backing': 'thp'})
    try:
        assert node.run('test -d %s/vms/%s' % (scenario.CONFIGFS, name)
                        ).rc == 0, node.run('tail -5 /var/log/'
                                            'tlbbalance-hook.log').stdout
    finally:
        node.run('virsh -q destroy %s; virsh -q undefine %s' % (name, name),
                 timeout=120)


def test_second_run_changes_nothing(node, first_run):
    node.check('rm -f %s' % MARKER)
    pid = libvirtd_pid(node)
    res, recap = playbook(node)
    assert first_run['res'].rc == 0, 'the first run failed'
    assert res.rc == 0 and recap, res.stdout[-3000:]
    assert recap.group(2) == '0', 'second run changed something:\n' + \
        '\n'.join(ln for ln in res.stdout.splitlines()
                  if ln.startswith('changed:'))
    assert node.run('test -e %s' % MARKER).rc != 0
    assert libvirtd_pid(node) == pid


def test_bad_variables_are_named(node, first_run):
    res, recap = playbook(node, tlbbalance_module_install='rpm')
    assert res.rc != 0
    assert 'bad variables' in res.stdout and 'module_install=rpm' in \
        res.stdout, res.stdout[-2000:]
