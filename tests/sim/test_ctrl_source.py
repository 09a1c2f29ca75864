# SPDX-License-Identifier: Apache-2.0
"""The simulator runs the module's controller: the same source file.

tlbsim's Makefile compiles ../kernel-module/core/tlbb_ctrl.c and embeds its
SHA-256 in the binary; the module's Kbuild links core/tlbb_ctrl.o from the
same directory; and no other copy of the file exists in the tree.
"""

import hashlib
import json
import pathlib
import re
import subprocess

REPO = pathlib.Path(__file__).resolve().parents[2]

CTRL = REPO / 'kernel-module' / 'core' / 'tlbb_ctrl.c'


def test_binary_embeds_hash_of_the_module_source(tlbsim):
    out = json.loads(subprocess.run([tlbsim, 'version'], check=True,
                                    capture_output=True, text=True).stdout)
    assert out['ctrl_sha256'] == hashlib.sha256(CTRL.read_bytes()).hexdigest()
    assert out['ctrl_source'] == '../kernel-module/core/tlbb_ctrl.c'
    assert (REPO / 'tlbsim' / out['ctrl_source']).resolve() == CTRL


def test_makefile_compiles_that_path():
    mk = (REPO / 'tlbsim' / 'Makefile').read_text()
    assert re.search(r'^CTRL_DIR := \.\./kernel-module/core$', mk, re.M)
    assert re.search(r'^CTRL_SRC := \$\(CTRL_DIR\)/tlbb_ctrl\.c$', mk, re.M)
    assert '$(O)/tlbb_ctrl.o: $(CTRL_SRC)' in mk


def test_module_kbuild_links_the_same_file():
    kbuild = (REPO / 'kernel-module' / 'Kbuild').read_text()
    assert re.search(r'\bcore/tlbb_ctrl\.o\b', kbuild)


def test_no_copy_of_the_controller_in_the_tree():
    skip = {'.git', '.tox', 'build', 'out', '__pycache__'}
    found = [p for p in REPO.rglob('tlbb_ctrl.c')
             if not skip & set(p.relative_to(REPO).parts)]
    assert found == [CTRL]
    # nor a file with the same content under another name
    digest = hashlib.sha256(CTRL.read_bytes()).hexdigest()
    for p in (REPO / 'tlbsim').rglob('*.c'):
        if 'build' in p.parts:
            continue
        assert hashlib.sha256(p.read_bytes()).hexdigest() != digest, p
