# SPDX-License-Identifier: Apache-2.0
"""ansible/site.yml over SSH across four compute hosts, rolling.

Hosts (tests/ansible/fleet.py): h1, h2, h3 in namespaces of their own
(sshd each; package into nova's virtualenv with pip, hook, nova.conf
fragment, provider config), and qnode, a Debian kernel under QEMU (sshd
in it; DKMS build of tlbbalance.ko against that kernel's headers, load,
reload after a version change, huge pages, a real libvirtd restarted when
the hook changes). Inventory order h1, qnode, h2, h3 with serial [1, 1,
2]: batch 1 = h1, batch 2 = qnode, batch 3 = h2 + h3.

The stages run in order and each needs the previous one:

0. check mode (--check) on the fresh fleet, with a directory another
   user made where the role once packed the DKMS source
   ($TMPDIR/tlbbalance-ansible-$USER, a poisoned tarball in it): it
   passes, reports a change on every host for every step (package, DKMS
   build, huge pages, hook, nova.conf, provider config) and changes
   nothing, on the hosts or in that directory;
1. first rollout: everything installed, restarts run, traits written;
2. second run: changed=0 on every host, nothing restarted; then check
   mode says the same (changed=0);
3. drift: a hand-edited nova.conf fragment (h2), a removed hook (h3) and
   a hand-edited hook.conf (h1) are put back; only nova-compute on h2 and
   libvirtd on h3 restart (the hook reads its settings at every run);
4. a new source of the same version whose module does not build on qnode
   (batch 2), with new module parameters: the rollout stops there naming
   qnode and the compiler error; h1 (batch 1, done) keeps working, h2 and
   h3 (batch 3) are not touched, qnode keeps the module it had loaded,
   installed (DKMS), its source, its parameters and its load-at-boot
   entry (the new source was tried in a scratch DKMS tree first);
5. the fixed release: h1 changes nothing, qnode builds version 0.1.1 with
   DKMS and reloads it (0.1.0 removed), h2 and h3 get the release.

nova-compute does not run on any host (the cloud session runs a real
one); its restart command appends to /run/fleet-restarts, as libvirtd's
does on the namespace hosts (no libvirtd there: the node's is real).
"""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CONF = '/etc/nova/nova.conf.d/50-tlbbalance.conf'
HOOK = '/etc/libvirt/hooks/qemu.d/tlbbalance'
HOOK_CONF = '/etc/tlbbalance/hook.conf'
PROVIDER = '/etc/nova/provider_config/tlbbalance.yaml'
RESTARTS = '/run/fleet-restarts'
# One playbook run's bound: the slowest is a DKMS build inside the TCG
# node (3-6 min at load average 8; the first run passed 600 s at load
# average 22-25, seven sessions sharing two cores).
RUN_TIMEOUT = 900
STATE = {}


def module_tree(dest, append=''):
    """A copy of kernel-module/ as a release would ship it, optionally
    with a line appended to tlbb_main.c."""
    shutil.copytree(os.path.join(REPO, 'kernel-module'), dest,
                    ignore=shutil.ignore_patterns(
                        'tests', 'bench', '*.o', '*.ko', '*.mod*', '.*'))
    if append:
        with open(os.path.join(dest, 'tlbb_main.c'), 'a') as f:
            f.write(append)
    return dest


@pytest.fixture(scope='module')
def rollout(fleet):
    """Inventory and the module trees; the runs are the tests below."""
    if STATE:
        return STATE
    d = fleet.dir
    wheels = os.path.join(d, 'wheels')
    subprocess.run([sys.executable, '-m', 'pip', 'wheel', '-q', '--no-deps',
                    '-w', wheels, REPO], check=True, timeout=300)
    wheel, = [os.path.join(wheels, w) for w in os.listdir(wheels)]
    STATE['src'] = {
        '0.1.0': module_tree(os.path.join(d, 'src-0.1.0')),
        'broken': module_tree(os.path.join(d, 'src-broken'),
                              '\nthis release does not compile;\n'),
        # MODULE_VERSION comes from dkms.conf's PACKAGE_VERSION, which
        # the role sets to tlbbalance_module_version (0.1.1 here)
        '0.1.1': module_tree(os.path.join(d, 'src-0.1.1'),
                             '/* release 0.1.1 */\n'),
    }
    log = 'echo %s >> ' + RESTARTS
    common = {
        'ansible_user': 'root',
        'ansible_become': False,        # root already; there is no sudo
        'ansible_python_interpreter': '/usr/bin/python3',
        'ansible_remote_tmp': '/run/ansible-tmp',
        'tlbbalance_serial': [1, 1, 2],
        'tlbbalance_restart': 'command',
        'tlbbalance_restart_libvirtd_cmd': log % 'libvirtd',
        'tlbbalance_restart_nova_compute_cmd': log % 'nova-compute',
        'tlbbalance_hook_settings': {'log_file': '/run/tlbbalance-hook.log'},
    }
    ns_vars = {
        'tlbbalance_package_install': 'pip',
        'tlbbalance_package': wheel,
        # nova's own dependencies are not in the stand-in venv; the
        # package's are Debian's (system site packages)
        'tlbbalance_pip_extra_args': '--no-deps --no-index',
        'tlbbalance_module_install': 'none',
        'tlbbalance_provider_traits': ['CUSTOM_FLEET_NS'],
    }
    node_vars = {
        'tlbbalance_package_install': 'none',
        'tlbbalance_python': '/usr/bin/python3',
        'tlbbalance_module_install': 'dkms',
        'tlbbalance_module_params': {'allow_inject': 1},
        'tlbbalance_hugepages': {2048: 16},
        'tlbbalance_restart_libvirtd_cmd':
            'pkill -x libvirtd; while pgrep -x libvirtd >/dev/null; '
            'do sleep 0.2; done; libvirtd -d -p /run/libvirtd.pid && '
            + log % 'libvirtd',
    }
    STATE['inventory'] = fleet.write_inventory(common, ns_vars, node_vars)
    return STATE


def run(fleet, name, check=False, **extra):
    ev = {'tlbbalance_options': {'default_mode': 'monitor'},
          'tlbbalance_module_src': STATE['src']['0.1.0'],
          'tlbbalance_module_version': '0.1.0'}
    ev.update(extra)
    fleet.run_names.append(name)
    res = fleet.playbook(STATE['inventory'], ev, timeout=RUN_TIMEOUT,
                         check=check)
    print(res.summary(name))
    STATE[name] = res
    # the role's scratch directory on the controller is gone
    left = [n for n in os.listdir(fleet.ctl_tmp)
            if n.startswith('tlbbalance-ansible.')]
    assert left == [], 'scratch directories left in %s: %s' % (
        fleet.ctl_tmp, left)
    return res


def foreign_dir(fleet):
    """What another local user could make before the rollout: the
    directory the role once packed the source into (mkdir -p reused
    it), with their own tarball in it."""
    d = os.path.join(fleet.ctl_tmp, 'tlbbalance-ansible-%s'
                     % (os.environ.get('USER') or 'user'))
    os.makedirs(d, exist_ok=True)
    bad = module_tree(os.path.join(fleet.dir, 'src-poison'),
                      '\n/* POISON: not the operator\'s source */\n')
    tarball = os.path.join(d, 'tlbbalance-0.1.0-src.tar.gz')
    subprocess.run(['tar', '-C', bad, '-czf', tarball, '.'], check=True)
    for path in (tarball, d):
        os.chown(path, 65534, 65534)          # nobody
    os.chmod(d, 0o777)
    return d


def snapshot(d):
    return sorted((n, os.stat(os.path.join(d, n)).st_mtime_ns,
                   open(os.path.join(d, n), 'rb').read())
                  for n in os.listdir(d))


def restarts(fleet, host):
    if host == 'qnode':
        return fleet.node.run('cat %s' % RESTARTS).stdout.split()
    h, = [x for x in fleet.hosts if x.name == host]
    return h.sh('cat %s' % RESTARTS, check=False).stdout.split()


def cat(fleet, host, path):
    if host == 'qnode':
        return fleet.node.check('cat %s' % path)
    h, = [x for x in fleet.hosts if x.name == host]
    return h.sh('cat %s' % path).stdout


def hook_works(fleet, host):
    """The installed hook runs and passes the domain XML through."""
    xml = "<domain type='kvm'><name>vm1</name></domain>"
    cmd = "echo \"%s\" | %s vm1 migrate begin -" % (xml, HOOK)
    out = fleet.node.check(cmd) if host == 'qnode' else \
        [x for x in fleet.hosts if x.name == host][0].sh(cmd).stdout
    return out.strip() == xml


def ok(res, host, changed=None):
    r = res.hosts.get(host)
    assert r is not None, 'no recap for %s:\n%s' % (host, res.out[-3000:])
    assert r['failed'] == 0 and r['unreachable'] == 0, \
        '%s failed:\n%s' % (host, res.out[-4000:])
    if changed is not None:
        assert r['changed'] == changed, '%s changed=%d, expected %d:\n%s' % (
            host, r['changed'], changed, res.changed_lines())
    return r


ALL = ('h1', 'qnode', 'h2', 'h3')
# what a fresh node lacks: each must still be absent after --check
FRESH = (CONF, HOOK, HOOK_CONF, PROVIDER)


def test_0_check_mode_on_a_fresh_fleet(fleet, rollout):
    d = foreign_dir(fleet)
    STATE['foreign'] = (d, snapshot(d))
    node = fleet.node
    pages = node.check('cat /sys/kernel/mm/hugepages/hugepages-2048kB/'
                       'nr_hugepages').strip()
    res = run(fleet, 'check mode, fresh', check=True)
    assert res.rc == 0, res.out[-5000:]
    for host in ALL:
        r = ok(res, host)
        assert r['changed'] >= 4, (host, res.changed_lines())
    out = res.out
    # each step says what it would change, none is silently skipped
    assert re.search(r'changed: DKMS tlbbalance/0\.1\.0 would be built and '
                     r'installed for \S+ \(check mode\)', out), out[-5000:]
    assert 'changed: /etc/modprobe.d/tlbbalance.conf would be written ' \
        '(check mode)' in out
    assert 'changed: tlbbalance would be loaded (check mode)' in out
    assert re.search(r'changed: /sys/kernel/mm/hugepages/hugepages-2048kB/'
                     r'nr_hugepages \d+ -> 16 \(check mode\)', out), out
    assert 'would install %s' % HOOK in out, out[-5000:]
    assert 'would write %s' % PROVIDER in out, out[-5000:]
    # nothing changed anywhere
    for host in ALL:
        for path in FRESH:
            probe = 'test -e %s' % path
            rc = node.run(probe).rc if host == 'qnode' else \
                [x for x in fleet.hosts if x.name == host][0].sh(
                    probe, check=False).returncode
            assert rc != 0, '%s exists on %s after --check' % (path, host)
    assert node.check('dkms status -m tlbbalance').strip() == ''
    assert node.run('test -e /usr/src/tlbbalance-0.1.0.tar.gz').rc != 0
    assert node.run('test -d /sys/module/tlbbalance').rc != 0
    assert node.check('cat /sys/kernel/mm/hugepages/hugepages-2048kB/'
                      'nr_hugepages').strip() == pages
    assert snapshot(d) == STATE['foreign'][1]


def test_1_first_rollout(fleet, rollout):
    res = run(fleet, 'first run')
    assert res.rc == 0, res.out[-5000:]
    # the other user's directory was neither used nor touched: the node
    # got the operator's source
    d, before = STATE['foreign']
    assert snapshot(d) == before
    assert 'POISON' not in fleet.node.check(
        'cat /usr/src/tlbbalance-0.1.0/tlbb_main.c')
    for host in ALL:
        assert ok(res, host)['changed'] >= 3
        assert restarts(fleet, host) == ['libvirtd', 'nova-compute'], host
        assert hook_works(fleet, host), host
        assert 'log_file = /run/tlbbalance-hook.log\n' in \
            cat(fleet, host, HOOK_CONF), host
        conf = cat(fleet, host, CONF)
        assert 'compute_driver = tlbbalance.TLBBalanceLibvirtDriver' in conf
        assert 'provider_config_location = /etc/nova/provider_config' in conf
        assert 'default_mode = monitor' in conf
    for h in fleet.hosts:
        # the package went into nova's venv (not Debian's python)
        out = h.sh('%s/bin/python3 -c "import nova_tlbbalance as m; '
                   'print(m.__file__)"' % h.venv).stdout
        assert out.startswith(h.venv + '/lib/'), out
        pc = cat(fleet, h.name, PROVIDER)
        assert "- 'CUSTOM_FLEET_NS'" in pc and 'TLBBALANCE_MODULE' not in pc
    node = fleet.node
    assert node.check('dkms status -m tlbbalance').strip().endswith(
        ': installed'), node.check('dkms status')
    assert node.run('test -d /sys/module/tlbbalance').rc == 0
    assert node.check('cat /sys/module/tlbbalance/parameters/allow_inject'
                      ).strip() in ('1', 'Y')
    assert node.check('cat /sys/kernel/mm/hugepages/hugepages-2048kB/'
                      'nr_hugepages').strip() == '16'
    # the driver plugin owns the module trait (it follows the module at
    # every resource update): the provider config never carries it
    assert 'TLBBALANCE_MODULE' not in cat(fleet, 'qnode', PROVIDER)
    STATE['libvirtd'] = node.check('pgrep -x libvirtd').strip()
    # the node's status agrees (libvirtd answers after its restart)
    data = json.loads(node.check(
        'for i in $(seq 240); do virsh -q version >/dev/null 2>&1 && break;'
        ' sleep 0.5; done; tlbbalance status --json', timeout=180))
    assert data['host']['module']['loaded'] is True, data['host']


def test_2_second_run_changes_nothing(fleet, rollout):
    assert STATE['first run'].rc == 0, 'the first run failed'
    before = {h: restarts(fleet, h) for h in ALL}
    res = run(fleet, 'second run')
    assert res.rc == 0, res.out[-5000:]
    for host in ALL:
        ok(res, host, changed=0)
        assert restarts(fleet, host) == before[host], host
    assert fleet.node.check('pgrep -x libvirtd').strip() == STATE['libvirtd']
    # check mode agrees: nothing would change, but for the package on
    # h1-h3: Ansible's pip module cannot tell in check mode when pip
    # gets extra arguments (it says changed; docs/ansible.md)
    res = run(fleet, 'check mode, converged', check=True)
    assert res.rc == 0, res.out[-5000:]
    ok(res, 'qnode', changed=0)
    for h in fleet.hosts:
        assert res.changed_tasks(h.name) == [
            "tlbbalance : Install the nova-tlbbalance package into nova's "
            'Python'], (h.name, res.changed_lines())


def test_3_drift_is_put_back(fleet, rollout):
    assert STATE['second run'].rc == 0, 'the second run failed'
    h1, h2, h3 = fleet.hosts[0], fleet.hosts[1], fleet.hosts[2]
    good = cat(fleet, 'h2', CONF)
    good_hook_conf = cat(fleet, 'h1', HOOK_CONF)
    h1.sh("sed -i 's/^log_file = .*/timeout = 3/' %s" % HOOK_CONF)
    h2.sh("sed -i 's/default_mode = monitor/default_mode = balance/' %s"
          % CONF)
    h3.sh('rm %s' % HOOK)
    before = {h: restarts(fleet, h) for h in ALL}
    res = run(fleet, 'drift run')
    assert res.rc == 0, res.out[-5000:]
    ok(res, 'h1', changed=1)        # hook.conf, and no restart
    ok(res, 'qnode', changed=0)
    ok(res, 'h2', changed=2)        # the fragment + nova-compute restart
    ok(res, 'h3', changed=2)        # the hook + libvirtd restart
    assert cat(fleet, 'h2', CONF) == good
    assert cat(fleet, 'h1', HOOK_CONF) == good_hook_conf
    assert hook_works(fleet, 'h3')
    assert restarts(fleet, 'h2') == before['h2'] + ['nova-compute']
    assert restarts(fleet, 'h3') == before['h3'] + ['libvirtd']
    assert restarts(fleet, 'h1') == before['h1']
    assert restarts(fleet, 'qnode') == before['qnode']


NODE_STATE = ('cat /etc/modprobe.d/tlbbalance.conf '
              '/etc/modules-load.d/tlbbalance.conf '
              '/usr/src/tlbbalance-0.1.0/.tlbbalance-src; '
              'dkms status -m tlbbalance; '
              'sha256sum /lib/modules/$(uname -r)/updates/dkms/tlbbalance.ko*')


def test_4_broken_build_halts_the_rollout(fleet, rollout):
    assert STATE['drift run'].rc == 0, 'the drift run failed'
    node = fleet.node
    before = node.check(NODE_STATE)
    assert 'allow_inject=1' in before and ': installed' in before, before
    # the same version, a new source that does not build, new parameters
    res = run(fleet, 'broken release', tlbbalance_module_version='0.1.0',
              tlbbalance_module_src=STATE['src']['broken'],
              tlbbalance_module_params={'allow_inject': 0},
              tlbbalance_options={'default_mode': 'balance'})
    assert res.rc != 0, res.out[-3000:]
    assert res.hosts['qnode']['failed'] == 1, res.recap_text()
    # named: the host (Ansible's name, then the node's own hostname in
    # the script's message), the step and the compiler's complaint
    assert 'fatal: [qnode]: FAILED!' in res.out, res.out[-4000:]
    assert re.search(r'tlbbalance-module: tlbb-node: DKMS build of '
                     r'tlbbalance 0\.1\.0 for \S+ failed: .*tlbb_main\.c:'
                     r'\d+:\d+: error:', res.out), res.out[-4000:]
    # nothing of the working module changed: the build, its source, its
    # parameters, its load-at-boot entry; no scratch tree left behind
    assert node.check(NODE_STATE) == before
    assert node.check('ls -d /var/tmp/tlbbalance-dkms.* 2>/dev/null; '
                      'true').strip() == ''
    assert 'this release does not compile' in res.out, res.out[-4000:]
    # batch 1 done and still working; batch 3 never started
    ok(res, 'h1', changed=2)
    assert 'default_mode = balance' in cat(fleet, 'h1', CONF)
    assert hook_works(fleet, 'h1')
    assert 'h2' not in res.hosts and 'h3' not in res.hosts, \
        res.recap_text()
    for host in ('h2', 'h3'):
        assert 'default_mode = monitor' in cat(fleet, host, CONF), host
    # qnode keeps the module it had
    node = fleet.node
    assert node.check('cat /sys/module/tlbbalance/version').strip() == \
        '0.1.0'


def test_5_fixed_release_completes(fleet, rollout):
    assert STATE['broken release'].rc != 0, 'stage 4 did not run'
    node = fleet.node
    before = {h: restarts(fleet, h) for h in ALL}
    res = run(fleet, 'fixed release', tlbbalance_module_version='0.1.1',
              tlbbalance_module_src=STATE['src']['0.1.1'],
              tlbbalance_options={'default_mode': 'balance'})
    assert res.rc == 0, res.out[-5000:]
    ok(res, 'h1', changed=0)
    assert restarts(fleet, 'h1') == before['h1']
    ok(res, 'qnode')
    for host in ('qnode', 'h2', 'h3'):
        assert 'default_mode = balance' in cat(fleet, host, CONF), host
        assert restarts(fleet, host) == before[host] + ['nova-compute'], host
    # the module was rebuilt by DKMS and reloaded; 0.1.0 is gone
    assert node.check('cat /sys/module/tlbbalance/version').strip() == \
        '0.1.1'
    status = node.check('dkms status -m tlbbalance')
    assert 'tlbbalance/0.1.1' in status and '0.1.0' not in status, status
