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
5. the fixed release is also the module upgrade N-1 -> N under running
   VMs (N-1 = 0.1.0, N = 0.1.1: the same working tree built under two
   version strings, dkms.conf's PACKAGE_VERSION; MODULE_VERSION follows
   it): two managed VMs run on qnode since before stage 4 (one monitored,
   one balanced and held: VM_NOHUGEPAGE on its guest RAM); qnode releases
   them (no VM_NOHUGEPAGE left), unloads 0.1.0, loads 0.1.1 and
   reconciles: the same QEMU pids, each VM registered again with its
   mode and parameters, each unmanaged window printed (and in
   /var/lib/tlbbalance/last-upgrade.json); 0.1.0 removed from DKMS only
   then; h1 changes nothing, h2 and h3 get the release; a rerun changes
   nothing on any host;
6. a broken N+1 that builds but does not load (tlbb_init returns -ENODEV;
   built on this machine against the node's headers and given to qnode
   as a prebuilt module, which costs seconds where a DKMS build in the
   node costs minutes): qnode releases its VMs, unloads 0.1.1, fails to
   load 0.1.2 and rolls back by itself (0.1.1 loaded again, VMs
   registered again, same pids), the play fails naming qnode and the
   reason, h2 and h3 are not touched;
then test_rollout_deb.py (d1-d3: tlbbalance-dkms takes the module over
on qnode and is upgraded under the same VMs) and test_rollout_removal.py
(7: removal of the whole fleet, tlbbalance_state=absent) go on from
there, in that order (pytest collects the files by name).

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

import node as nodelib
import scenario
from kernels import boot
from tlbbwait import wait_until

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


def module_tree(dest, append='', replace=None, version=None, prepend=''):
    """A copy of kernel-module/ as a release would ship it, optionally
    with a line put before (prepend) or after (append) tlbb_main.c's
    text, a (old, new) replacement in it, and another PACKAGE_VERSION."""
    shutil.copytree(os.path.join(REPO, 'kernel-module'), dest,
                    ignore=shutil.ignore_patterns(
                        'tests', 'bench', '*.o', '*.ko', '*.mod*', '.*'))
    main = os.path.join(dest, 'tlbb_main.c')
    if append:
        with open(main, 'a') as f:
            f.write(append)
    if prepend:
        text = open(main).read()
        with open(main, 'w') as f:
            f.write(prepend + text)
    if replace:
        text = open(main).read()
        assert replace[0] in text, replace
        with open(main, 'w') as f:
            f.write(text.replace(replace[0], replace[1]))
    if version:
        conf = os.path.join(dest, 'dkms.conf')
        text = re.sub(r'(?m)^PACKAGE_VERSION=.*$',
                      'PACKAGE_VERSION="%s"' % version, open(conf).read())
        with open(conf, 'w') as f:
            f.write(text)
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
        # fails in the build's first seconds: tlbb_main.o is the first
        # object Kbuild compiles and its first line includes a header
        # that does not exist (gcc stops there: a fatal error), where a
        # syntax error at its end cost the whole file's compile, minutes
        # in the TCG node
        'broken': module_tree(os.path.join(d, 'src-broken'), prepend=(
            '#include "this release does not compile.h"\n')),
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


def node_inventory(**node_vars):
    """The inventory with more variables for qnode only (extra vars
    would reach every host)."""
    with open(STATE['inventory']) as f:
        inv = json.load(f)
    inv['compute']['hosts']['qnode'].update(node_vars)
    path = STATE['inventory'][:-len('.json')] + '-qnode.json'
    with open(path, 'w') as f:
        json.dump(inv, f, indent=1)
    return path


def run(fleet, name, check=False, inventory=None, limit=None, **extra):
    ev = {'tlbbalance_options': {'default_mode': 'monitor'},
          'tlbbalance_module_src': STATE['src']['0.1.0'],
          'tlbbalance_module_version': '0.1.0'}
    ev.update(extra)
    fleet.run_names.append(name)
    res = fleet.playbook(inventory or STATE['inventory'], ev,
                         timeout=RUN_TIMEOUT, check=check, limit=limit)
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


# Two managed VMs on qnode from stage 3b on: one monitored, one balanced
# with a short sustain period and a floor, fed an imbalance through the
# module's injection backend (allow_inject=1 on qnode; no PMU here) so
# that the limiter holds it (VM_NOHUGEPAGE on its guest RAM).
#
# Both pre-fault their RAM (prefault=true, the default until the lazy
# default): in the CI run of 2026-11-27 the lazy upg-a printed 'ready' and
# never 'touched' in 300 s, and a lazy guest in a node was seen to lose
# control in 1 of 62 starts (docs/node.md, "Open: a lazy guest that"),
# never a pre-faulted one. This suite is about the rollout, not about
# lazy faulting, which tests/e2e and tempest cover.
VMS = {'upg-a': {'mode': 'monitor', 'backing': 'thp', 'samples': '6',
                 'prefault': 'true'},
       'upg-b': {'mode': 'balance', 'backing': 'thp', 'sustain_ms': '1000',
                 'step_pages': '8', 'floor_pages': '8', 'prefault': 'true'}}
VM_MIB = 64
UPGRADE = '/var/lib/tlbbalance/last-upgrade.json'
# A bound on a VM's unmanaged window across a module reload that says
# "stuck", not a performance goal: windows are printed (0.66-3.5 s at
# low load; a roll back, which loads twice, 8.2 s at load 8.8 here and
# 11.9 s in CI). A timed assertion near the figures seen is a flaky test
# on a shared machine (docs/ansible.md).
WINDOW_S = 60


def nohugepage_vmas(node, pid):
    """VMAs of process pid with VM_NOHUGEPAGE (``nh`` in VmFlags)."""
    return int(node.check("grep -c '^VmFlags:.* nh' /proc/%d/smaps; true"
                          % pid).split()[0])


def guest_ram_nohugepage_vmas(node, pid, ranges):
    """VMAs of process pid inside its guest RAM (the module's ``ranges``
    text, read while it was registered) with VM_NOHUGEPAGE. Not the whole
    process: from Linux 6.8 (so on 6.12, after stage 5c) the kernel marks
    every MAP_STACK thread stack VM_NOHUGEPAGE ("mm: mmap: map MAP_STACK
    to VM_NOHUGEPAGE"): a never-registered QEMU in the node on 6.12 has 6
    such VMAs (3 stacks of 8 MiB and their guard pages), on 6.1 none.
    What the module may set, and release must clear, is guest RAM's."""
    ram = []
    for line in ranges.splitlines():
        hva, length = (int(x, 0) for x in line.split()[:2])
        ram.append((hva, hva + length))
    assert ram, 'no guest RAM ranges for pid %d' % pid
    n = start = end = 0
    for line in node.check('cat /proc/%d/smaps' % pid).splitlines():
        head = line.split(None, 1)[0] if line.strip() else ''
        if re.match(r'^[0-9a-f]+-[0-9a-f]+$', head):
            start, end = (int(x, 16) for x in head.split('-'))
        elif line.startswith('VmFlags:') and ' nh' in line and \
                any(start < e and s < end for s, e in ram):
            n += 1
    return n


def registrations(node):
    """{vm: {pid, mode, and each parameter its flavor set}} as the
    module holds them (None: not registered)."""
    return scenario.registrations(node, VMS)


def vms_unchanged(node):
    """The VMs still run in the same QEMU processes, held by the module
    with the parameters they had at stage 3b."""
    for vm, pid in STATE['pids'].items():
        assert scenario.qemu_pid(node, vm) == pid, vm
        assert node.check('virsh domstate %s' % vm).strip() == 'running'
    assert registrations(node) == STATE['registered']


def test_3b_managed_vms_running(fleet, rollout):
    """Two managed VMs started through the hook the role installed."""
    assert STATE['drift run'].rc == 0, 'the drift run failed'
    node = fleet.node
    # their RAM written once, then halted: the node's CPUs are left to
    # the DKMS build of stage 5; the hold on upg-b comes from the
    # injection backend, not from guest activity
    STATE['pids'] = scenario.start_idle_vms(node, VMS,
                                            nodelib.build_payload(), VM_MIB)
    reg = registrations(node)
    scenario.check_registered(reg, VMS, STATE['pids'])
    STATE['registered'] = reg
    # a hold in force on upg-b: the release before a reload must lift it
    pid = STATE['pids']['upg-b']
    base = nohugepage_vmas(node, pid)
    scenario.inject(node, 'upg-b', 2180000, 400)
    STATE['held'] = wait_until(
        'upg-b held (VM_NOHUGEPAGE on its guest RAM)',
        lambda: max(nohugepage_vmas(node, pid) - base, 0), 120, 1)
    print('QEMU pids at stage 3b: %s; upg-b held on %d VMA(s) (%d before)'
          % (STATE['pids'], STATE['held'], base))


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
                     r'\d+:\d+: (?:fatal )?error:', res.out), res.out[-4000:]
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
    # qnode keeps the module it had, its VMs never released
    node = fleet.node
    assert node.check('cat /sys/module/tlbbalance/version').strip() == \
        '0.1.0'
    vms_unchanged(node)
    assert node.run('test -e %s' % UPGRADE).rc != 0


def test_5_fixed_release_completes(fleet, rollout):
    """Also the module upgrade 0.1.0 -> 0.1.1 under the running VMs."""
    assert STATE['broken release'].rc != 0, 'stage 4 did not run'
    node = fleet.node
    assert 'pids' in STATE, 'stage 3b did not run'
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
    # the VMs: released (hold lifted), registered again, same processes
    vms_unchanged(node)
    released = json.loads(node.check('cat /run/tlbbalance/released.json'))
    assert sorted(e['vm'] for e in released['released']) == sorted(VMS)
    for e in released['released']:
        assert e['nohugepage_vmas'] == 0, released
    assert released['errors'] == [], released
    rec = json.loads(node.check('cat %s' % UPGRADE))
    STATE['upgrade record'] = rec
    print('upgrade 0.1.0 -> 0.1.1 on qnode: QEMU pids before %s, after %s;'
          ' windows %s' % (STATE['pids'], {
              vm: scenario.qemu_pid(node, vm) for vm in VMS},
              {w['vm']: w['window_s'] for w in rec['windows']}))
    assert (rec['result'], rec['from'], rec['to']) == (
        'upgraded', '0.1.0', '0.1.1'), rec
    assert sorted(w['vm'] for w in rec['windows']) == sorted(VMS), rec
    for w in rec['windows']:
        assert w['registered'] and w['same_pid'], rec
        assert 0 < w['window_s'] <= WINDOW_S, rec
        # the play printed it
        assert re.search(r'window %s: unmanaged [\d.]+ s \(pid %d\)'
                         % (w['vm'], w['pid']), res.out), res.out[-4000:]


def test_5b_rerun_after_the_upgrade_changes_nothing(fleet, rollout):
    assert STATE['fixed release'].rc == 0, 'stage 5 failed'
    res = run(fleet, 'rerun after the upgrade',
              tlbbalance_module_version='0.1.1',
              tlbbalance_module_src=STATE['src']['0.1.1'],
              tlbbalance_options={'default_mode': 'balance'})
    assert res.rc == 0, res.out[-5000:]
    for host in ALL:
        ok(res, host, changed=0)
    vms_unchanged(fleet.node)


def test_6_module_that_does_not_load_rolls_back(fleet, rollout):
    """A broken N+1 that builds but does not load: qnode goes back to
    0.1.1 by itself with its VMs registered, the batch halts."""
    assert STATE['fixed release'].rc == 0, 'stage 5 failed'
    node = fleet.node
    # Built here against the node's headers (seconds; a DKMS build in
    # the node takes minutes) into the working tree's out/ (the node
    # sees this machine's root read-only), given as a prebuilt module.
    src = module_tree(os.path.join(fleet.dir, 'src-0.1.2'), replace=(
        'ret = tlbb_configfs_init();',
        'ret = -ENODEV;  /* release 0.1.2 does not load */'),
        version='0.1.2')
    out = os.path.join(REPO, 'out', 'ansible-0.1.2-%d' % os.getpid())
    shutil.rmtree(out, ignore_errors=True)
    ko = boot.build_module(node.kernel, out, src=src, rebuild=True)
    before = node.check(NODE_STATE.replace('0.1.0', '0.1.1'))
    res = run(fleet, 'release that does not load',
              inventory=node_inventory(tlbbalance_module_install='prebuilt',
                                       tlbbalance_module_ko=ko),
              tlbbalance_module_version='0.1.2',
              tlbbalance_options={'default_mode': 'balance'})
    assert res.rc != 0, res.out[-3000:]
    assert res.hosts['qnode']['failed'] == 1, res.recap_text()
    assert 'fatal: [qnode]: FAILED!' in res.out, res.out[-4000:]
    assert re.search(r'tlbbalance-module: tlbb-node: loading tlbbalance '
                     r'prebuilt [0-9a-f]+ failed: .*No such device.*; '
                     r'rolled back to the previous build \(0\.1\.1\): 2 '
                     r'VM\(s\) registered again', res.out), res.out[-4000:]
    ok(res, 'h1', changed=0)
    assert 'h2' not in res.hosts and 'h3' not in res.hosts, \
        res.recap_text()
    # 0.1.1 loaded again and installed as before (parameters, DKMS)
    assert node.check('cat /sys/module/tlbbalance/version').strip() == \
        '0.1.1'
    assert node.check(NODE_STATE.replace('0.1.0', '0.1.1')) == before
    vms_unchanged(node)
    rec = json.loads(node.check('cat %s' % UPGRADE))
    print('rolled back on qnode: QEMU pids %s; windows %s' % (
        {vm: scenario.qemu_pid(node, vm) for vm in VMS},
        {w['vm']: w['window_s'] for w in rec['windows']}))
    assert rec['result'] == 'rolled-back' and rec['from'] == '0.1.1', rec
    assert 'No such device' in rec['reason'], rec
    for w in rec['windows']:
        assert w['registered'] and w['same_pid'], rec
        assert 0 < w['window_s'] <= WINDOW_S, rec
    shutil.rmtree(out, ignore_errors=True)
