# SPDX-License-Identifier: Apache-2.0
"""What goes into a test initramfs: busybox, an /init, kernel modules in
load order (/modules/order) and any further files."""

import lzma
import os
import subprocess

from . import cpio
from .kernel import BootError

BASE_DIRS = ('bin', 'dev', 'proc', 'sys', 'modules')


def module_bytes(path):
    """A module file's contents, decompressed (busybox's insmod reads only
    plain .ko files)."""
    if path.endswith('.xz'):
        with lzma.open(path) as f:
            return f.read()
    if path.endswith('.zst'):
        return subprocess.run(['zstd', '-dcq', path], check=True,
                              stdout=subprocess.PIPE).stdout
    if path.endswith('.gz'):
        import gzip
        with gzip.open(path) as f:
            return f.read()
    if not path.endswith('.ko'):
        raise BootError('unknown module file %s' % path)
    with open(path, 'rb') as f:
        return f.read()


def module_name(path):
    """kernel/arch/x86/kvm/kvm-amd.ko.xz -> kvm-amd.ko."""
    return os.path.basename(path).split('.ko')[0] + '.ko'


def initramfs_entries(kernel, init, modules=(), extra_modules=(),
                      dirs=(), files=()):
    """cpio entries: busybox at /bin/busybox, init (bytes) at /init, each
    of modules (paths from kernel.module_deps) decompressed in /modules,
    then extra_modules ((path of a .ko, params) pairs, e.g. tlbbalance.ko),
    their load order with parameters in /modules/order ("<file.ko>
    [params]" a line), more directories and (name, mode, data) files."""
    with open(kernel.busybox(), 'rb') as f:
        busybox = f.read()
    entries = [(d, cpio.DIR, None) for d in BASE_DIRS + tuple(dirs)]
    entries += [('bin/busybox', cpio.EXEC, busybox),
                ('init', cpio.EXEC, init)]
    order = []
    for mod in modules:
        name = module_name(mod)
        entries.append(('modules/' + name, cpio.FILE, module_bytes(
            os.path.join(kernel.modules, mod))))
        order.append(name)
    for path, params in extra_modules:
        name = os.path.basename(path)
        with open(path, 'rb') as f:
            entries.append(('modules/' + name, cpio.FILE, f.read()))
        order.append(('%s %s' % (name, params)).strip())
    entries.append(('modules/order', cpio.FILE,
                    ''.join(o + '\n' for o in order).encode()))
    entries += list(files)
    return entries
