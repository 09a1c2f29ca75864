# SPDX-License-Identifier: Apache-2.0
"""One way to boot a Debian kernel for tests: the kernel, its modules, the
initramfs and the QEMU command line, for x86_64 and arm64.

Both stacks use it: the in-kernel tests (kernel-module/tests/run-kernels.sh
calls ``python3 -m kernels.boot``, see __main__.py) and the compute node in
a box (tools/node/node.py).  Import it with ``<repo>/tools`` on sys.path::

    from kernels import boot
    k = boot.Kernel('6.1')                     # tools/kernels/fetch.sh
    mods = k.module_deps(['kvm-amd'])          # load order, deps first
    boot.write_initramfs(path, boot.initramfs_entries(k, init, mods, ...))
    argv = boot.qemu_argv(k, path, append='rdinit=/init', mem='2G')
    ko = boot.build_module(k, out_dir)         # tlbbalance.ko, W=1, cached

Only the standard library (python3 >= 3.8).  Kernel fetching stays in
tools/kernels/fetch.sh; this package only runs it.
"""

from . import cpio  # noqa: F401
from .cpio import newc, tree_entries, write_initramfs  # noqa: F401
from .kernel import BootError, Kernel  # noqa: F401
from .initramfs import initramfs_entries, module_bytes  # noqa: F401
from .module import ModuleBuildError, build_module  # noqa: F401
from .module import default_cache  # noqa: F401
from .qemu import console_device, qemu_argv  # noqa: F401
