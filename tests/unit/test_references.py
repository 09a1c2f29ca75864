# SPDX-License-Identifier: Apache-2.0
"""References resolve inside the repository (tools/check_references.py)."""

import os
import subprocess
import sys

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
sys.path.insert(0, os.path.join(TOP, 'tools'))
import check_references  # noqa: E402


def test_tree_references_resolve():
    problems = check_references.Checker(TOP).run()
    assert problems == [], '\n'.join(problems)


@pytest.fixture
def tree(tmp_path):
    """A small repository: docs/ with headings, a tool, a kernel dir."""
    def write(rel, text):
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    write('docs/guide.md', '# Guide\n\n## The `limit`: how it works\n\n'
          '```sh\n# not a heading\n```\n')
    write('docs/design/platform.md', '# Platform\n\n## Virtualization\n')
    write('tools/gen.py', '"""Writes docs/guide.md."""\n')
    write('kernel-module/Makefile', '# tests/run.sh boots the kernels\n')
    write('kernel-module/tests/run.sh', '#!/bin/sh\n')
    return write, tmp_path


def test_good_references_pass(tree):
    write, top = tree
    write('nova_tlbbalance/a.py',
          '# docs/guide.md#the-limit-how-it-works, '
          'docs/design/platform.md#virtualization\n'
          '# written by tools/gen.py; sample in /etc/tlbbalance/hook.conf\n')
    write('docs/other.md', 'See [the guide](guide.md#guide) and '
          '[platform](design/platform.md), [web](https://x.org/y.md).\n')
    assert check_references.Checker(str(top)).run() == []


@pytest.mark.parametrize('text, culprit', [
    ('# see docs/missing.md\n', 'docs/missing.md does not exist'),
    ('# docs/guide.md#no-such-section\n', 'no heading with anchor'),
    ('# docs/guide.md#not-a-heading\n', 'no heading with anchor'),
    ('# written by tools/gen_extra_specs_doc.py\n',
     'tools/gen_extra_specs_doc.py does not exist'),
    ('# the facts in ../shared/notes/platform.md\n',
     'outside the repository'),
    ('# the facts (platform.md)\n', 'platform.md is not a page'),
    ('# fixed as asked (issue 11 item 9)\n', 'cites an issue number'),
    ('"""Issue #3: refused."""\n', 'cites an issue number'),
])
def test_bad_reference_named(tree, text, culprit):
    write, top = tree
    write('nova_tlbbalance/a.py', 'x = 1\n' + text)
    problems = check_references.Checker(str(top)).run()
    assert len(problems) == 1, problems
    assert problems[0].startswith('nova_tlbbalance/a.py:2: ')
    assert culprit in problems[0]


def test_markdown_link_checked(tree):
    write, top = tree
    write('docs/other.md', 'See [x](guid.md) and [y](design/platform.md#vm)\n')
    problems = check_references.Checker(str(top)).run()
    assert len(problems) == 2, problems


def test_command_exit_status(tree):
    write, top = tree
    tool = os.path.join(TOP, 'tools', 'check_references.py')
    ok = subprocess.run([sys.executable, tool, str(top)],
                        capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout == ''
    write('tools/x.py', '# docs/gone.md\n')
    bad = subprocess.run([sys.executable, tool, str(top)],
                         capture_output=True, text=True)
    assert bad.returncode == 1
    assert bad.stdout == 'tools/x.py:1: docs/gone.md does not exist\n'
