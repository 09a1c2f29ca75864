# SPDX-License-Identifier: Apache-2.0
"""One way for a tool to import nova_tlbbalance from its checkout:
tools/_repo.py.  The tools put tools/ on sys.path and import it; none
computes the checkout and adds it to sys.path by itself.  Run from
another directory by Debian's python3 in isolated mode (-I: no
PYTHONPATH, no user site; nova_tlbbalance is not installed there), as an
operator runs them from a fresh clone."""

import glob
import os
import re
import subprocess

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
SYSTEM_PYTHON = '/usr/bin/python3'
# sys.path.append(REPO), sys.path.insert(0, _REPO), ...
OWN_REPO_PATH = re.compile(
    r'sys\.path\.(append|insert)\((0,\s*)?_?(REPO|TOP)\)')


def tool_sources():
    for pattern in ('tools/**/*.py', 'tests/ansible/**/*.py'):
        for path in glob.glob(os.path.join(TOP, pattern), recursive=True):
            yield os.path.relpath(path, TOP)


def test_no_tool_puts_the_checkout_on_sys_path_itself():
    own = []
    for rel in tool_sources():
        if rel == os.path.join('tools', '_repo.py'):
            continue
        with open(os.path.join(TOP, rel)) as f:
            for n, line in enumerate(f, 1):
                if OWN_REPO_PATH.search(line):
                    own.append('%s:%d: %s' % (rel, n, line.strip()))
    assert not own, 'use tools/_repo.py:\n' + '\n'.join(own)
    for rel in ('tools/node/node.py', 'tools/cloud/procs.py',
                'tests/ansible/fleet.py'):
        with open(os.path.join(TOP, rel)) as f:
            assert re.search(r'^(from _repo import REPO|import _repo)\b',
                             f.read(), re.M), rel


@pytest.mark.skipif(not os.access(SYSTEM_PYTHON, os.X_OK),
                    reason='no %s (Debian python3)' % SYSTEM_PYTHON)
@pytest.mark.parametrize('argv, want', [
    (['tests/ansible/fleet.py', '--help'], ''),     # imports, no CLI
    (['tools/cloud/cloud.py', '--help'], 'usage: cloud.py'),
    (['tools/node/node.py', '--help'], 'usage: node.py'),
    (['tools/demo/demo.py', '--help'], 'usage: demo.py'),
    (['-c', 'import sys; sys.path.insert(0, %r); import node, scenario; '
      'print(scenario.wait_until.__module__)'
      % os.path.join(TOP, 'tools', 'node')], 'tlbbwait'),
    # in the node: tools/node's agent and relay import vport, which finds
    # tools/ itself (the node's tlbb-node.pth names the checkout only)
    (['-c', 'import sys; sys.path.insert(0, %r); import vport; '
      'print(vport.wait_until.__module__)'
      % os.path.join(TOP, 'tools', 'node')], 'tlbbwait'),
    (['-c', 'import sys; sys.path.insert(0, %r); import procs; '
      'print(procs.wait_until.__module__)'
      % os.path.join(TOP, 'tools', 'cloud')], 'tlbbwait'),
])
def test_tools_run_from_any_cwd(tmp_path, argv, want):
    if not argv[0].startswith('-'):
        argv = [os.path.join(TOP, argv[0])] + argv[1:]
    p = subprocess.run([SYSTEM_PYTHON, '-I'] + argv, cwd=str(tmp_path),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert want in p.stdout
