"""tools/kernels/boot: the one stack that boots a kernel for tests.

The in-kernel tests (kernel-module/tests/run-kernels.sh, mkinitramfs.py)
and the node in a box (tools/node/node.py) both build their initramfs and
QEMU command line with it; those suites boot real kernels with what it
builds.  Here: the cpio archive read back by the system's own cpio(1), the
module resolver on a modules.dep laid out like a Debian kernel's (real
compressed modules, a built-in module), and the QEMU argv per architecture.
"""

import lzma
import os
import subprocess
import sys

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(TOP, 'tools'))

from kernels import boot  # noqa: E402


def fake_kernel(tmp_path, arch='amd64'):
    """A directory shaped like tools/kernels/fetch.sh's output."""
    kdir = tmp_path / 'kernel'
    mods = kdir / 'modules'
    (mods / 'kernel' / 'kvm').mkdir(parents=True)
    (kdir / 'abi').write_text('6.1.0-99-%s\n' % arch)
    (kdir / 'arch').write_text(arch + '\n')
    for name in ('kvm-amd', 'kvm', 'irqbypass', 'ccp'):
        with lzma.open(str(mods / 'kernel' / 'kvm' / (name + '.ko.xz')),
                       'wb') as f:
            f.write(b'module ' + name.encode())
    (mods / 'kernel' / 'kvm' / 'configfs.ko').write_bytes(b'plain')
    (mods / 'modules.dep').write_text(
        'kernel/kvm/configfs.ko:\n'
        'kernel/kvm/irqbypass.ko.xz:\n'
        'kernel/kvm/ccp.ko.xz:\n'
        'kernel/kvm/kvm.ko.xz: kernel/kvm/irqbypass.ko.xz\n'
        'kernel/kvm/kvm-amd.ko.xz: kernel/kvm/ccp.ko.xz '
        'kernel/kvm/kvm.ko.xz kernel/kvm/irqbypass.ko.xz\n')
    (mods / 'modules.builtin').write_text('kernel/fs/overlay/overlay.ko\n')
    return boot.Kernel.from_dir(str(kdir))


def test_module_deps_dependencies_first_each_once(tmp_path):
    k = fake_kernel(tmp_path)
    order = k.module_deps(['configfs', 'kvm_amd', 'kvm', 'overlay'])
    assert order == ['kernel/kvm/configfs.ko', 'kernel/kvm/irqbypass.ko.xz',
                     'kernel/kvm/kvm.ko.xz', 'kernel/kvm/ccp.ko.xz',
                     'kernel/kvm/kvm-amd.ko.xz']


def test_module_deps_names_the_missing_module(tmp_path):
    k = fake_kernel(tmp_path)
    with pytest.raises(boot.BootError, match='nosuch_mod not in .*modules'):
        k.module_deps(['kvm', 'nosuch_mod'])


def test_kernel_without_modules_dep_says_what_to_run(tmp_path):
    k = fake_kernel(tmp_path)
    os.unlink(os.path.join(k.modules, 'modules.dep'))
    with pytest.raises(boot.BootError, match='rerun tools/kernels/fetch.sh'):
        boot.Kernel.from_dir(k.dir)


def test_initramfs_read_back_by_cpio(tmp_path):
    k = fake_kernel(tmp_path)
    busybox = tmp_path / 'kernel' / 'busybox'
    busybox.write_bytes(b'static busybox')
    busybox.chmod(0o755)
    tests = tmp_path / 'tests'
    (tests / 'sub').mkdir(parents=True)
    (tests / 't_a').write_bytes(b'#!/bin/sh\n')
    (tests / 't_a').chmod(0o755)
    (tests / 'sub' / 'data').write_bytes(b'x' * 5)
    ko = tmp_path / 'tlbbalance.ko'
    ko.write_bytes(b'ours')
    entries = boot.initramfs_entries(
        k, b'#!/bin/sh\ninit\n', k.module_deps(['kvm-amd']),
        extra_modules=[(str(ko), 'allow_inject=1')], dirs=('tests',),
        files=boot.tree_entries(str(tests), 'tests'))
    cpio = boot.write_initramfs(str(tmp_path / 'out' / 'i.cpio'), entries)
    root = tmp_path / 'root'
    root.mkdir()
    subprocess.run(['cpio', '-idm', '--quiet', '-F', cpio], cwd=str(root),
                   check=True)
    assert (root / 'bin' / 'busybox').read_bytes() == b'static busybox'
    assert os.access(str(root / 'init'), os.X_OK)
    assert (root / 'modules' / 'kvm-amd.ko').read_bytes() == \
        b'module kvm-amd'               # decompressed for busybox insmod
    assert (root / 'modules' / 'order').read_text().split('\n') == [
        'irqbypass.ko', 'kvm.ko', 'ccp.ko', 'kvm-amd.ko',
        'tlbbalance.ko allow_inject=1', '']
    assert (root / 'modules' / 'tlbbalance.ko').read_bytes() == b'ours'
    assert os.access(str(root / 'tests' / 't_a'), os.X_OK)
    assert (root / 'tests' / 'sub' / 'data').read_bytes() == b'xxxxx'


def test_qemu_argv_x86_64(tmp_path):
    k = fake_kernel(tmp_path, 'amd64')
    argv = boot.qemu_argv(k, '/i.cpio', append='rdinit=/init', mem=2048,
                          smp=2, accel='tcg,thread=single',
                          extra=['-d', 'guest_errors'])
    assert argv[0] == 'qemu-system-x86_64'
    assert argv[argv.index('-kernel') + 1] == os.path.join(k.dir, 'vmlinux')
    assert argv[argv.index('-append') + 1] == 'console=ttyS0 rdinit=/init'
    assert argv[argv.index('-accel') + 1] == 'tcg,thread=single'
    assert argv[argv.index('-m') + 1] == '2048'
    assert 'isa-debug-exit,iobase=0xf4,iosize=0x04' in argv
    assert argv[-2:] == ['-d', 'guest_errors']


def test_qemu_argv_arm64(tmp_path):
    k = fake_kernel(tmp_path, 'arm64')
    argv = boot.qemu_argv(k, '/i.cpio', smp='4,sockets=1,clusters=2,cores=2')
    assert argv[:3] == ['qemu-system-aarch64', '-M',
                        'virt,virtualization=on,gic-version=3']
    assert argv[argv.index('-kernel') + 1] == os.path.join(k.dir, 'vmlinuz')
    assert argv[argv.index('-append') + 1] == 'console=ttyAMA0'
    assert argv[argv.index('-smp') + 1] == '4,sockets=1,clusters=2,cores=2'
    assert 'isa-debug-exit,iobase=0xf4,iosize=0x04' not in argv
    assert 'enable=on,target=native,userspace=on' in argv


def test_cli_prints_one_argument_a_line(tmp_path):
    k = fake_kernel(tmp_path)
    out = subprocess.run(
        [sys.executable, '-m', 'kernels.boot', 'qemu-argv', k.dir, '/i.cpio',
         '--append', 'panic=-1 rdinit=/init'],
        env=dict(os.environ, PYTHONPATH=os.path.join(TOP, 'tools')),
        stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    argv = out.splitlines()
    assert argv == boot.qemu_argv(k, '/i.cpio',
                                  append='panic=-1 rdinit=/init')
