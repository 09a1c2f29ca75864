# SPDX-License-Identifier: Apache-2.0
"""The role's deb mode on the kernel node: tlbbalance-dkms (make deb)
takes the module over from the role's dkms mode under running VMs, its
maintainer scripts doing the work (docs/upgrade.md, "Switching to the
Debian package" and "Upgrading the Debian package").

It goes on from test_rollout.py's stage 6 (0.1.1 from the role's dkms
mode loaded again after the roll back), on qnode only (--limit: the
namespace hosts load no module), with the two managed VMs of stage 3b
running and registered; test_rollout_removal.py (stage 7) removes the
fleet after it, qnode in deb mode:

d1. the role in deb mode installs tlbbalance-dkms 0.2.0 (make deb of the
    tree as that version, newer than the role's 0.1.1): DKMS builds it
    in the node, the postinst reloads under the running VMs (release,
    rmmod 0.1.1, modprobe 0.2.0, register again: same QEMU pids, the
    same registrations, each VM's unmanaged window <= 10 s, recorded by
    tlbbalance-dkms), with the Python the role wrote to
    /etc/default/tlbbalance; then the role hands over: the dkms mode's
    0.1.1 (DKMS build and source), its load-at-boot entry and roll-back
    copy are removed, the package's own entry stays; a rerun changes
    nothing;
d2. the kernel upgrade 6.1 -> 6.12 with the package and the VMs (docs/
    upgrade.md, "Kernel upgrades"): 6.12's image and headers installed
    in the node as their packages install them, and what the headers'
    postinst runs (/etc/kernel/header_postinst.d/dkms: DKMS's
    autoinstall) builds tlbbalance 0.2.0 for 6.12, signed with DKMS's
    own key like the 6.1 build, and leaves the running kernel's module
    and VMs alone; the node rebooted into 6.12 on its disk (the same
    machine) loads the module at boot from the package's modules-load.d
    entry with the role's parameters; the VMs started again are
    registered by the hook; `tlbbalance reconcile` finds nothing to do;
    the role's rerun changes only the huge pages (a sysfs reservation
    does not outlive a boot);
d3. the role in dkms mode on the node with the package installed
    refuses, naming the package and what to do; nothing changes.

Not run here (d2): an upgrade of the package itself (0.2.0 ->
0.2.0+test1) under the VMs costs one more DKMS build in the node (about
7 minutes of the suite under TCG, past CI's budget) for little that d1
does not show: the postinst's reload is the same code, and the dpkg side
of an upgrade (the old version's build removed, the new one built) is
tests/packaging/test_deb.py's, in a root. It passed on this node once
(2026-11-27, commit 0037103): 410 s, windows <= 10 s, rerun changed=0.
"""

import json
import os
import re
import subprocess
import time

import pytest

import node as nodelib
import scenario
import test_rollout as tr
from tlbbwait import wait_until

BASE = '0.2.0'
# d2: the next kernel line (Debian's 6.12 on bookworm)
NEXT_KERNEL = '6.12'
# the CN of the key DKMS makes for itself (/var/lib/dkms/mok.key, .pub)
DKMS_KEY_CN = 'DKMS module signing key'
DKMS_DEB = 'tlbbalance-dkms_%s_all.deb'


def build_deb(out, version):
    """make deb's script (tools/deb/build.sh) into out, the tree as
    version (a whole version, or the changelog's +SUFFIX)."""
    script = os.path.join(tr.REPO, 'tools', 'deb', 'build.sh')
    p = subprocess.run([script, out, version], capture_output=True,
                       text=True, timeout=1200)
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    return os.path.join(out, DKMS_DEB % version)


@pytest.fixture(scope='module')
def deb(fleet):
    """The tlbbalance-dkms .deb of the tree as 0.2.0, built on this
    machine (seconds; make deb)."""
    assert tr.STATE.get('release that does not load') is not None, \
        'test_rollout.py stage 6 did not run'
    return build_deb(os.path.join(fleet.dir, 'deb-' + BASE), BASE)


def deb_inventory(deb):
    return tr.node_inventory(tlbbalance_module_install='deb',
                             tlbbalance_module_deb=deb)


def loaded(node):
    return node.check('cat /sys/module/tlbbalance/version').strip()


def check_reload(node, res, old, new):
    """The postinst's reload old -> new under the running VMs: same
    processes, registered again with their parameters, each window
    printed by the play and recorded."""
    assert 'tlbbalance-dkms: reloaded tlbbalance (%s -> %s): 2 VM(s) ' \
        'released and registered again' % (old, new) in res.out, \
        res.out[-4000:]
    tr.vms_unchanged(node)
    released = json.loads(node.check(
        'cat /run/tlbbalance-dkms/released.json'))
    assert sorted(e['vm'] for e in released['released']) == sorted(tr.VMS)
    assert released['errors'] == [], released
    rec = json.loads(node.check('cat %s' % tr.UPGRADE))
    print('deb %s -> %s on qnode in %.0f s: QEMU pids %s; windows %s' % (
        old, new, res.secs,
        {vm: scenario.qemu_pid(node, vm) for vm in tr.VMS},
        {w['vm']: w['window_s'] for w in rec['windows']}))
    assert (rec['result'], rec['from'], rec['to'], rec['by']) == (
        'upgraded', old, new, 'tlbbalance-dkms'), rec
    assert sorted(w['vm'] for w in rec['windows']) == sorted(tr.VMS), rec
    for w in rec['windows']:
        assert w['registered'] and w['same_pid'], rec
        assert 0 < w['window_s'] <= tr.WINDOW_S, rec
        assert re.search(r'window %s: unmanaged [\d.]+ s \(pid %d\)'
                         % (w['vm'], w['pid']), res.out), res.out[-4000:]


def test_d1_package_takes_over_from_the_dkms_mode(fleet, deb):
    node = fleet.node
    assert loaded(node) == '0.1.1'
    assert tr.registrations(node) == tr.STATE['registered']
    res = tr.run(fleet, 'deb handover', limit='qnode',
                 inventory=deb_inventory(deb))
    assert res.rc == 0, res.out[-5000:]
    tr.ok(res, 'qnode')
    assert loaded(node) == BASE
    assert node.check("dpkg-query -W -f '${Version} ${db:Status-Abbrev}' "
                      "tlbbalance-dkms").strip() == '%s ii' % BASE
    assert 'TLBBALANCE_PYTHON=/usr/bin/python3' in \
        node.check('cat /etc/default/tlbbalance')
    check_reload(node, res, '0.1.1', BASE)
    # the dkms mode's leftovers are gone, the package's own entry stays
    assert 'DKMS tlbbalance/0.1.1 (the role\'s dkms mode) removed' in \
        res.out, res.out[-4000:]
    status = node.check('dkms status -m tlbbalance')
    assert re.findall(r'^tlbbalance/([^,]+),', status, re.M) == [BASE], \
        status
    assert node.check('ls -d /usr/src/tlbbalance* /etc/modules-load.d/'
                      'tlbbalance.conf /var/lib/tlbbalance/loaded.ko '
                      '/run/tlbbalance 2>/dev/null; true').split() == [
        '/usr/src/tlbbalance-%s' % BASE]
    assert node.check('grep -v "^#" /usr/lib/modules-load.d/'
                      'tlbbalance.conf').strip() == 'tlbbalance'
    again = tr.run(fleet, 'deb handover rerun', limit='qnode',
                   inventory=deb_inventory(deb))
    assert again.rc == 0, again.out[-5000:]
    tr.ok(again, 'qnode', changed=0)
    tr.vms_unchanged(node)


def signer(node, ko):
    return node.check('modinfo -F signer %s' % ko).strip()


def test_d2_kernel_upgrade_and_reboot(fleet, deb):
    """The kernel upgrade under the package: DKMS builds for the new
    kernel when its headers come, the module loads at boot, the VMs
    started again are registered. The packages' files, not dpkg: the
    image's modules are a subset (what the node loads, tools/node/node.py
    module_subset; depmod run as the image's postinst runs it) and the
    headers the kernel cache's extracted tree linked as
    /lib/modules/<abi>/build, as for 6.1 (docs/node.md)."""
    assert tr.STATE['deb handover rerun'].rc == 0, 'd1 failed'
    node = fleet.node
    old = node.kernel
    new = nodelib.Kernel(NEXT_KERNEL)
    if old.abi == new.abi:
        pytest.skip('the node already runs %s (TLBB_E2E_KERNEL)' % new.abi)
    assert node.check('uname -r').strip() == old.abi
    times = {}

    def took(what, secs):
        # printed as it comes: a failure later keeps the times so far
        times[what] = secs
        print('d2: %s %.1f s' % (what, secs), flush=True)
    ko_old = node.check('modinfo -k %s -n tlbbalance' % old.abi).strip()
    assert signer(node, ko_old) == DKMS_KEY_CN, ko_old

    # linux-image-6.12: its modules and their depmod; linux-headers-6.12:
    # its tree, then its postinst's DKMS hook (autoinstall for that kernel)
    t0 = time.monotonic()
    subset = nodelib.module_subset(new, os.path.join(fleet.dir, 'modules'))
    node.check('mkdir -p /lib/modules/{abi} && cp -a {subset}/. '
               '/lib/modules/{abi}/ && depmod -a {abi} && '
               'ln -sfn {headers} /lib/modules/{abi}/build'.format(
                   abi=new.abi, subset=subset, headers=new.headers),
               timeout=600)
    took('image and headers installed', time.monotonic() - t0)
    t0 = time.monotonic()
    out = node.check('/etc/kernel/header_postinst.d/dkms %s 2>&1'
                     % new.abi, timeout=1800)
    took('headers postinst (DKMS autoinstall for %s)' % new.abi,
         time.monotonic() - t0)
    status = node.check('dkms status -m tlbbalance')
    for abi in (old.abi, new.abi):
        assert re.search(r'^tlbbalance/%s, %s, \S+: installed'
                         % (re.escape(BASE), re.escape(abi)), status,
                         re.M), (status, out[-3000:])
    ko_new = node.check('modinfo -k %s -n tlbbalance' % new.abi).strip()
    assert node.check('modinfo -F version %s' % ko_new).strip() == BASE
    # signed with the same key as the running kernel's build: DKMS's own
    # (the key a fleet enrols, docs/upgrade.md)
    assert signer(node, ko_new) == DKMS_KEY_CN, ko_new
    assert node.check('modinfo -F sig_key %s' % ko_new) == \
        node.check('modinfo -F sig_key %s' % ko_old)
    # the running kernel's module and the VMs were not touched
    assert loaded(node) == BASE
    tr.vms_unchanged(node)

    # reboot into the new kernel: same disk, same machine
    down, up = node.reboot(kernel=NEXT_KERNEL, moddir='')
    took('power-off', down)
    took('boot into %s' % new.abi, up)
    t0 = time.monotonic()
    fleet.start_node_sshd(node)
    took('sshd', time.monotonic() - t0)
    assert node.check('uname -r').strip() == new.abi
    # loaded at boot from the package's modules-load.d entry, with the
    # role's parameters (/etc/modprobe.d)
    assert loaded(node) == BASE
    assert 'modules-load.d: tlbbalance' in node.check(
        'cat /run/tlbb/boot.log')
    assert node.check('cat /sys/module/tlbbalance/parameters/allow_inject'
                      ).strip() in ('1', 'Y')
    assert node.check('modinfo -n tlbbalance').strip() == ko_new
    # the VMs started again (libvirt kept their definitions on the disk):
    # registered by the hook with their flavor's parameters
    t0 = time.monotonic()
    for vm in tr.VMS:
        assert node.check('virsh domstate %s' % vm).strip() == 'shut off'
        node.check('virsh -q start %s' % vm, timeout=180)
    # the hook registers a VM in its "started" phase, before virsh
    # returns; the bound only covers a slow libvirtd under TCG
    reg = wait_until('both VMs registered after the reboot',
                     lambda: (lambda r: r if all(r.values()) else None)(
                         tr.registrations(node)), 60, 0.5)
    took('VMs started and registered', time.monotonic() - t0)
    pids = {vm: scenario.qemu_pid(node, vm) for vm in tr.VMS}
    for vm in tr.VMS:
        assert reg[vm]['pid'] == str(pids[vm]), reg
        before = dict(tr.STATE['registered'][vm], pid=None)
        assert dict(reg[vm], pid=None) == before, (vm, reg[vm], before)
    for vm in tr.VMS:
        scenario.wait_payload(node, vm, timeout=300)
    print('QEMU pids before the reboot %s, after %s' % (tr.STATE['pids'],
                                                        pids))
    tr.STATE['pids'], tr.STATE['registered'] = pids, reg
    # reconcile after the boot: nothing missing, nothing to change
    out = node.check('tlbbalance reconcile')
    assert re.search(r'^0 changed, 0 error\(s\), 2 already right$', out,
                     re.M), out
    # the role on the rebooted node: only the huge pages (a sysfs
    # reservation does not outlive a boot; docs/ansible.md: the kernel
    # command line keeps one)
    t0 = time.monotonic()
    res = tr.run(fleet, 'rerun after the kernel upgrade', limit='qnode',
                 inventory=deb_inventory(deb))
    took('role rerun', time.monotonic() - t0)
    assert res.rc == 0, res.out[-5000:]
    tr.ok(res, 'qnode', changed=1)
    assert res.changed_tasks('qnode') == ['tlbbalance : Huge pages'], \
        res.changed_lines()
    tr.vms_unchanged(node)
    print('kernel upgrade %s -> %s on qnode, times: %s' % (
        old.abi, new.abi, ', '.join('%s %.1f s' % kv for kv in
                                    times.items())))


def test_d3_dkms_mode_refused_while_the_package_is_installed(fleet, deb):
    assert tr.STATE['deb handover'].rc == 0, 'd1 failed'
    node = fleet.node
    res = tr.run(fleet, 'dkms mode over the package', limit='qnode',
                 tlbbalance_module_src=tr.STATE['src']['0.1.1'],
                 tlbbalance_module_version='0.1.1')
    assert res.rc != 0 and res.hosts['qnode']['failed'] == 1, \
        res.out[-4000:]
    assert 'tlbbalance-dkms (the Debian package) is installed' in res.out \
        and 'tlbbalance_module_install: deb' in res.out, res.out[-4000:]
    assert loaded(node) == BASE
    status = node.check('dkms status -m tlbbalance')
    # one version (built for 6.1 and, since d2, 6.12)
    assert set(re.findall(r'^tlbbalance/([^,]+),', status, re.M)) == \
        {BASE}, status
    tr.vms_unchanged(node)
