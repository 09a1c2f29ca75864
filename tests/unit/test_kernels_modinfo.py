# SPDX-License-Identifier: Apache-2.0
"""tools/kernels/boot/module.py's version check on a built module: the
.modinfo section read from the ELF file (what modinfo(8) prints) against
dkms.conf's PACKAGE_VERSION. The kmod suites run it on every tlbbalance.ko
they build; here it reads objects gcc compiles with the section laid out
as the kernel's MODULE_* macros lay it out (no kernel headers needed).
"""

import os
import shutil
import subprocess
import sys

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(TOP, 'tools'))

from kernels.boot import module  # noqa: E402

MODINFO = r'''
#define INFO(n, s) static const char n[] \
    __attribute__((used, section(".modinfo"), aligned(1))) = s
INFO(lic, "license=GPL");
INFO(ver, "version=%s");
INFO(src, "srcversion=0123456789ABCDEF0123456");
INFO(mag, "vermagic=6.1.0-28-amd64 SMP preempt mod_unload modversions ");
'''


def build(tmp_path, version):
    c = tmp_path / 'm.c'
    c.write_text(MODINFO % version)
    ko = tmp_path / 'm.ko'
    subprocess.run(['gcc', '-c', '-o', str(ko), str(c)], check=True,
                   timeout=60)
    return str(ko)


def src_with(tmp_path, version):
    src = tmp_path / 'src'
    src.mkdir()
    shutil.copy(os.path.join(TOP, 'kernel-module', 'dkms.conf'), src)
    text = (src / 'dkms.conf').read_text()
    (src / 'dkms.conf').write_text(text.replace(
        'PACKAGE_VERSION="%s"' % module.package_version(),
        'PACKAGE_VERSION="%s"' % version))
    return str(src)


def test_modinfo_reads_the_section(tmp_path):
    info = module.modinfo(build(tmp_path, '1.2.3'))
    assert info['version'] == ['1.2.3']
    assert info['license'] == ['GPL']
    # srcversion= and vermagic= are not taken for version=
    assert len(info['srcversion']) == 1


def test_check_version_agrees(tmp_path):
    assert module.check_version(build(tmp_path, '1.2.3'),
                                src_with(tmp_path, '1.2.3')) == '1.2.3'


def test_check_version_names_both(tmp_path):
    ko = build(tmp_path, '1.2.3')
    with pytest.raises(module.ModuleBuildError) as exc:
        module.check_version(ko, src_with(tmp_path, '1.2.4'))
    assert "modinfo version ['1.2.3'], dkms.conf says 1.2.4" in str(exc.value)


def test_module_without_version(tmp_path):
    c = tmp_path / 'n.c'
    c.write_text('int x;\n')
    ko = tmp_path / 'n.ko'
    subprocess.run(['gcc', '-c', '-o', str(ko), str(c)], check=True,
                   timeout=60)
    with pytest.raises(module.ModuleBuildError) as exc:
        module.check_version(str(ko), src_with(tmp_path, '1.2.3'))
    assert 'modinfo version None' in str(exc.value)


def test_not_elf(tmp_path):
    (tmp_path / 'x.ko').write_text('not a module')
    with pytest.raises(module.ModuleBuildError, match='not a little-endian'):
        module.modinfo(str(tmp_path / 'x.ko'))
