# SPDX-License-Identifier: Apache-2.0
"""``tlbbalance release``: every registration of the loaded module
released (mode off, which lifts any hold, then its directory removed),
so that the module can be unloaded; the VMs keep running.

Used before a module upgrade (the Ansible role's module step, then
``tlbbalance reconcile --released`` after the new build is loaded) and
before removal (docs/removal.md).
"""

import argparse
import json
import os
import sys
import time

from nova_tlbbalance import modclient
from nova_tlbbalance.probes.proc import vmas_with_flag


def register(sub):
    p = sub.add_parser(
        'release', help='release every registration of the module '
        '(mode off, directory removed) so that it can be unloaded',
        description='Switch every VM the tlbbalance module holds off '
        '(which clears the VM_NOHUGEPAGE it set) and remove its directory, '
        'so that the module can be unloaded; the VMs keep running, '
        'unmanaged until `tlbbalance reconcile` registers them again. '
        'Prints one line per VM released with its pid and the time; '
        '--json: the same as a JSON document (what `tlbbalance reconcile '
        '--released` reads). Exit status: 0 every VM released (or none '
        'registered, or no module), 1 some VM could not be released '
        '(named; the others were).')
    p.add_argument('--configfs', default=None,
                   help='tlbbalance configfs root (default $%s or %s)'
                   % (modclient.ENV_ROOT, modclient.DEFAULT_ROOT))
    p.add_argument('--json', action='store_true', help='machine-readable')
    p.add_argument('--proc', default='/proc', help=argparse.SUPPRESS)
    p.set_defaults(func=run)


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ''


def nohugepage_vmas(pid, ram, proc='/proc'):
    """How many VMAs of process ``pid`` inside its guest RAM ``ram``
    ([(hva, length)], what the module held) carry VM_NOHUGEPAGE (``nh`` in
    the VmFlags of its smaps); None when either cannot be read.

    Only guest RAM counts: that is all the module ever marks. Other VMAs
    may carry it by the kernel's or QEMU's own doing: from Linux 6.8
    (commit "mm: mmap: map MAP_STACK to VM_NOHUGEPAGE") every thread
    stack glibc maps with MAP_STACK does, e.g. QEMU's 8 MiB vCPU and
    worker thread stacks and their guard pages, before any registration
    (6 VMAs of a never-registered QEMU on Debian's 6.12).
    """
    if ram is None:
        return None
    try:
        return vmas_with_flag(pid, ram, 'nh', proc)
    except (OSError, ValueError):
        return None


def release(client, proc='/proc', clock=time.time):
    """Release every registration of ``client``'s module. Returns a dict:
    ``released`` [{vm, pid, mode, released_at, nohugepage_vmas}],
    ``errors`` [{vm, error}], ``module`` (loaded or not)."""
    doc = {'module': 'loaded' if client.present() else 'not loaded',
           'released': [], 'errors': []}
    for vm in client.vms():
        d = os.path.join(client.root, 'vms', vm)
        pid = _read(os.path.join(d, 'pid'))
        mode = _read(os.path.join(d, 'mode'))
        try:
            ram = [(hva, n) for hva, n, _ in client.ranges(vm) or ()]
        except (OSError, ValueError):
            ram = None
        try:
            client.unregister(vm)
        except (modclient.ModuleError, OSError, ValueError) as exc:
            doc['errors'].append({'vm': vm, 'error': str(exc)})
            continue
        entry = {'vm': vm, 'pid': int(pid) if pid.isdigit() else 0,
                 'mode': mode, 'released_at': clock()}
        if entry['pid']:
            entry['nohugepage_vmas'] = nohugepage_vmas(entry['pid'], ram,
                                                       proc)
        doc['released'].append(entry)
    return doc


def text(doc):
    lines = ['module: %s' % doc['module']]
    for e in doc['released']:
        nh = e.get('nohugepage_vmas')
        lines.append('released %s (pid %s, was %s)%s' % (
            e['vm'], e['pid'] or '?', e['mode'] or '?',
            '' if nh is None else
            ', %d VMA(s) with VM_NOHUGEPAGE left' % nh))
    lines += ['error: %s: %s' % (e['vm'], e['error'])
              for e in doc['errors']]
    lines.append('%d released, %d error(s)'
                 % (len(doc['released']), len(doc['errors'])))
    return '\n'.join(lines)


def run(args):
    doc = release(modclient.Client(args.configfs), args.proc)
    if args.json:
        print(json.dumps(doc, indent=2, sort_keys=True))
    else:
        print(text(doc))
    if doc['errors']:
        for e in doc['errors']:
            sys.stderr.write('tlbbalance release: %s: %s\n'
                             % (e['vm'], e['error']))
        return 1
    return 0
