#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""mkinitramfs.py <kernel-cache-dir> <out.cpio> <tests-dir> [tlbbalance.ko]

Builds the test initramfs with the one boot stack (tools/kernels/boot):
busybox-static, guest-init.sh as /init, the kernel's own configfs and KVM
modules (kvm-amd with what modules.dep says it needs, decompressed for
busybox's insmod) and tlbbalance.ko (loaded with allow_inject=1) in
/modules with their load order in /modules/order, and the built tests from
<tests-dir> in /tests (its .tlbb-run and .tlbb-exit in /bin).
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'tools'))

from kernels import boot  # noqa: E402


def entries(kernel, tests, ko):
    names = ['configfs']
    # x86: KVM is a module (AMD SVM, emulated by TCG); arm64 has it built in.
    if kernel.arch == 'amd64':
        names.append('kvm-amd')
    with open(os.path.join(HERE, 'guest-init.sh'), 'rb') as f:
        init = f.read()
    files = []
    for launcher, dest in (('.tlbb-run', 'bin/tlbb-run'),
                           ('.tlbb-exit', 'bin/tlbb-exit')):
        path = os.path.join(tests, launcher)
        if os.path.exists(path):
            with open(path, 'rb') as f:
                files.append((dest, boot.cpio.EXEC, f.read()))
        elif launcher == '.tlbb-run':
            raise boot.BootError('no %s (run-kernels.sh builds it)' % path)
    files += [e for e in boot.tree_entries(tests, 'tests')
              if e[0] not in ('tests/.tlbb-run', 'tests/.tlbb-exit')]
    return boot.initramfs_entries(
        kernel, init, kernel.module_deps(names),
        extra_modules=[(ko, 'allow_inject=1')] if ko else [],
        dirs=('sbin', 'tmp', 'run', 'etc', 'tests'), files=files)


def main(argv):
    if len(argv) not in (3, 4):
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    kdir, out, tests = argv[:3]
    ko = argv[3] if len(argv) == 4 else ''
    try:
        kernel = boot.Kernel.from_dir(kdir)
        boot.write_initramfs(out, entries(kernel, tests, ko))
    except (boot.BootError, OSError) as e:
        print('mkinitramfs.py: %s' % e, file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
