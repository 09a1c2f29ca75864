# SPDX-License-Identifier: Apache-2.0
"""Stage 7 of the rollout, removal (tlbbalance_state=absent), after
test_rollout.py's stages 0-6 and test_rollout_deb.py's d1 and d3 (qnode
in deb mode, tlbbalance-dkms 0.2.0 loaded, the two VMs of stage 3b
registered): the VMs released and left running (same pids, no
VM_NOHUGEPAGE, no registration), the module unloaded by the package's
prerm (apt-get purge, from the role; the prerm runs the tlbbalance
command with the Python named in /etc/default/tlbbalance), DKMS builds
and sources, the package, its settings, cached .deb and apt archive's
list and key, hook, hook settings,
nova.conf fragment and provider config removed on every host; a rerun
changes nothing."""

import re

import scenario
import test_rollout as tr
import test_rollout_deb as td

# what the package and the role's deb mode put on qnode
DEB_FILES = ('/etc/default/tlbbalance', '/var/cache/tlbbalance',
             '/usr/lib/modules-load.d/tlbbalance.conf',
             '/usr/lib/tlbbalance-dkms', td.APT_LIST, td.APT_KEY)


def test_7_removal(fleet):
    assert tr.STATE['deb handover'].rc == 0, 'test_rollout_deb.py d1 failed'
    node = fleet.node
    inventory = td.deb_inventory('')
    before = {h: tr.restarts(fleet, h) for h in tr.ALL}
    # each VM's guest RAM, as the module holds it, for the check below
    ram = {vm: node.check('cat %s/vms/%s/ranges' % (scenario.CONFIGFS, vm))
           for vm in tr.VMS}
    res = tr.run(fleet, 'removal', tlbbalance_state='absent',
                 inventory=inventory)
    assert res.rc == 0, res.out[-5000:]
    for host in tr.ALL:
        tr.ok(res, host)
        assert tr.restarts(fleet, host) == before[host] + [
            'libvirtd', 'nova-compute'], host
        for path in tr.FRESH:
            probe = 'test -e %s' % path
            rc = node.run(probe).rc if host == 'qnode' else \
                [x for x in fleet.hosts if x.name == host][0].sh(
                    probe, check=False).returncode
            assert rc != 0, '%s left on %s' % (path, host)
    assert re.search(r'tlbbalance-dkms: released 2 VM\(s\) \(left '
                     r'running\); tlbbalance %s unloaded'
                     % re.escape(td.BASE), res.out), \
        res.out[-4000:]
    assert node.run('test -d /sys/module/tlbbalance').rc != 0
    assert node.check('dkms status -m tlbbalance').strip() == ''
    assert node.run('dpkg-query -W -f "${db:Status-Abbrev}" '
                    'tlbbalance-dkms').stdout.strip() in ('', 'un'), \
        'tlbbalance-dkms is not purged'
    assert node.check('ls -d /usr/src/tlbbalance* /etc/modprobe.d/'
                      'tlbbalance.conf /etc/modules-load.d/tlbbalance.conf '
                      '/var/lib/tlbbalance %s 2>/dev/null; true'
                      % ' '.join(DEB_FILES)).strip() == ''
    # libvirtd was restarted without the hook: wait until it answers
    node.check('for i in $(seq 240); do virsh -q version >/dev/null 2>&1 '
               '&& break; sleep 0.5; done', timeout=180)
    for vm, pid in tr.STATE['pids'].items():
        assert scenario.qemu_pid(node, vm) == pid, vm
        assert node.check('virsh domstate %s' % vm).strip() == 'running'
        # guest RAM only, not the whole process: on 6.12 QEMU's thread
        # stacks are VM_NOHUGEPAGE by the kernel's doing (see the helper)
        assert tr.guest_ram_nohugepage_vmas(node, pid, ram[vm]) == 0, vm
    print('removed on qnode: QEMU pids before %s, after %s' % (
        tr.STATE['pids'], {vm: scenario.qemu_pid(node, vm)
                           for vm in tr.VMS}))
    res = tr.run(fleet, 'removal rerun', tlbbalance_state='absent',
                 inventory=inventory)
    assert res.rc == 0, res.out[-5000:]
    for host in tr.ALL:
        tr.ok(res, host, changed=0)
