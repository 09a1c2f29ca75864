# SPDX-License-Identifier: Apache-2.0
"""The role's deb mode on the kernel node: tlbbalance-dkms (make deb)
installed, upgraded under running VMs and removed, its maintainer scripts
doing the work (docs/upgrade.md, "Upgrading the Debian package").

It goes on from test_rollout.py's last stage (removal), on qnode only
(--limit: the namespace hosts load no module), with the two managed VMs
of stage 3b still running, released and unmanaged:

d1. the role installs tlbbalance-dkms VERSION (tlbbalance_module_install:
    deb): DKMS builds it in the node, the postinst loads it and
    `tlbbalance reconcile` registers both running VMs again with their
    flavors' parameters (same QEMU pids), with the Python the role wrote
    to /etc/default/tlbbalance;
d2. the role installs VERSION+test1 (the same tree, make deb's +SUFFIX)
    under the running VMs: the old build stays loaded through the DKMS
    build, then the postinst reloads (release, rmmod, modprobe, register
    again): same pids, the same registrations, each VM's unmanaged
    window <= 10 s, printed by the play and recorded; a rerun changes
    nothing;
d3. `apt-get remove tlbbalance-dkms` by hand in a root shell of the node
    (no tlbbalance on its PATH): the prerm releases both VMs (left
    running, no VM_NOHUGEPAGE on their guest RAM) and unloads the
    module, DKMS removes its builds; then the role's removal in deb mode
    takes what it wrote, and its rerun changes nothing.
"""

import json
import os
import re
import subprocess

import pytest

import scenario
import test_rollout as tr

NEWER = '+test1'
DKMS_DEB = 'tlbbalance-dkms_%s_all.deb'


def build_debs(out, suffix):
    """make deb's script (tools/deb/build.sh) into out, the tree as
    version VERSION+suffix; that version."""
    script = os.path.join(tr.REPO, 'tools', 'deb', 'build.sh')
    p = subprocess.run([script, out] + ([suffix] if suffix else []),
                       capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, (p.stdout + p.stderr)[-4000:]
    return subprocess.run(
        ['dpkg-parsechangelog', '-l', os.path.join(tr.REPO, 'debian',
                                                   'changelog'),
         '-SVersion'], capture_output=True, text=True,
        check=True).stdout.strip() + suffix


@pytest.fixture(scope='module')
def debs(fleet):
    """{version: tlbbalance-dkms .deb}: the tree as it is and as
    VERSION+test1, built on this machine (seconds; make deb)."""
    assert tr.STATE.get('removal') is not None and \
        tr.STATE['removal'].rc == 0, 'test_rollout.py stage 7 did not pass'
    out = {}
    for suffix in ('', NEWER):
        d = os.path.join(fleet.dir, 'deb' + suffix)
        version = build_debs(d, suffix)
        out[version] = os.path.join(d, DKMS_DEB % version)
    return out


def deb_inventory(deb):
    return tr.node_inventory(tlbbalance_module_install='deb',
                             tlbbalance_module_deb=deb)


def loaded(node):
    return node.check('cat /sys/module/tlbbalance/version').strip()


def test_d1_install_registers_the_running_vms(fleet, debs):
    node = fleet.node
    version, newer = sorted(debs, key=len)
    assert tr.registrations(node) == {vm: None for vm in tr.VMS}
    res = tr.run(fleet, 'deb install', limit='qnode',
                 inventory=deb_inventory(debs[version]))
    assert res.rc == 0, res.out[-5000:]
    tr.ok(res, 'qnode')
    assert loaded(node) == version
    assert node.check("dpkg-query -W -f '${Version} ${db:Status-Abbrev}' "
                      "tlbbalance-dkms").strip() == '%s ii' % version
    assert 'TLBBALANCE_PYTHON=/usr/bin/python3' in \
        node.check('cat /etc/default/tlbbalance')
    assert 'tlbbalance-dkms: loaded tlbbalance %s' % version in res.out, \
        res.out[-4000:]
    # registered again by the postinst's reconcile: same processes, the
    # parameters of their flavors
    tr.vms_unchanged(node)
    print('deb %s installed on qnode in %.0f s: VMs %s registered again'
          % (version, res.secs, tr.STATE['pids']))


def test_d2_upgrade_under_running_vms(fleet, debs):
    assert tr.STATE['deb install'].rc == 0, 'd1 failed'
    node = fleet.node
    version, newer = sorted(debs, key=len)
    res = tr.run(fleet, 'deb upgrade', limit='qnode',
                 inventory=deb_inventory(debs[newer]))
    assert res.rc == 0, res.out[-5000:]
    tr.ok(res, 'qnode')
    assert loaded(node) == newer
    status = node.check('dkms status -m tlbbalance')
    assert 'tlbbalance/%s,' % newer in status and \
        'tlbbalance/%s,' % version not in status, status
    tr.vms_unchanged(node)
    released = json.loads(node.check(
        'cat /run/tlbbalance-dkms/released.json'))
    assert sorted(e['vm'] for e in released['released']) == sorted(tr.VMS)
    assert released['errors'] == [], released
    rec = json.loads(node.check('cat %s' % tr.UPGRADE))
    print('deb upgrade %s -> %s on qnode in %.0f s: QEMU pids %s; windows '
          '%s' % (version, newer, res.secs, {
              vm: scenario.qemu_pid(node, vm) for vm in tr.VMS},
              {w['vm']: w['window_s'] for w in rec['windows']}))
    assert (rec['result'], rec['from'], rec['to'], rec['by']) == (
        'upgraded', version, newer, 'tlbbalance-dkms'), rec
    assert sorted(w['vm'] for w in rec['windows']) == sorted(tr.VMS), rec
    for w in rec['windows']:
        assert w['registered'] and w['same_pid'], rec
        assert 0 < w['window_s'] <= tr.WINDOW_S, rec
        assert re.search(r'window %s: unmanaged [\d.]+ s \(pid %d\)'
                         % (w['vm'], w['pid']), res.out), res.out[-4000:]
    again = tr.run(fleet, 'deb upgrade rerun', limit='qnode',
                   inventory=deb_inventory(debs[newer]))
    assert again.rc == 0, again.out[-5000:]
    tr.ok(again, 'qnode', changed=0)
    tr.vms_unchanged(node)


def test_d3_removal_by_hand_then_by_the_role(fleet, debs):
    assert tr.STATE['deb upgrade'].rc == 0, 'd2 failed'
    node = fleet.node
    ram = {vm: node.check('cat %s/vms/%s/ranges' % (scenario.CONFIGFS, vm))
           for vm in tr.VMS}
    assert node.run('command -v tlbbalance').rc != 0, \
        'tlbbalance is on the PATH: this would not test the settings file'
    out = node.check('DEBIAN_FRONTEND=noninteractive apt-get remove -y -q '
                     'tlbbalance-dkms 2>&1', timeout=900)
    print(out[-1500:])
    assert re.search(r'tlbbalance-dkms: released 2 VM\(s\) \(left '
                     r'running\); tlbbalance \S+ unloaded', out), out[-3000:]
    assert node.run('test -d /sys/module/tlbbalance').rc != 0
    assert node.check('dkms status -m tlbbalance').strip() == ''
    for vm, pid in tr.STATE['pids'].items():
        assert scenario.qemu_pid(node, vm) == pid, vm
        assert node.check('virsh domstate %s' % vm).strip() == 'running'
        assert tr.guest_ram_nohugepage_vmas(node, pid, ram[vm]) == 0, vm
    res = tr.run(fleet, 'deb removal', limit='qnode',
                 tlbbalance_state='absent',
                 inventory=deb_inventory(''))
    assert res.rc == 0, res.out[-5000:]
    tr.ok(res, 'qnode')
    assert node.check('ls -d /etc/default/tlbbalance /var/cache/tlbbalance '
                      '/usr/src/tlbbalance* /etc/modprobe.d/tlbbalance.conf '
                      '2>/dev/null; true').strip() == ''
    again = tr.run(fleet, 'deb removal rerun', limit='qnode',
                   tlbbalance_state='absent', inventory=deb_inventory(''))
    assert again.rc == 0, again.out[-5000:]
    tr.ok(again, 'qnode', changed=0)
    print('deb removed on qnode: QEMU pids before %s, after %s' % (
        tr.STATE['pids'], {vm: scenario.qemu_pid(node, vm)
                           for vm in tr.VMS}))
