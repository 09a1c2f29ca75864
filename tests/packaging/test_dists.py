# SPDX-License-Identifier: Apache-2.0
"""tox -e packaging: the distributions as an operator or a packager gets
them.

``python -m build`` makes the sdist from the tree and the wheel from the
sdist (so the sdist is complete enough to build from); ``twine check
--strict`` passes on both; the sdist holds the tree (``git ls-files``:
the kernel module for DKMS, docs, etc/, release notes, the role, tests,
tools); the metadata names both licences and carries README.md as the
long description; the wheel installs into a fresh virtualenv with its
requirements (held to constraints.txt) and ``tlbbalance --version`` run
from there reports setup.cfg's version. Last, the release scheme: a
clone tagged with setup.cfg's version gets reno release sections under
that version (docs/releasing.md).
"""

import email
import os
import subprocess
import sys
import tarfile
import zipfile

import pytest

from pkgtest import TOP, VERSION, run

BUILD_TIMEOUT = 900     # two isolated builds (setuptools from PyPI or cache)
INSTALL_TIMEOUT = 900   # the wheel's requirements into an empty venv


NAME = 'nova_tlbbalance-%s' % VERSION


@pytest.fixture(scope='module')
def dists(tmp_path_factory):
    out = tmp_path_factory.mktemp('dist')
    run([sys.executable, '-m', 'build', '--outdir', str(out), TOP],
        BUILD_TIMEOUT)
    sdist = out / ('%s.tar.gz' % NAME)
    wheel = out / ('%s-py3-none-any.whl' % NAME)
    assert sorted(os.listdir(out)) == sorted([sdist.name, wheel.name])
    return str(sdist), str(wheel)


def tree_files():
    """The tree's files as git sees them (tracked, or new and not ignored),
    less the CI entry point."""
    out = subprocess.run(['git', 'ls-files', '-z', '--cached', '--others',
                          '--exclude-standard'], cwd=TOP, check=True,
                         stdout=subprocess.PIPE).stdout.decode()
    return {f for f in out.split('\0')
            if f and not f.startswith('.ci/')
            and os.path.lexists(os.path.join(TOP, f))}


def sdist_members(sdist):
    with tarfile.open(sdist) as tar:
        return {m.name[len(NAME) + 1:]: m for m in tar.getmembers()
                if not m.isdir()}


def test_twine_check_strict(dists):
    out = run([sys.executable, '-m', 'twine', 'check', '--strict'] +
              list(dists), 120)
    assert out.count('PASSED') == 2, out


def test_sdist_is_the_tree(dists):
    members = sdist_members(dists[0])
    generated = {m for m in members if m == 'PKG-INFO' or
                 m.startswith('nova_tlbbalance.egg-info/')}
    assert 'PKG-INFO' in generated
    tree = tree_files()
    assert set(members) - generated == tree, (
        'in the sdist only: %s; in the tree only: %s' % (
            sorted(set(members) - generated - tree),
            sorted(tree - set(members))))


@pytest.mark.parametrize('rel', [
    'LICENSE', 'kernel-module/COPYING', 'kernel-module/dkms.conf',
    'kernel-module/Kbuild', 'kernel-module/tlbb_main.c',
    'kernel-module/core/tlbb_ctrl.c', 'docs/index.md', 'docs/conf.py',
    'etc/tlbbalance.conf.sample', 'releasenotes/config.yaml',
    'releasenotes/notes/first-release-cac46989322c3ab7.yaml',
    'libvirt-hooks/tlbbalance', 'ansible/site.yml', 'README.md',
    'constraints.txt', 'tox.ini',
])
def test_sdist_holds(dists, rel):
    member = sdist_members(dists[0])[rel]
    assert member.isfile(), '%s is a %s in the sdist' % (rel, member.type)


def test_sdist_executables_keep_their_mode(dists):
    members = sdist_members(dists[0])
    for rel in ('tools/cloud/cloud.py', 'kernel-module/tests/run-kernels.sh'):
        assert members[rel].mode & 0o111, rel


def metadata_of(sdist):
    with tarfile.open(sdist) as tar:
        return email.message_from_bytes(
            tar.extractfile('%s/PKG-INFO' % NAME).read())


def test_metadata(dists):
    meta = metadata_of(dists[0])
    assert meta['Name'] == 'nova-tlbbalance'
    assert meta['Version'] == VERSION
    assert meta['License-Expression'] == 'Apache-2.0 AND GPL-2.0-only'
    assert meta.get_all('License-File') == ['LICENSE',
                                            'kernel-module/COPYING']
    assert not [c for c in meta.get_all('Classifier')
                if c.startswith('License ::')]
    assert meta['Description-Content-Type'] == 'text/markdown'
    with open(os.path.join(TOP, 'README.md')) as f:
        readme = f.read()
    assert meta.get_payload().strip() == readme.strip()


def test_wheel_contents(dists):
    dist_info = '%s.dist-info' % NAME
    with zipfile.ZipFile(dists[1]) as whl:
        names = set(whl.namelist())
        params = whl.read('nova_tlbbalance/data/tlbb_params.def').decode()
        hook = whl.read('%s.data/data/share/nova-tlbbalance/libvirt-hooks/'
                        'tlbbalance' % NAME)
        meta = email.message_from_bytes(whl.read(dist_info + '/METADATA'))
    assert {dist_info + '/licenses/LICENSE',
            dist_info + '/licenses/kernel-module/COPYING',
            'nova_tlbbalance/cli/__init__.py',
            'nova/virt/tlbbalance/__init__.py'} <= names
    # nova's own packages are nova's
    assert not names & {'nova/__init__.py', 'nova/virt/__init__.py'}
    # the kernel module and the tree's tools are in the sdist only
    assert not [n for n in names if n.startswith(('kernel-module/',
                                                  'tools/', 'tests/'))]
    # the core's tables are files, not the tree's symbolic links
    assert 'SPDX-License-Identifier: GPL-2.0 OR Apache-2.0' in params
    assert hook.startswith(b'#!')
    assert meta['Version'] == VERSION
    assert meta['License-Expression'] == 'Apache-2.0 AND GPL-2.0-only'


def test_wheel_holds_what_compute_hosts_run(dists):
    """What operators install on compute hosts: no test-only code (the
    tools' and tests' bounded poll is tools/tlbbwait.py), no tempest
    plugin (its own distribution, below), the simulator front end as code
    whose dependencies only its extra brings (docs/simulator.md)."""
    dist_info = '%s.dist-info' % NAME
    with zipfile.ZipFile(dists[1]) as whl:
        names = set(whl.namelist())
        meta = email.message_from_bytes(whl.read(dist_info + '/METADATA'))
        entry_points = whl.read(dist_info + '/entry_points.txt').decode()
    assert not [n for n in names if 'wait' in n.rsplit('/', 1)[-1]], names
    assert not [n for n in names if 'tempest' in n], sorted(names)
    assert 'tempest' not in entry_points
    assert 'nova_tlbbalance/simulate/engine.py' in names
    assert meta.get_all('Provides-Extra') == ['sim', 'plot']
    requires = meta.get_all('Requires-Dist')
    assert 'matplotlib>=3.7; extra == "sim"' in requires, requires
    # the base install needs nothing of the simulator's
    assert not [r for r in requires
                if 'matplotlib' in r and 'extra ==' not in r], requires


PLUGIN = 'nova_tlbbalance_tempest_plugin-%s' % VERSION


@pytest.fixture(scope='module')
def plugin_dists(tmp_path_factory):
    """The tempest plugin's own sdist and wheel (tempest-plugin/; the
    wheel built from the sdist)."""
    out = tmp_path_factory.mktemp('plugin-dist')
    run([sys.executable, '-m', 'build', '--outdir', str(out),
         os.path.join(TOP, 'tempest-plugin')], BUILD_TIMEOUT)
    sdist = out / ('%s.tar.gz' % PLUGIN)
    wheel = out / ('%s-py3-none-any.whl' % PLUGIN)
    assert sorted(os.listdir(out)) == sorted([sdist.name, wheel.name])
    return str(sdist), str(wheel)


def test_tempest_plugin_is_its_own_distribution(plugin_dists):
    out = run([sys.executable, '-m', 'twine', 'check', '--strict'] +
              list(plugin_dists), 120)
    assert out.count('PASSED') == 2, out
    with tarfile.open(plugin_dists[0]) as tar:
        members = {m.name[len(PLUGIN) + 1:] for m in tar.getmembers()
                   if not m.isdir()}
    plugin_tree = {f[len('tempest-plugin/'):] for f in tree_files()
                   if f.startswith('tempest-plugin/')}
    generated = {m for m in members if m == 'PKG-INFO' or
                 m.startswith('nova_tlbbalance_tempest_plugin.egg-info/')}
    assert members - generated == plugin_tree, sorted(
        (members - generated) ^ plugin_tree)
    dist_info = '%s.dist-info' % PLUGIN
    with zipfile.ZipFile(plugin_dists[1]) as whl:
        names = set(whl.namelist())
        meta = email.message_from_bytes(whl.read(dist_info + '/METADATA'))
        entry_points = whl.read(dist_info + '/entry_points.txt').decode()
        licence = whl.read(dist_info + '/licenses/LICENSE').decode()
    assert {'tlbbalance_tempest_plugin/plugin.py',
            'tlbbalance_tempest_plugin/hosts.py',
            'tlbbalance_tempest_plugin/tests/scenario/test_module.py'} <= names
    assert not [n for n in names if n.startswith('nova_tlbbalance/')]
    assert ('tlbbalance = tlbbalance_tempest_plugin.plugin:'
            'TLBBalanceTempestPlugin') in entry_points
    assert '[tempest.test_plugins]' in entry_points
    assert meta['Name'] == 'nova-tlbbalance-tempest-plugin'
    assert meta['Version'] == VERSION
    assert meta['License-Expression'] == 'Apache-2.0'
    assert sorted(meta.get_all('Requires-Dist')) == ['nova-tlbbalance',
                                                     'tempest']
    with open(os.path.join(TOP, 'LICENSE')) as f:
        assert licence == f.read()


def test_wheel_in_a_fresh_venv(dists, tmp_path):
    venv = tmp_path / 'venv'
    run([sys.executable, '-m', 'venv', str(venv)], 300)
    pip = [str(venv / 'bin' / 'python'), '-m', 'pip']
    run(pip + ['install', '-q', '-c', os.path.join(TOP, 'constraints.txt'),
               dists[1]], INSTALL_TIMEOUT)
    run(pip + ['check'], 120)
    # away from the tree: the installed copy answers
    out = run([str(venv / 'bin' / 'tlbbalance'), '--version'], 120,
              cwd=str(tmp_path))
    assert out == 'tlbbalance %s\n' % VERSION
    out = run([str(venv / 'bin' / 'python'), '-c',
               'import nova_tlbbalance as t; print(t.version(), t.__file__)'],
              120, cwd=str(tmp_path))
    version, path = out.split()
    assert version == VERSION
    assert path.startswith(str(venv))


def test_reno_release_sections_from_a_version_tag(tmp_path):
    """What tagging a release gives: a clone of this commit, tagged with
    setup.cfg's version as docs/releasing.md says, has reno list the notes
    under that version, not as unreleased."""
    clone = tmp_path / 'clone'
    run(['git', 'clone', '-q', '--no-local', TOP, str(clone)], 300)
    tags = run(['git', 'tag', '--points-at', 'HEAD'], 60, cwd=str(clone))
    if VERSION not in tags.split():
        run(['git', '-c', 'user.name=packaging test', '-c',
             'user.email=packaging@test.invalid', 'tag', '-a', VERSION, '-m',
             'nova-tlbbalance %s' % VERSION], 60, cwd=str(clone))
    reno = os.path.join(os.path.dirname(sys.executable), 'reno')
    report = run([reno, 'report', str(clone)], 300)
    lines = report.splitlines()
    assert VERSION in lines, report[:2000]
    assert 'Not yet released' not in report
    # the first release's prelude is in the version's section
    assert 'First release of nova-tlbbalance' in report[
        report.index('\n%s\n' % VERSION):]
