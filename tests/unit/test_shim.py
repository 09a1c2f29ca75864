# SPDX-License-Identifier: Apache-2.0
"""``python3 -m nova_tlbbalance.shim``: nova.virt.tlbbalance put where
nova lives.

A nova tree laid out in a temporary directory stands in for a
distribution's nova (a regular ``nova`` package in one site directory)
and this package installed in another, as pip puts it in a virtualenv
made with ``--system-site-packages``: there Python never finds the
shipped shim. The command runs in a subprocess with that path, as an
operator runs it. With Debian's own nova the same is done in a trixie
root (tests/packaging/test_distro.py, tox -e distro).
"""

import os
import subprocess
import sys

import pytest

from nova_tlbbalance import shim

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def test_written_text_is_the_shipped_shim():
    with open(os.path.join(TOP, 'nova', 'virt', 'tlbbalance',
                           '__init__.py')) as f:
        assert f.read() == shim.SHIPPED
    assert shim.WRITTEN.startswith(shim.SHIPPED)


@pytest.fixture
def sites(tmp_path):
    """(distro site with nova, elsewhere site with the shipped shim)."""
    distro = tmp_path / 'distro'
    (distro / 'nova' / 'virt').mkdir(parents=True)
    (distro / 'nova' / '__init__.py').write_text('')
    (distro / 'nova' / 'virt' / '__init__.py').write_text('')
    elsewhere = tmp_path / 'elsewhere'
    (elsewhere / 'nova' / 'virt' / 'tlbbalance').mkdir(parents=True)
    (elsewhere / 'nova' / 'virt' / 'tlbbalance' / '__init__.py'
     ).write_text(shim.SHIPPED)
    return distro, elsewhere


def cmd(sites, *argv):
    distro, elsewhere = sites
    # this package's site first, as pip's in a --system-site-packages
    # venv; the repository provides nova_tlbbalance itself. -S: not this
    # env's site-packages, whose editable install of this checkout maps
    # nova.virt.tlbbalance to the tree (the command needs the standard
    # library only)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(elsewhere), TOP, str(distro)]))
    return subprocess.run([sys.executable, '-S', '-m',
                           'nova_tlbbalance.shim'] +
                          list(argv), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env,
                          cwd=str(distro.parent), timeout=60)


def test_install_where_nova_lives_then_remove(sites):
    distro, _ = sites
    res = cmd(sites, 'status')
    assert res.returncode == 1
    assert 'nova.virt.tlbbalance not found' in res.stdout
    assert str(distro / 'nova' / 'virt') in res.stdout

    dest = distro / 'nova' / 'virt' / 'tlbbalance' / '__init__.py'
    res = cmd(sites, 'install')
    assert res.returncode == 0, res.stderr
    assert res.stdout == 'installed %s\n' % dest
    assert dest.read_text() == shim.WRITTEN
    assert cmd(sites, 'install').stdout == 'unchanged %s\n' % dest

    res = cmd(sites, 'status')
    assert res.returncode == 0
    assert res.stdout == '%s (written by this command)\n' % dest

    res = cmd(sites, 'remove')
    assert res.stdout == 'removed %s\n' % dest
    assert not dest.parent.exists()
    assert cmd(sites, 'status').returncode == 1
    assert cmd(sites, 'remove').stdout == 'absent %s\n' % dest


def test_a_packaged_shim_is_kept(sites):
    """Beside nova already (pip in nova's venv, the Debian package):
    install has nothing to do, remove leaves it to the package."""
    distro, _ = sites
    dest = distro / 'nova' / 'virt' / 'tlbbalance' / '__init__.py'
    dest.parent.mkdir()
    dest.write_text(shim.SHIPPED)
    assert cmd(sites, 'install').stdout == 'unchanged %s\n' % dest
    assert cmd(sites, 'status').stdout == '%s (packaged)\n' % dest
    res = cmd(sites, 'remove')
    assert res.returncode == 1
    assert 'belongs to the installed package' in res.stderr
    assert dest.read_text() == shim.SHIPPED


def test_another_module_of_that_name_is_not_overwritten(sites):
    distro, _ = sites
    dest = distro / 'nova' / 'virt' / 'tlbbalance' / '__init__.py'
    dest.parent.mkdir()
    dest.write_text('something = "else"\n')
    res = cmd(sites, 'install')
    assert res.returncode == 1
    assert res.stderr == ('shim: %s exists and is not the nova-tlbbalance '
                          'shim: left as it is\n' % dest)
    assert dest.read_text() == 'something = "else"\n'
    assert cmd(sites, 'status').returncode == 1


def test_no_nova_names_the_python(tmp_path):
    env = dict(os.environ, PYTHONPATH=TOP)
    res = subprocess.run([sys.executable, '-I', '-c',
                          'import sys; sys.path.insert(0, %r); '
                          'sys.modules["nova"] = None; '
                          'from nova_tlbbalance import shim; '
                          'sys.exit(shim.main(["install"]))' % TOP],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env, timeout=60)
    assert res.returncode == 1
    assert 'cannot import nova' in res.stderr
    assert sys.executable in res.stderr


def test_unwritable_nova_names_the_file(sites):
    distro, _ = sites
    virt = distro / 'nova' / 'virt'
    os.chmod(virt, 0o555)
    try:
        if os.access(str(virt), os.W_OK):
            # root ignores the mode bits: make the target a file instead
            os.chmod(virt, 0o755)
            (virt / 'tlbbalance').write_text('')
        res = cmd(sites, 'install')
    finally:
        os.chmod(virt, 0o755)
    assert res.returncode == 1
    assert res.stderr.startswith('shim: install %s' % (virt / 'tlbbalance'))
    assert 'Traceback' not in res.stderr
