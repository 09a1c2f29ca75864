# SPDX-License-Identifier: Apache-2.0
"""tools/ci/want-kmod-debug.sh: CI runs tox -e kmod-debug (the in-kernel
suite under the debug kernel) for every change to the module or to the
debug kernel's build, and leaves it out otherwise (its kernel build from an
empty cache does not fit every run's budget)."""

import os
import shutil
import subprocess

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
SCRIPT = os.path.join(TOP, 'tools', 'ci', 'want-kmod-debug.sh')


def git(repo, *args):
    subprocess.run(['git', '-C', str(repo), '-c', 'user.name=t',
                    '-c', 'user.email=t@example.com'] + list(args),
                   check=True, stdout=subprocess.DEVNULL)


def repo_with_main(tmp_path):
    """A repository whose main holds the script and one file per area."""
    repo = tmp_path / 'repo'
    (repo / 'tools' / 'ci').mkdir(parents=True)
    shutil.copy2(SCRIPT, str(repo / 'tools' / 'ci'))
    (repo / 'kernel-module').mkdir()
    (repo / 'kernel-module' / 'tlbb_vm.c').write_text('int x;\n')
    (repo / 'docs').mkdir()
    (repo / 'docs' / 'a.md').write_text('a\n')
    git(repo, 'init', '-q', '-b', 'main')
    git(repo, 'add', '.')
    git(repo, 'commit', '-q', '-m', 'base')
    git(repo, 'checkout', '-q', '-b', 'change')
    return repo


def want(repo, **env):
    p = subprocess.run([str(repo / 'tools' / 'ci' / 'want-kmod-debug.sh')],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True,
                       env=dict(os.environ, **env))
    return p.returncode, p.stdout.strip()


def test_module_change_runs_it(tmp_path):
    repo = repo_with_main(tmp_path)
    (repo / 'kernel-module' / 'tlbb_vm.c').write_text('int y;\n')
    git(repo, 'commit', '-q', '-am', 'module')
    rc, out = want(repo)
    assert rc == 0, out
    assert 'kernel-module/tlbb_vm.c' in out


def test_new_debug_config_file_runs_it_uncommitted(tmp_path):
    repo = repo_with_main(tmp_path)
    (repo / 'tools' / 'kernels' / 'debug').mkdir(parents=True)
    (repo / 'tools' / 'kernels' / 'debug' / 'debug.config').write_text(
        'CONFIG_KASAN=y\n')
    rc, out = want(repo)
    assert rc == 0, out


def test_other_change_leaves_it_out(tmp_path):
    repo = repo_with_main(tmp_path)
    (repo / 'docs' / 'a.md').write_text('b\n')
    git(repo, 'commit', '-q', '-am', 'docs')
    rc, out = want(repo)
    assert rc == 1, out
    assert 'left out' in out


def test_forced_either_way(tmp_path):
    repo = repo_with_main(tmp_path)
    assert want(repo, TLBB_KMOD_DEBUG='1')[0] == 0
    (repo / 'kernel-module' / 'tlbb_vm.c').write_text('int y;\n')
    assert want(repo, TLBB_KMOD_DEBUG='0')[0] == 1
    rc, out = want(repo, TLBB_KMOD_DEBUG='yes')
    assert rc == 2 and "'yes'" in out


def test_no_base_leaves_it_out(tmp_path):
    # Without a base the change cannot be told: the uncached debug kernel
    # build must not take a CI run past its time limit by surprise.
    repo = repo_with_main(tmp_path)
    rc, out = want(repo, TLBB_CI_BASE='no-such-branch')
    assert rc == 1
    assert 'no merge base' in out and 'TLBB_KMOD_DEBUG=1' in out
