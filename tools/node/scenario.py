# SPDX-License-Identifier: Apache-2.0
"""VMs inside a booted node: what the e2e tests and the demo both do.

VMs are defined, started and inspected in the node through
:class:`node.Node`. The tagged domain XML comes from the driver plugin's
own code (``tlbbalance domain apply``, the CLI front of
``nova_tlbbalance.guest_config.apply_to_domain_xml``), run on this machine
under Debian's python3, which has lxml: this module stays standard-library
only, so the e2e venv needs nothing but pytest (see tagged_xml).
"""

import json
import os
import re
import subprocess

import guestxml

from _repo import REPO  # node.py, imported first, put tools/ on sys.path
from tlbbwait import WaitTimeout, wait_until
CONFIGFS = '/sys/kernel/config/tlbbalance'
INJECT = '/sys/kernel/debug/tlbbalance/inject'


class ScenarioError(Exception):
    pass


def serial_log(name):
    return '/var/log/libvirt/qemu/%s.serial.log' % name


def tagged_xml(plain_xml, specs):
    """plain_xml passed through the driver plugin's code with ``specs``
    (flavor extra specs without the ``tlbbalance:`` prefix).

    Runs ``tlbbalance domain apply`` (guest_config.apply_to_domain_xml)
    from the working tree on this machine under Debian's python3 (it has
    python3-lxml): the same code as in the node, at native speed rather
    than under TCG. The node's huge page size is the same 2 MiB.
    """
    argv = ['/usr/bin/python3', '-m', 'nova_tlbbalance', 'domain', 'apply',
            '--huge-page-kib', '2048']
    for kv in specs.items():
        argv += ['-s', '%s=%s' % kv]
    env = dict(os.environ, PYTHONPATH=REPO)
    p = subprocess.run(argv + ['-'], input=plain_xml, capture_output=True,
                       text=True, env=env)
    if p.returncode != 0:
        raise ScenarioError('tlbbalance domain apply failed: %s' % p.stderr)
    return p.stdout


def start_vm(node, name, payload, specs=None, mem_mib=256, vcpus=1,
             pattern='seq', memfd=False, env=None, edit=None):
    """Define and start a payload domain; specs=None: untagged. ``edit``:
    a function applied to the final XML. Returns the XML given to
    libvirt."""
    plain = guestxml.payload_domain(name, payload, serial_log(name),
                                    mem_mib=mem_mib, vcpus=vcpus,
                                    pattern=pattern, memfd=memfd, env=env)
    xml = tagged_xml(plain, specs) if specs else plain
    if edit:
        xml = edit(xml)
    path = '/tmp/%s.xml' % name
    node.write_file(path, xml)
    node.check('virsh -q define %s && virsh -q start %s' % (path, name),
               timeout=180)
    return xml


def start_idle_vms(node, vms, payload, mem_mib, timeout=300):
    """Start each VM of vms ({name: flavor keys}) on the payload that
    writes all its RAM once and halts (cli; hlt, no timer: pause_ms=0):
    its RAM stays mapped and THP-backed, its QEMU process runs on and
    leaves the node's emulated CPUs to other work (a DKMS build: with
    guests sweeping their RAM for ever one took 485 s, 343 s without).
    Waits until each touched its RAM; returns {name: QEMU pid}."""
    for vm, specs in vms.items():
        start_vm(node, vm, payload, specs=specs, mem_mib=mem_mib,
                 pattern='once pause_ms=0')
    for vm in vms:
        wait_payload(node, vm, timeout=timeout)
    return {vm: qemu_pid(node, vm) for vm in vms}


def wait_payload(node, name, timeout=120, passes=0):
    """Wait until the payload touched all its RAM (and ran ``passes``
    more sweeps); returns the last progress line."""
    pat = re.compile(r'tlbb-payload: pass=(\d+) .*errors=(\d+)')
    log = ''

    def there():
        nonlocal log
        log = node.run('cat %s 2>/dev/null' % serial_log(name)).stdout
        if 'tlbb-payload: error' in log:
            raise ScenarioError('payload of %s failed:\n%s' % (name, log))
        m = pat.findall(log)
        if 'tlbb-payload: touched' in log and (
                not passes or (m and int(m[-1][0]) >= passes)):
            return log.strip().splitlines()[-1]
        return None
    try:
        return wait_until('the payload of %s touched its RAM (and ran %d '
                          'passes)' % (name, passes), there, timeout, 1)
    except WaitTimeout as e:
        raise ScenarioError('%s; serial log:\n%s\n%s' % (
            e, log, stall_evidence(node, name)))


# What a guest that does not progress is doing, seen from the node (run
# there by Debian's python3 when wait_payload times out): two snapshots
# GAP seconds apart of the QEMU process's threads (state, CPU ticks,
# wchan, kernel stack of the vCPU threads), the vCPU registers (HMP 'info
# registers': is EIP moving, and where), KVM's per-VM counters (debugfs:
# NPT faults taken/fixed/spurious, exits, halts, stage-2 pages), then the
# node's memory (THP and compaction counters, meminfo), load, virtlogd
# (the serial log goes through it) and the kernel log's tail. Every
# reading is bounded and a failed one is printed, not raised.
EVIDENCE = r'''
import glob, os, re, subprocess, sys, time
vm, gap, log = sys.argv[1], float(sys.argv[2]), sys.argv[3]
KVM = ('exits', 'pf_taken', 'pf_fixed', 'pf_spurious', 'pf_guest',
       'pf_emulate', 'pf_fast', 'halt_exits', 'halt_wakeup',
       'halt_successful_poll', 'irq_exits', 'irq_injections',
       'request_irq_exits', 'signal_exits', 'pages_4k', 'pages_2m')


def read(path, limit=4096):
    try:
        with open(path) as f:
            return f.read(limit).strip()
    except OSError as exc:
        return '(%s)' % exc.strerror


def sh(argv, timeout=30):
    try:
        p = subprocess.run(argv, capture_output=True, text=True,
                           timeout=timeout)
        return (p.stdout + p.stderr).strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        return '(%s)' % exc


def snapshot(pid, n):
    print('--- snapshot %d (node uptime %s)' % (n, read('/proc/uptime')))
    for task in sorted(glob.glob('/proc/%s/task/*' % pid)):
        st = read(task + '/stat').rsplit(')', 1)[-1].split()
        comm = read(task + '/comm')
        ticks = '%s+%s' % tuple(st[11:13]) if len(st) > 12 else '?'
        print('thread %s %-16s state %s utime+stime %s cpu %s wchan %s' % (
            task.rsplit('/', 1)[-1], comm, st[0] if st else '?', ticks,
            st[36] if len(st) > 36 else '?', read(task + '/wchan')))
        if comm.startswith('CPU '):
            for line in read(task + '/stack').splitlines()[:12]:
                print('    ' + line)
    regs = sh(['virsh', 'qemu-monitor-command', vm, '--hmp',
               'info registers'])
    print('registers: ' + ' | '.join(
        ln.strip() for ln in regs.splitlines()
        if ln.startswith(('EAX', 'ESI', 'EIP', 'RAX', 'RSI', 'RIP',
                          'CPU#', 'CR0', '('))))
    eip = re.search(r'[ER]IP=([0-9a-f]+)', regs)
    if eip:
        print('EIP %s is in %s' % (eip.group(1),
                                   symbol(int(eip.group(1), 16))))
    kvm = glob.glob('/sys/kernel/debug/kvm/%s-*' % pid)
    if kvm:
        print('kvm ' + ' '.join('%s=%s' % (k, read(kvm[0] + '/' + k))
                                for k in KVM))
    else:
        print('kvm: no /sys/kernel/debug/kvm/%s-* (debugfs?)' % pid)


def symbol(addr):
    """The guest kernel's (the payload's) symbol holding addr, from
    its ELF (nm): _start's final hlt after pattern=once, payload_main in
    the sweeps (its helpers are inlined), irq_master in the timer."""
    best, end = '?', None
    for line in SYMS.splitlines():
        f = line.split()
        if len(f) == 3 and f[2] == '_end':
            end = int(f[0], 16)
        if len(f) == 3 and f[1] in 'tT' and int(f[0], 16) <= addr:
            best = '%s+0x%x' % (f[2], addr - int(f[0], 16))
    if best == '?' or (end is not None and addr >= end):
        # the guest lost its way: executing its RAM (zeros: add %al,(%eax))
        return 'no payload code (outside the ELF, _end %s)' % (
            '0x%x' % end if end is not None else '?')
    return best


# libvirt's status file of the running domain: no virsh call (each one
# costs seconds under TCG)
status = read('/run/libvirt/qemu/%s.xml' % vm, 1 << 20)
kernel = re.search(r'<kernel>([^<]+)</kernel>', status)
SYMS = sh(['nm', '-n', kernel.group(1)]) if kernel else ''
state = re.search(r"<domstatus state='([^']*)' reason='([^']*)'", status)
pid = read('/run/libvirt/qemu/%s.pid' % vm)
print('=== stall evidence for %s (QEMU pid %s, domain %s)' % (
    vm, pid, ' '.join(state.groups()) if state else 'state unknown'))
if pid.isdigit():
    snapshot(pid, 1)
    time.sleep(gap)
    snapshot(pid, 2)
print('chardevs: ' + ' | '.join(sh(['virsh', 'qemu-monitor-command', vm,
                                     '--hmp', 'info chardev']).splitlines()))
print('--- node')
print('loadavg ' + read('/proc/loadavg'))
for f in ('enabled', 'defrag', 'khugepaged/defrag',
          'khugepaged/pages_collapsed', 'khugepaged/full_scans'):
    print('thp %s: %s' % (f, read('/sys/kernel/mm/transparent_hugepage/'
                                   + f)))
print(' '.join(ln.replace(' ', '=') for ln in read('/proc/vmstat',
                                                    1 << 16).splitlines()
               if ln.startswith(('thp_', 'compact_', 'pgfault',
                                 'pgmajfault', 'oom_kill', 'allocstall'))))
print(' '.join('='.join(ln.split()[:2]) for ln in read('/proc/meminfo')
               .splitlines() if ln.startswith(
                   ('MemFree', 'MemAvailable', 'AnonHugePages', 'Shmem:',
                    'HugePages_Free', 'Committed_AS'))))
print('virtlogd pid %s alive: %s' % (
    read('/run/virtlogd.pid'),
    os.path.exists('/proc/%s' % read('/run/virtlogd.pid'))))
print('serial log %s: %s bytes' % (
    log, os.path.getsize(log) if os.path.exists(log) else 'no file'))
print('--- dmesg (tail)')
print('\n'.join(sh(['dmesg']).splitlines()[-15:]))
'''


def stall_evidence(node, name, gap=2):
    """What the guest ``name`` and the node are doing, as text for an
    error message (EVIDENCE, run in the node); never raises: a failure to
    collect is itself reported."""
    try:
        res = node.run(['/usr/bin/python3', '-c', EVIDENCE, name, str(gap),
                        serial_log(name)],
                       timeout=180)
        return res.stdout + (res.stderr and '\nstderr: ' + res.stderr)
    except Exception as exc:  # noqa: B902 - the wait's error comes first
        if not node.alive():
            raise           # a dead node: its own error (live.py reruns)
        return 'stall evidence for %s not collected: %s: %s' % (
            name, type(exc).__name__, exc)


def payload_errors(node, name):
    """Signature mismatches the payload reported (data corruption)."""
    log = node.run('cat %s' % serial_log(name)).stdout
    found = re.findall(r'errors=(\d+)', log)
    return int(found[-1]) if found else 0


def qemu_pid(node, name):
    return int(node.check('cat /run/libvirt/qemu/%s.pid' % name).strip())


def query_stats(node, name):
    """KVM's per-VM stats through QMP query-stats (target vm)."""
    out = node.check(['virsh', 'qemu-monitor-command', name,
                      '{"execute": "query-stats", "arguments": '
                      '{"target": "vm"}}'])
    stats = {}
    for provider in json.loads(out)['return']:
        for s in provider['stats']:
            stats[s['name']] = s['value']
    return stats


def module_status(node, vm):
    """The module's ``status`` of vm as a dict, or None if no directory."""
    res = node.run('cat %s/vms/%s/status' % (CONFIGFS, vm))
    if res.rc != 0:
        return None
    out = {}
    for line in res.stdout.splitlines():
        k, _, v = line.partition(' ')
        out[k] = v.strip()
    return out


# flavor keys (tlbbalance:<key>) that are no module parameter: not in a
# VM's status
NOT_MODULE = ('mode', 'backing', 'prefault')


def registrations(node, vms):
    """{vm: {pid, mode, and each module parameter its flavor keys set}}
    as the module holds them (None: not registered); vms: {vm: {key:
    value}}, the flavor keys each VM was started with."""
    out = {}
    for vm, specs in vms.items():
        st = module_status(node, vm)
        keys = ['pid', 'mode'] + [k for k in specs if k not in NOT_MODULE]
        out[vm] = st and {k: st.get(k) for k in keys}
    return out


def check_registered(reg, vms, pids):
    """reg (registrations()) holds each VM of vms with its QEMU pid (pids)
    and the values of its flavor keys."""
    for vm, specs in vms.items():
        assert reg[vm] is not None, '%s not registered by the hook' % vm
        assert reg[vm]['pid'] == str(pids[vm]), reg
        assert reg[vm]['mode'] == specs['mode'], reg
        for k, v in specs.items():
            if k not in NOT_MODULE:
                assert reg[vm][k] == v, (vm, k, reg[vm])


def inject(node, vm, huge_per_s, small_per_s):
    """Feed constant refill rates; returns the node's clock (time.time())
    when it was done, to mark phases on the samples' time line."""
    return float(node.check('echo %s %d %d > %s && date +%%s.%%N' % (
        vm, huge_per_s, small_per_s, INJECT)))


def inject_off(node, vm):
    return float(node.check('echo %s off > %s && date +%%s.%%N'
                            % (vm, INJECT)))


SAMPLER = r'''
import json, os, sys, time
vm, secs, every = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
pid = open('/run/libvirt/qemu/%s.pid' % vm).read().strip()
kvm = [d for d in os.listdir('/sys/kernel/debug/kvm')
       if d.startswith(pid + '-')]
t0 = time.monotonic()
while time.monotonic() - t0 < secs:
    row = {'t': round(time.monotonic() - t0, 2), 'ts': time.time()}
    try:
        for line in open('/sys/kernel/config/tlbbalance/vms/%s/status' % vm):
            k, _, v = line.strip().partition(' ')
            row[k] = v
    except OSError:
        pass
    for name in ('pages_4k', 'pages_2m'):
        try:
            row[name] = int(open('/sys/kernel/debug/kvm/%s/%s'
                                 % (kvm[0], name)).read())
        except (OSError, IndexError, ValueError):
            pass
    print(json.dumps(row), flush=True)
    time.sleep(every)
'''


def start_sampler(node, vm, every=0.5):
    """Sample in the background inside the node (while other commands
    run) into /tmp/samples-<vm>.jsonl; stop_sampler() returns the rows."""
    node.write_file('/tmp/tlbb-sampler.py', SAMPLER)
    node.check('nohup /usr/bin/python3 /tmp/tlbb-sampler.py %s 86400 %s '
               '>/tmp/samples-%s.jsonl 2>/tmp/samples-%s.err '
               '</dev/null & echo $! >/tmp/samples-%s.pid'
               % (vm, every, vm, vm, vm))


def last_sample(node, vm):
    out = node.run('tail -n 1 /tmp/samples-%s.jsonl' % vm).stdout.strip()
    return json.loads(out) if out else {}


def wait_sample(node, vm, cond, timeout):
    """Wait until the latest background sample satisfies cond."""
    def met():
        row = last_sample(node, vm)
        return row if row and cond(row) else None
    try:
        return wait_until('a sample of %s meets the condition' % vm, met,
                          timeout, 1)
    except WaitTimeout:
        return None


def stop_sampler(node, vm):
    node.run('kill $(cat /tmp/samples-%s.pid)' % vm)
    out = node.check('cat /tmp/samples-%s.jsonl' % vm)
    return [json.loads(ln) for ln in out.splitlines()
            if ln.strip().startswith('{')]


def sample(node, vm, secs, every=0.5):
    """Sample the module's status and KVM's stage-2 page counts (debugfs
    of the node's KVM: the same counters query-stats reads) for secs;
    returns the rows."""
    out = node.check(['/usr/bin/python3', '-c', SAMPLER, vm, str(secs),
                      str(every)], timeout=int(secs) + 60)
    return [json.loads(ln) for ln in out.splitlines() if ln.strip()]
