# SPDX-License-Identifier: Apache-2.0
"""CPU topology and DVMBM detection read from a real arm64 kernel's sysfs.

Boots Debian's arm64 kernel under qemu-system-aarch64 (TCG) with
``-smp 4,sockets=1,clusters=2,cores=2`` through the module tests' own
harness (kernel-module/tests/run-kernels.sh, TLBB_ARCH=arm64), running only
the in-guest test t_topology.sh, which checks the topology directories and
copies every /sys/devices/system/cpu/cpu*/topology file and /proc/cmdline
into the console.  The tree is rebuilt here and nova_tlbbalance's own
readers run on it: the probes behind ``tlbbalance status``/``verify``
(vmreport.host_facts), the hook's tlbi_scope check
(rules.scope_problem, through rules.running), the driver's pinning
check (guest_config.check_pins), all over the one reader
hostfacts.cpu_topology, and the DVMBM detection, once with
``kvm-arm.dvmbm_enabled=1`` on the guest's kernel command line and once
without.  busybox has no Python, hence the copy.

Run by ``tox -e kmod-arm64`` after the module tests (about 30 s a boot).
TLBB_TOPOLOGY_KERNEL picks the kernel line (default 6.1).
"""

import glob
import os
import subprocess

import pytest

from nova_tlbbalance import guest_config
from nova_tlbbalance import hostfacts
from nova_tlbbalance import modclient
from nova_tlbbalance import rules
from nova_tlbbalance.policy import Policy
from nova_tlbbalance.probes import vmreport

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
RUN = os.path.join(TOP, 'kernel-module', 'tests', 'run-kernels.sh')
SMP = '4,sockets=1,clusters=2,cores=2'
KERNEL = os.environ.get('TLBB_TOPOLOGY_KERNEL', '6.1')


def boot(out, append):
    """Boot the arm64 guest once; the console log's lines."""
    env = dict(os.environ, TLBB_ARCH='arm64', TLBB_KERNELS=KERNEL,
               TLBB_TESTS='t_topology', TLBB_NO_MODULE='1',
               TLBB_HARNESS_SELFTEST='0', TLBB_QEMU_SMP=SMP,
               TLBB_APPEND=append, TLBB_OUT=str(out))
    r = subprocess.run([RUN], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True,
                       timeout=900)
    print(r.stdout)
    assert r.returncode == 0, 'run-kernels.sh failed:\n' + r.stdout
    logs = glob.glob(os.path.join(str(out), '*', 'console.log'))
    assert len(logs) == 1, logs
    with open(logs[0], errors='replace') as f:
        return [ln.rstrip('\r\n') for ln in f]


def rebuild(lines, root):
    """The guest's sysfs files and /proc/cmdline under ``root``; the
    guest's kernel log lines."""
    files = 0
    for ln in lines:
        if ln.startswith('TLBB-SYSFS '):
            _, path, value = (ln.split(' ', 2) + [''])[:3]
            dest = os.path.join(root, 'sys', path)
        elif ln.startswith('TLBB-PROC '):
            _, path, value = (ln.split(' ', 2) + [''])[:3]
            dest = os.path.join(root, 'proc', path)
        else:
            continue
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, 'w') as f:
            f.write(value + '\n')
        files += 1
    dmesg = lines[lines.index('TLBB-DMESG-BEGIN') + 1:
                  lines.index('TLBB-DMESG-END')]
    return files, dmesg


@pytest.fixture(scope='module', params=['dvmbm', 'plain'])
def guest(request, tmp_path_factory):
    out = tmp_path_factory.mktemp('boot-' + request.param)
    append = 'kvm-arm.dvmbm_enabled=1' if request.param == 'dvmbm' else ''
    lines = boot(out / 'run', append)
    root = str(out / 'tree')
    files, dmesg = rebuild(lines, root)
    assert files > 4 * 5, 'too few sysfs files copied: %d' % files
    return request.param, root, dmesg


def test_probe_reads_the_kernels_topology(guest):
    _, root, _ = guest
    topo = hostfacts.cpu_topology(os.path.join(root, 'sys'))
    assert sorted(topo) == [0, 1, 2, 3]
    assert {t.package for t in topo.values()} == {0}
    # arm64 has no die level: every CPU is in die 0 of its package.
    assert not os.path.exists(os.path.join(
        root, 'sys', 'devices/system/cpu/cpu0/topology/die_id'))
    assert {t.die for t in topo.values()} == {0}
    # Two clusters of two cores, CPUs numbered cluster by cluster.
    assert topo[0].cluster == topo[1].cluster
    assert topo[2].cluster == topo[3].cluster
    assert topo[0].cluster != topo[2].cluster
    assert hostfacts.span({0, 1}, topo) == {'dies': 1, 'clusters': 1}
    assert hostfacts.span({1, 2}, topo) == {'dies': 1, 'clusters': 2}
    assert hostfacts.span(set(topo), topo) == {'dies': 1, 'clusters': 2}


def test_status_host_facts(guest):
    """What ``tlbbalance status``/``verify`` print about the host."""
    _, root, _ = guest
    roots = vmreport.Roots(proc=os.path.join(root, 'proc'),
                           sys=os.path.join(root, 'sys'))
    facts = vmreport.host_facts(roots, modclient.Client(
        os.path.join(root, 'no-configfs')))
    assert facts.cpus == 4
    assert facts.thp == 'always'             # Debian's default
    assert facts.hpage_pmd_size == 2 << 20   # 4 KiB pages
    assert facts.dies == 1
    assert facts.clusters == 2


def test_hook_tlbi_scope_check(guest):
    _, root, _ = guest
    topo = hostfacts.cpu_topology(os.path.join(root, 'sys'))
    assert rules.scope_problem('cluster', {0, 1}, topo) is None
    assert rules.scope_problem('cluster', {2, 3}, topo) is None
    problem = rules.scope_problem('cluster', {1, 2}, topo)
    assert problem == ('tlbbalance:tlbi_scope=cluster: the vCPUs may run on '
                       'host CPUs 1-2, which span 2 clusters; the TLBI '
                       'broadcast cannot be scoped')
    # One package and no die level: any CPU set is "one die" on arm64.
    assert rules.scope_problem('die', {0, 1, 2, 3}, topo) is None


def test_driver_pinning_check(guest):
    # The driver's pin check judges with the same table as the hook.
    _, root, _ = guest
    topo = hostfacts.cpu_topology(os.path.join(root, 'sys'))
    pol = Policy(mode='off', backing='none', tlbi_scope='cluster',
                 strict=True)
    guest_config.check_pins({0: {0}, 1: {1}}, 2, pol, topo)
    with pytest.raises(guest_config.PolicyConflict, match='2 clusters'):
        guest_config.check_pins({0: {1}, 1: {2}}, 2, pol, topo)


def test_dvmbm_detection(guest):
    kind, root, dmesg = guest
    got = hostfacts.dvmbm(os.path.join(root, 'proc'),
                          os.path.join(root, 'sys'), kmsg_lines=dmesg)
    cmdline = open(os.path.join(root, 'proc', 'cmdline')).read()
    if kind == 'dvmbm':
        assert 'kvm-arm.dvmbm_enabled=1' in cmdline
        assert got == {'enabled': True, 'source': 'kernel command line'}
    else:
        assert 'dvmbm' not in cmdline
        # Debian's kernel has no DVMBM: no parameter, no log line.
        assert not any('dvmbm' in ln for ln in dmesg)
        assert got['enabled'] is False
        assert got['source'].startswith('no DVMBM support found')
