"""Host CPU topology (packages, dies, clusters) and DVMBM detection."""

import os
import re


def cpu_topology(sys_root='/sys'):
    """{cpu: {'package', 'die', 'cluster', 'core'}} from sysfs."""
    base = sys_root + '/devices/system/cpu'
    out = {}
    for name in os.listdir(base):
        m = re.match(r'^cpu(\d+)$', name)
        if not m:
            continue
        topo = {}
        for key, fname in (('package', 'physical_package_id'),
                           ('die', 'die_id'), ('cluster', 'cluster_id'),
                           ('core', 'core_id')):
            try:
                with open('%s/%s/topology/%s' % (base, name, fname)) as f:
                    topo[key] = int(f.read())
            except (OSError, ValueError):
                topo[key] = 0 if key != 'cluster' else -1
        out[int(m.group(1))] = topo
    return out


def span(cpus, topo):
    """How many dies and clusters the CPUs ``cpus`` cover."""
    dies = set()
    clusters = set()
    for c in cpus:
        t = topo.get(c)
        if t is None:
            continue
        dies.add((t['package'], t['die']))
        clusters.add((t['package'], t['die'], t['cluster']))
    return {'dies': len(dies), 'clusters': len(clusters)}


def dvmbm(proc='/proc', sys_root='/sys', kmsg_lines=None):
    """Whether the host kernel limits TLBI broadcast per VM (openEuler DVMBM).

    Returns {'enabled': True/False, 'source': why}. Checked in order:
    the kvm module parameter, the kernel command line, the kernel log
    ("KVM dvmbm enabled"; ``kmsg_lines`` for tests, else ``dmesg`` output
    from /dev/kmsg). False when none of them mentions DVMBM (any kernel
    but openEuler's arm64 KVM with CONFIG_KVM_HISI_VIRT).
    """
    for param in ('dvmbm_enabled',):
        path = '%s/module/kvm/parameters/%s' % (sys_root, param)
        try:
            with open(path) as f:
                val = f.read().strip()
            return {'enabled': val in ('Y', '1'), 'source': path}
        except OSError:
            pass
    try:
        with open(proc + '/cmdline') as f:
            cmd = f.read()
        m = re.search(r'kvm-arm\.dvmbm_enabled=(\S+)', cmd)
        if m:
            return {'enabled': m.group(1) in ('1', 'y', 'Y', 'true'),
                    'source': 'kernel command line'}
    except OSError:
        pass
    lines = kmsg_lines if kmsg_lines is not None else _kmsg()
    for line in lines:
        if 'KVM dvmbm enabled' in line:
            return {'enabled': True, 'source': 'kernel log'}
    return {'enabled': False,
            'source': 'no DVMBM support found (kvm parameter, command '
                      'line, kernel log)'}


def _kmsg(path='/dev/kmsg'):
    """The kernel log records, read without blocking; [] if unreadable."""
    out = []
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return out
    try:
        while True:
            try:
                rec = os.read(fd, 8192)
            except BlockingIOError:
                break
            except OSError:
                continue        # EPIPE: record overwritten; go on
            if not rec:
                break
            out.append(rec.decode('utf-8', 'replace'))
    finally:
        os.close(fd)
    return out
