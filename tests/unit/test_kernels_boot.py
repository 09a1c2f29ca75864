# SPDX-License-Identifier: Apache-2.0
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
import re
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
    # no_timer_check: the guest must not panic "IO-APIC + timer doesn't
    # work" when TCG under load delays the timer it checks at boot.
    assert (argv[argv.index('-append') + 1] ==
            'console=ttyS0 no_timer_check rdinit=/init')
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
    assert 'no_timer_check' not in argv[argv.index('-append') + 1]
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


def fake_module_tree(tmp_path, warn=False):
    """A kernel-module/ whose Makefile records its arguments and 'builds'
    tlbbalance.ko from tlbb_main.c (the real build runs in tox -e kmod and
    in the node: both through boot.build_module)."""
    src = tmp_path / 'kernel-module'
    (src / 'tests').mkdir(parents=True)
    (src / 'core').mkdir()
    (src / 'tlbb_main.c').write_text('int main_v1;\n')
    (src / 'core' / 'tlbb_params.def').write_text('P\n')
    (src / 'tests' / 't_x.c').write_text('not part of the module\n')
    (src / 'tlbb_main.o').write_text('an object of an earlier build\n')
    (src / 'Makefile').write_text(
        'all:\n'
        '\t@echo "make $(MAKEFLAGS) KDIR=$(KDIR) W=$(W)"\n'
        + ('\t@echo "tlbb_main.c:1:5: warning: unused"\n' if warn else '')
        + '\t@cp tlbb_main.c tlbbalance.ko\n')
    return src


def test_build_module_w1_then_from_the_cache(tmp_path):
    k = fake_kernel(tmp_path)
    src = fake_module_tree(tmp_path)
    said = []
    ko = boot.build_module(k, str(tmp_path / 'out1'),
                           cache=str(tmp_path / 'cache'), src=str(src),
                           say=said.append)
    assert open(ko).read() == 'int main_v1;\n'
    build = tmp_path / 'out1' / 'module'
    assert sorted(os.listdir(str(build))) == [
        'Makefile', 'core', 'tlbb_main.c', 'tlbbalance.ko']
    log = (tmp_path / 'out1' / 'module-build.log').read_text()
    assert 'KDIR=%s W=1' % k.headers in log
    assert said == []
    # the same sources for the same kernel: the cached module, no make
    ko2 = boot.build_module(k, str(tmp_path / 'out2'),
                            cache=str(tmp_path / 'cache'), src=str(src),
                            say=said.append)
    assert open(ko2).read() == 'int main_v1;\n'
    assert len(said) == 1 and 'reused' in said[0], said
    # a changed source is built again; a changed test is not a change
    (src / 'tests' / 't_x.c').write_text('changed\n')
    assert boot.module.cache_key(k, str(src)) in said[0]
    (src / 'tlbb_main.c').write_text('int main_v2;\n')
    ko3 = boot.build_module(k, str(tmp_path / 'out3'),
                            cache=str(tmp_path / 'cache'), src=str(src),
                            say=said.append)
    assert open(ko3).read() == 'int main_v2;\n' and len(said) == 1


def test_build_module_a_warning_fails(tmp_path):
    k = fake_kernel(tmp_path)
    src = fake_module_tree(tmp_path, warn=True)
    with pytest.raises(boot.ModuleBuildError,
                       match='warnings for 6.1.0-99-amd64.*\n.*unused'):
        boot.build_module(k, str(tmp_path / 'out'),
                          cache=str(tmp_path / 'cache'), src=str(src))
    assert not (tmp_path / 'cache' / 'kmod-builds' / k.abi).exists()


def test_one_module_build_for_the_tests_and_the_node():
    """run-kernels.sh and tools/node/node.py both build tlbbalance.ko
    with boot.build_module; neither runs make on the module itself."""
    with open(os.path.join(TOP, 'kernel-module', 'tests',
                           'run-kernels.sh')) as f:
        rk = f.read()
    with open(os.path.join(TOP, 'tools', 'node', 'node.py')) as f:
        node = f.read()
    assert 'kernels.boot build-module' in rk
    assert not re.search(r'make -C "\$dir"|W=1 \\', rk)
    assert 'boot.build_module(kernel' in node
    assert not re.search(r"\['make', '-C', build", node)
