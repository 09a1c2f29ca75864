# SPDX-License-Identifier: Apache-2.0
"""Licences: the texts at the top and in kernel-module/, an SPDX header in
every source file saying the licence of its part of the tree, and package
metadata naming both.

The tree's licences (README.md#licence):

- ``kernel-module/`` (tlbbalance.ko and its in-kernel tests): GPL-2.0,
  ``kernel-module/COPYING``;
- ``kernel-module/core/`` and ``tlbsim/`` (the controller core, compiled
  into the module and into userspace, and the simulator built on it):
  GPL-2.0 OR Apache-2.0; the core's tables the Python package reads
  (``nova_tlbbalance/data/``) are symbolic links to the core's files;
- everything else (the Python package, the hook, the tools, the tests, the
  Ansible role): Apache-2.0, ``LICENSE``.
"""

import configparser
import os
import re
import subprocess

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))

GPL = 'GPL-2.0'
DUAL = 'GPL-2.0 OR Apache-2.0'
APACHE = 'Apache-2.0'

# (path prefix, licence): the first prefix that matches decides.
POLICY = (
    ('kernel-module/core/', DUAL),
    ('kernel-module/', GPL),
    ('tlbsim/', DUAL),
    # a wrapper around the kernel's checkpatch.pl, usable on either side
    ('tools/kernels/checkpatch.sh', DUAL),
    ('', APACHE),
)

# Not the project's source: the CI entry point (.ci/run, run by the CI
# service as it is).
NOT_SOURCE = ('.ci/',)

# Files other branches were rewriting when the headers were added (the
# libvirt hook, the Ansible role's scripts): they get their
# header when those branches land, and leave this list then. The test
# fails when one of them has its header and is still listed.
AWAITING = set()

SOURCE_SUFFIXES = ('.py', '.c', '.h', '.S', '.sh', '.def', '.mk', '.ld')
SOURCE_NAMES = ('Makefile', 'Kbuild')
SPDX = re.compile(r'SPDX-License-Identifier: (.*?)\s*(\*/)?$')


def licence_of(rel):
    return next(lic for prefix, lic in POLICY if rel.startswith(prefix))


def tracked_files():
    out = subprocess.run(['git', 'ls-files', '-z'], cwd=TOP, check=True,
                         stdout=subprocess.PIPE).stdout.decode()
    return [f for f in out.split('\0') if f]


def is_source(rel):
    path = os.path.join(TOP, rel)
    if rel.startswith(NOT_SOURCE) or os.path.islink(path):
        return False
    if rel.endswith(SOURCE_SUFFIXES) or \
            os.path.basename(rel) in SOURCE_NAMES:
        return True
    with open(path, 'rb') as f:
        return f.read(2) == b'#!'


def spdx_header(rel):
    """The SPDX licence in rel's first three lines (the first line, or the
    one after a shebang or a shellcheck directive), or None."""
    with open(os.path.join(TOP, rel), errors='replace') as f:
        head = [f.readline().rstrip('\n') for _ in range(3)]
    for line in head:
        m = SPDX.search(line)
        if m:
            return m.group(1)
    return None


SOURCES = sorted(f for f in tracked_files() if is_source(f))


def test_sources_found():
    # the walk sees the tree: C, Python, shell, make
    assert {'kernel-module/tlbb_main.c', 'nova_tlbbalance/cli/__init__.py',
            'tools/ci/run-tests.sh', 'kernel-module/Kbuild',
            'Makefile'} <= set(SOURCES)


@pytest.mark.parametrize('rel', SOURCES)
def test_spdx_header(rel):
    found = spdx_header(rel)
    if rel in AWAITING:
        assert found is None, (
            '%s has its SPDX header now: take it off AWAITING' % rel)
        return
    want = licence_of(rel)
    assert found == want, (
        '%s: the first line (after a shebang) should say '
        '"SPDX-License-Identifier: %s" (README.md#licence), found %r'
        % (rel, want, found))


def test_awaiting_files_exist():
    assert AWAITING <= set(SOURCES)


@pytest.mark.parametrize('rel, first', [
    ('LICENSE', 'Apache License'),
    ('kernel-module/COPYING', 'GNU GENERAL PUBLIC LICENSE'),
])
def test_licence_texts(rel, first):
    with open(os.path.join(TOP, rel)) as f:
        text = f.read()
    assert text.lstrip().startswith(first)
    assert 'Version 2' in text[:200]
    # the full text, not a pointer to it
    assert len(text) > 10000


def test_module_declares_gpl():
    with open(os.path.join(TOP, 'kernel-module', 'tlbb_main.c')) as f:
        assert 'MODULE_LICENSE("GPL");' in f.read()


def test_package_metadata_names_both():
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(TOP, 'setup.cfg'))
    meta = cfg['metadata']
    assert meta['license_expression'] == 'Apache-2.0 AND GPL-2.0-only'
    assert meta['license_files'].split() == ['LICENSE',
                                             'kernel-module/COPYING']
    # PEP 639: no licence classifiers beside an SPDX expression
    assert 'License ::' not in meta.get('classifiers', '')


def copyright_stanzas():
    """[(file patterns, licence)] of debian/copyright's Files stanzas."""
    with open(os.path.join(TOP, 'debian', 'copyright')) as f:
        paragraphs = f.read().split('\n\n')
    out = []
    for para in paragraphs:
        m = re.search(r'^Files: (.*?)\n(?=\S)', para, re.M | re.S)
        if m:
            lic = re.search(r'^License: (.*)$', para, re.M).group(1)
            out.append((m.group(1).split(), lic))
    return out


DEBIAN_NAMES = {'Apache-2.0': APACHE, 'GPL-2': GPL,
                'GPL-2 or Apache-2.0': DUAL}


def test_debian_copyright_follows_the_policy():
    """debian/copyright (the Debian packages' licence statement) says
    what POLICY says, prefix by prefix."""
    said = {}
    for patterns, lic in copyright_stanzas():
        for pattern in patterns:
            said[pattern.rstrip('*')] = DEBIAN_NAMES[lic]
    assert said == {prefix: lic for prefix, lic in POLICY}
