# SPDX-License-Identifier: Apache-2.0
"""One version: setup.cfg's. Every other place that states it must agree.

The Python package's version is ``[metadata] version`` in setup.cfg (the
documentation reads it from there too, docs/conf.py);
``nova_tlbbalance.version()`` and ``tlbbalance --version`` report it. The
kernel module's DKMS package (kernel-module/dkms.conf) and the version
the Ansible role installs by default (``tlbbalance_module_version``)
restate it because DKMS and Ansible cannot read setup.cfg: this test
fails, naming the file and the line to change, when one of them differs.
The module's ``MODULE_VERSION`` is made from dkms.conf by Kbuild at build
time (checked here by evaluating Kbuild, and on every built .ko by
tools/kernels/boot/module.py in ``tox -e kmod``). A release is the git tag
``X.Y.Z`` on the commit whose setup.cfg says ``X.Y.Z``
(docs/releasing.md); reno takes its release sections from those tags.
"""

import configparser
import os
import re
import shutil
import subprocess
import sys
from importlib import metadata

import pytest
import yaml

import nova_tlbbalance
from nova_tlbbalance import cli

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))

# (file, pattern whose group 1 is the version); each must match once.
RESTATED = (
    ('kernel-module/dkms.conf', r'^PACKAGE_VERSION="([^"]*)"$'),
    ('ansible/roles/tlbbalance/defaults/main.yml',
     r'^tlbbalance_module_version: "([^"]*)"$'),
    ('ansible/roles/tlbbalance/meta/argument_specs.yml',
     r'^        default: "(\d+\.\d+\.\d+)"$'),
    ('ansible/galaxy.yml', r'^version: (\S+)$'),
    # the tempest plugin, a distribution of its own (docs/tempest.md)
    ('tempest-plugin/setup.cfg', r'^version = (\S+)$'),
    ('ansible/inventory.example.yml',
     r'^\s+tlbbalance_module_version: "([^"]*)"$'),
    ('ansible/inventory.example.yml',
     r'/nova_tlbbalance-([^-]+)-py3-none-any\.whl$'),
    ('docs/ansible.md', r'^\| `tlbbalance_module_version` \| `([^`]*)` \|'),
    ('docs/kernel-module.md', r'dkms install tlbbalance/(\S+)'),
)


def setup_cfg_version():
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(TOP, 'setup.cfg'))
    return cfg['metadata']['version']


def matches(rel, pattern):
    """[(line number, version)] where ``pattern`` matches in ``rel``."""
    with open(os.path.join(TOP, rel)) as f:
        return [(n, m.group(1)) for n, line in enumerate(f, 1)
                for m in [re.search(pattern, line.rstrip('\n'))] if m]


def test_setup_cfg_version_is_pep440():
    assert re.fullmatch(r'\d+\.\d+\.\d+', setup_cfg_version())


@pytest.mark.parametrize('rel, pattern', RESTATED,
                         ids=['%s:%d' % (r[0], i)
                              for i, r in enumerate(RESTATED)])
def test_restated_version_matches_setup_cfg(rel, pattern):
    version = setup_cfg_version()
    hits = matches(rel, pattern)
    assert len(hits) == 1, '%s: %r matched %d lines, not 1' % (
        rel, pattern, len(hits))
    lineno, found = hits[0]
    assert found == version, (
        '%s:%d says %s, setup.cfg says %s: the DKMS package, the Ansible '
        'role and the docs must install and name the version the Python '
        'package has' % (rel, lineno, found, version))


def test_ansible_default_is_what_dkms_builds():
    """The role's default module version is dkms.conf's PACKAGE_VERSION
    (the role rewrites PACKAGE_VERSION to tlbbalance_module_version when
    it unpacks the source, files/tlbbalance-module.sh)."""
    with open(os.path.join(TOP, 'ansible/roles/tlbbalance/defaults/'
                           'main.yml')) as f:
        default = yaml.safe_load(f)['tlbbalance_module_version']
    with open(os.path.join(TOP, 'kernel-module/dkms.conf')) as f:
        dkms = dict(line.rstrip('\n').split('=', 1) for line in f
                    if re.match(r'^[A-Z_]+=', line))
    assert dkms['PACKAGE_VERSION'].strip('"') == default
    assert dkms['PACKAGE_NAME'].strip('"') == 'tlbbalance'


def test_debian_changelog_version():
    """The Debian packages (make deb) take their version from
    debian/changelog's newest entry: setup.cfg's, without a Debian
    revision (a native package built from the tree)."""
    with open(os.path.join(TOP, 'debian', 'changelog')) as f:
        first = f.readline()
    m = re.match(r'^nova-tlbbalance \(([^)]*)\) ', first)
    assert m, 'debian/changelog:1: %r' % first
    assert m.group(1) == setup_cfg_version(), (
        'debian/changelog:1 says %s, setup.cfg says %s: add an entry '
        '(dch -v %s)' % (m.group(1), setup_cfg_version(),
                         setup_cfg_version()))


def test_installed_metadata_version():
    """What pip installed (tox: this checkout) reports setup.cfg's."""
    assert metadata.version('nova-tlbbalance') == setup_cfg_version()


def test_version_function_is_setup_cfgs():
    assert nova_tlbbalance.version() == setup_cfg_version()


def test_version_function_installed_copy(tmp_path):
    """A copy of the package outside a source tree reports the installed
    distribution's version (here: the one tox installed, from setup.cfg),
    and a package directory named nova_tlbbalance of another project's
    setup.cfg is not taken for a source tree."""
    (tmp_path / 'setup.cfg').write_text(
        '[metadata]\nname = other\nversion = 9.9.9\n')
    assert nova_tlbbalance._tree_version(str(tmp_path)) is None
    assert nova_tlbbalance._tree_version(TOP) == setup_cfg_version()
    code = ('import sys; sys.path.insert(0, %r); import nova_tlbbalance; '
            'print(nova_tlbbalance.version())')
    shutil.copytree(os.path.join(TOP, 'nova_tlbbalance'),
                    tmp_path / 'nova_tlbbalance')
    out = subprocess.run([sys.executable, '-c', code % str(tmp_path)],
                         stdout=subprocess.PIPE, text=True, check=True,
                         cwd=str(tmp_path), timeout=60).stdout
    assert out.strip() == metadata.version('nova-tlbbalance')


def test_cli_version(capsys, monkeypatch):
    monkeypatch.setattr(nova_tlbbalance, 'loaded_module_version',
                        lambda: None)
    with pytest.raises(SystemExit) as exc:
        cli.main(['--version'])
    assert exc.value.code == 0
    assert capsys.readouterr().out == 'tlbbalance %s\n' % (
        setup_cfg_version())


def test_cli_version_names_the_loaded_module(tmp_path, capsys,
                                             monkeypatch):
    # This host's kernel has no module support (docs/design/platform.md):
    # the module's sysfs file is laid out in a temporary directory; the
    # in-kernel tests see the real /sys/module/tlbbalance.
    (tmp_path / 'module' / 'tlbbalance').mkdir(parents=True)
    (tmp_path / 'module' / 'tlbbalance' / 'version').write_text('0.0.9\n')
    real = nova_tlbbalance.loaded_module_version
    assert real(str(tmp_path)) == '0.0.9'
    assert real(str(tmp_path / 'nothing')) is None
    monkeypatch.setattr(nova_tlbbalance, 'loaded_module_version',
                        lambda: real(str(tmp_path)))
    with pytest.raises(SystemExit):
        cli.main(['--version'])
    assert capsys.readouterr().out == (
        'tlbbalance %s\ntlbbalance.ko 0.0.9 (loaded)\n'
        % setup_cfg_version())


def kbuild_version(src):
    """What Kbuild makes TLBB_VERSION (MODULE_VERSION) in src: the Kbuild
    file evaluated by GNU make, as the kernel's build evaluates it."""
    return subprocess.run(
        ['make', '-s', '--no-print-directory', '-f',
         os.path.join(src, 'Kbuild'), 'src=' + src,
         '--eval', 'tlbb-print-version: ; @echo $(TLBB_VERSION)',
         'tlbb-print-version'],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        timeout=60)


def test_module_version_is_dkms_conf():
    src = os.path.join(TOP, 'kernel-module')
    res = kbuild_version(src)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == setup_cfg_version()
    with open(os.path.join(src, 'tlbb_main.c')) as f:
        assert 'MODULE_VERSION(TLBB_VERSION);' in f.read()


def test_module_without_version_does_not_build(tmp_path):
    shutil.copy(os.path.join(TOP, 'kernel-module', 'Kbuild'), tmp_path)
    (tmp_path / 'dkms.conf').write_text('PACKAGE_NAME="tlbbalance"\n')
    res = kbuild_version(str(tmp_path))
    assert res.returncode != 0
    assert 'dkms.conf: no PACKAGE_VERSION' in res.stderr


def version_tags():
    """{tag: commit} of the repository's version tags (X.Y.Z)."""
    out = subprocess.run(
        ['git', 'for-each-ref', '--format=%(refname:short) %(objectname) '
         '%(*objectname)', 'refs/tags'], cwd=TOP, check=True,
        stdout=subprocess.PIPE, text=True).stdout
    tags = {}
    for line in out.splitlines():
        name, obj, peeled = (line.split() + [''])[:3]
        if re.fullmatch(r'\d+\.\d+\.\d+', name):
            tags[name] = peeled or obj
    return tags


def _key(v):
    return tuple(int(x) for x in v.split('.'))


def test_version_tags_agree_with_setup_cfg():
    """A version tag names the commit whose setup.cfg says that version:
    a tag on HEAD is setup.cfg's version, and no tag is ahead of it (after
    a release, setup.cfg moves on, never back)."""
    version = setup_cfg_version()
    head = subprocess.run(['git', 'rev-parse', 'HEAD'], cwd=TOP, check=True,
                          stdout=subprocess.PIPE, text=True).stdout.strip()
    for tag, commit in version_tags().items():
        assert _key(tag) <= _key(version), (
            'tag %s is ahead of setup.cfg\'s %s' % (tag, version))
        if commit == head:
            assert tag == version, (
                'HEAD is tagged %s but setup.cfg says %s' % (tag, version))


def tree_version_at(commit):
    """setup.cfg's version in commit."""
    text = subprocess.run(['git', 'show', '%s:setup.cfg' % commit], cwd=TOP,
                          check=True, stdout=subprocess.PIPE,
                          text=True).stdout
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read_string(text)
    return cfg['metadata']['version']


def test_each_version_tag_is_on_its_version():
    """reno names a release section after its tag; the packages built from
    the tagged commit take setup.cfg's version: each tag must name the
    version its commit's setup.cfg says."""
    for tag, commit in version_tags().items():
        found = tree_version_at(commit)
        assert found == tag, (
            'tag %s is on %s, whose setup.cfg says %s: reno files notes '
            'under %s, the packages say %s' % (tag, commit[:12], found, tag,
                                               found))


def newest_reachable_tag():
    """(tag, commits since it) of the newest version tag HEAD descends
    from, as reno counts them, or None."""
    res = subprocess.run(
        ['git', 'describe', '--tags', '--long', '--match',
         '[0-9]*.[0-9]*.[0-9]*'], cwd=TOP, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True)
    if res.returncode:
        return None
    m = re.fullmatch(r'(\d+\.\d+\.\d+)-(\d+)-g[0-9a-f]+', res.stdout.strip())
    return (m.group(1), int(m.group(2))) if m else None


def test_notes_after_a_release_are_setup_cfgs_next_version():
    """After the tag X.Y.Z, reno lists new notes as "Not yet released":
    they go into the next release, so setup.cfg must already say a later
    version (else a build of this commit would claim to be X.Y.Z)."""
    found = newest_reachable_tag()
    check_after_tag(found, setup_cfg_version())


def check_after_tag(found, version):
    if found is None or found[1] == 0:
        return      # no release yet, or HEAD is the release (tested above)
    tag, since = found
    assert _key(version) > _key(tag), (
        'HEAD is %d commit(s) after the release tag %s and setup.cfg still '
        'says %s: set setup.cfg (and what test_version names) to the next '
        'version (docs/releasing.md#making-a-release)' % (since, tag,
                                                          version))


def test_check_after_tag_fails_on_a_stale_version():
    check_after_tag(None, '0.1.0')
    check_after_tag(('0.1.0', 0), '0.1.0')
    check_after_tag(('0.1.0', 3), '0.2.0')
    with pytest.raises(AssertionError, match='3 commit.s. after the release '
                       'tag 0.1.0 and setup.cfg still says 0.1.0'):
        check_after_tag(('0.1.0', 3), '0.1.0')
    with pytest.raises(AssertionError):
        check_after_tag(('0.2.0', 1), '0.1.9')
