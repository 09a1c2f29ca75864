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
        raise ScenarioError('%s; serial log:\n%s' % (e, log))


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
