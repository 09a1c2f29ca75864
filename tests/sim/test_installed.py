# SPDX-License-Identifier: Apache-2.0
"""``tlbbalance simulate`` from a wheel installed in a clean virtualenv.

The wheel is built from this tree (its Python files only, copied to a
temporary directory so the checkout gets no build/), installed with
``--no-deps`` into a new venv (the simulate path needs only the standard
library), and the console script runs with its working directory outside
the checkout. The wheel carries no C binary: without tlbsim the command
must say what to install; with ``make -C tlbsim install`` into a temporary
prefix on PATH, or ``$TLBSIM_BIN``, it must simulate.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO

# What the wheel is built from (setup.cfg's packages and data files).
WHEEL_SOURCES = ('setup.cfg', 'pyproject.toml', 'README.md',
                 'requirements.txt', 'nova_tlbbalance', 'nova',
                 'libvirt-hooks')
RUN = ('simulate', '--workload', 'seq:size=256M,stride=16K',
       '--accesses', '1e6', '--json')


@pytest.fixture(scope='module')
def installed(tmp_path_factory):
    """(venv's tlbbalance script, a directory outside the checkout)."""
    tmp = tmp_path_factory.mktemp('installed')
    src = tmp / 'src'
    for name in WHEEL_SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns(
                '__pycache__', '*.pyc'))
        else:
            src.mkdir(exist_ok=True)
            shutil.copy(path, src / name)
    # the build backend of this env (setuptools), no download
    subprocess.run([sys.executable, '-m', 'pip', 'wheel', '-q', '--no-deps',
                    '--no-build-isolation', '-w', str(tmp / 'wheels'),
                    str(src)], check=True, timeout=300,
                   capture_output=True)
    wheel, = (tmp / 'wheels').iterdir()
    venv = tmp / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', str(venv)], check=True,
                   timeout=300)
    subprocess.run([str(venv / 'bin' / 'pip'), 'install', '-q',
                    '--no-deps', '--no-index', str(wheel)], check=True,
                   timeout=300)
    work = tmp / 'elsewhere'
    work.mkdir()
    return venv / 'bin' / 'tlbbalance', work


def run(installed, path_dirs=(), **env):
    script, work = installed
    clean = {k: v for k, v in os.environ.items()
             if k not in ('TLBSIM_BIN', 'PYTHONPATH')}
    # PATH without any tlbsim the machine may have; the venv's bin only
    clean['PATH'] = os.pathsep.join(
        [str(d) for d in path_dirs] + [str(script.parent), '/usr/bin',
                                       '/bin'])
    clean.update(env)
    return subprocess.run([str(script)] + list(RUN), cwd=work, env=clean,
                          capture_output=True, text=True, timeout=300)


def check_ran(proc):
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    # as tests/sim/test_cli.py: 8 guest + 8 host huge pages, refilled once
    assert res['refills_huge'] == 16 and res['machine'] == 'gs464v'


def test_package_is_not_the_checkout(installed):
    script, work = installed
    code = 'import nova_tlbbalance, sys; print(nova_tlbbalance.__file__)'
    out = subprocess.run([str(script.parent / 'python'), '-c', code],
                         cwd=work, capture_output=True, text=True,
                         check=True).stdout
    assert str(REPO) not in out and 'site-packages' in out


def test_without_tlbsim_names_what_to_install(installed):
    proc = run(installed)
    assert proc.returncode == 2 and proc.stdout == ''
    err = proc.stderr
    assert err.startswith('tlbbalance simulate: the tlbsim simulator is '
                          'not installed'), err
    assert 'make -C tlbsim install' in err and '$TLBSIM_BIN' in err
    # no path into the venv's site-packages offered as a source tree
    assert 'site-packages' not in err


def test_tlbsim_installed_on_path(installed, tlbsim, tmp_path):
    prefix = tmp_path / 'prefix'
    subprocess.run(['make', '-s', '-C', str(REPO / 'tlbsim'), 'install',
                    'PREFIX=%s' % prefix], check=True, timeout=600)
    assert (prefix / 'bin' / 'tlbsim').is_file()
    check_ran(run(installed, path_dirs=[prefix / 'bin']))


def test_tlbsim_bin_variable(installed, tlbsim):
    check_ran(run(installed, TLBSIM_BIN=tlbsim))
