# SPDX-License-Identifier: Apache-2.0
"""The README's first hour, as far as a unit test reaches: every command
the README and the docs run by a path of this repository is executable
(``tools/cloud/cloud.py up`` as written, no ``python3`` in front), and the
cloud's openrc and the operator guide ask for a compute API microversion
at which nova-api refuses a bad extra-spec value (2.86; the openstack
client's default is lower, and stores any value)."""

import os
import re
import shlex

import pytest

from cloudtools import cloud_modules

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
cloud, configs, first_hour = cloud_modules('cloud', 'configs', 'first_hour')

# nova validates flavor extra specs from this compute API microversion
VALIDATING = (2, 86)
FENCE = re.compile(r'^\s*```(\w*)\s*$')


def doc_pages():
    pages = ['README.md']
    for root, _, files in os.walk(os.path.join(TOP, 'docs')):
        pages += [os.path.relpath(os.path.join(root, f), TOP)
                  for f in files if f.endswith('.md')]
    return sorted(pages)


def shell_blocks(rel):
    """[(line number, line)] of rel's ```sh (and bare ```) code blocks."""
    out, lang = [], None
    with open(os.path.join(TOP, rel)) as f:
        for n, line in enumerate(f, 1):
            m = FENCE.match(line)
            if m:
                lang = None if lang is not None else m.group(1)
            elif lang in ('sh', 'bash', 'console', ''):
                out.append((n, line.rstrip('\n')))
    return out


def commands_by_path(rel):
    """[(line number, path)]: each command of rel's shell blocks whose
    program is a file of this repository named by a relative path."""
    found = []
    for n, line in shell_blocks(rel):
        line = re.sub(r'^\s*[$#] ', '', line)
        for part in re.split(r'&&|\|\||;|\|', line.split(' #')[0]):
            try:
                words = shlex.split(part)
            except ValueError:
                continue
            while words and re.match(r'^[A-Z_][A-Z0-9_]*=', words[0]):
                words = words[1:]     # VAR=value before the command
            if not words or words[0] in ('.', 'source'):
                continue
            prog = words[0]
            if '/' in prog and not prog.startswith(('/', '~', '$')) and \
                    os.path.isfile(os.path.join(TOP, prog)):
                found.append((n, prog))
    return found


PAGES = doc_pages()


def test_the_readme_cloud_block_is_seen():
    assert 'tools/cloud/cloud.py' in [p for _, p in
                                      commands_by_path('README.md')]


@pytest.mark.parametrize('rel', PAGES)
def test_commands_run_by_path_are_executable(rel):
    bad = ['%s:%d: %s' % (rel, n, prog) for n, prog in commands_by_path(rel)
           if not os.access(os.path.join(TOP, prog), os.X_OK)]
    assert not bad, 'run as written, these say "Permission denied" ' \
        '(git update-index --chmod=+x): %s' % ', '.join(bad)


def microversion(text):
    return tuple(int(x) for x in text.split('.'))


def test_cloud_openrc_validates_extra_specs(tmp_path):
    lay = configs.Layout(str(tmp_path), 20000, str(tmp_path / 'venv'),
                         configs.new_secrets())
    env = dict(re.match(r'^export (\w+)=(.*)$', line).groups()
               for line in cloud.openrc(lay).splitlines())
    assert microversion(env['OS_COMPUTE_API_VERSION']) >= VALIDATING
    # booting a server with --nic none needs 2.37: covered
    assert env['OS_AUTH_URL'] == lay.auth_url


def test_operator_guide_sets_the_microversion():
    found = [microversion(m.group(1))
             for _, line in shell_blocks('docs/operator-guide.md')
             for m in [re.match(r'^export OS_COMPUTE_API_VERSION=([\d.]+)',
                                line)] if m]
    assert found and all(v >= VALIDATING for v in found)


def test_first_hour_block_is_the_cloud_walkthrough():
    """docs/first-hour.md's block (run as written by tox -e tempest)
    starts the cloud, ends it, and covers the first hour's steps."""
    lines = [line for _, line in first_hour.block()]
    text = '\n'.join(lines)
    assert lines[0].startswith(first_hour.UP)
    assert lines[-1].startswith(first_hour.DOWN)
    for step in ('. out/cloud/openrc', 'tlbbalance:mode=bogus',
                 'server create', '--nic none', 'tlbbalance status',
                 'tlbbalance verify', 'server delete'):
        assert step in text, step


def test_first_hour_page_without_the_block_names_the_page(tmp_path):
    page = tmp_path / 'p.md'
    page.write_text('# nothing here\n```sh\ntools/cloud/cloud.py up\n```\n')
    with pytest.raises(first_hour.PageError, match=str(page)):
        first_hour.block(str(page))
    page.write_text('%s -->\n```sh\ntools/cloud/cloud.py up\necho hi\n'
                    '```\n' % first_hour.MARKER)
    with pytest.raises(first_hour.PageError, match='must end with'):
        first_hour.block(str(page))


def test_first_hour_stops_at_the_failing_line(capfd):
    """Each line is checked on its own (not bash -e, which a '!' line or
    a failing command in a pipeline's middle would slip through): the
    walk stops at the first failure, naming its line number."""
    ok = first_hour.run([(10, 'x=$(echo 1)'), (11, 'test "$x" = 1'),
                         (12, '! true   # must fail: it succeeds'),
                         (13, 'touch /nonexistent/never-run')])
    out = capfd.readouterr().out
    assert not ok
    assert 'first-hour:12: FAILED: ! true (rc 1)' in out
    assert 'first-hour:13' not in out
    assert first_hour.run([(1, 'true'), (2, 'false | true')])


def test_cloud_host_runs_in_the_hosts_namespaces():
    facts = {'venv': '/v', 'hosts': [
        {'name': 'h1', 'exec': ['nsenter', '-t', '7', '-m', '--']}]}
    assert cloud.host_argv(facts, 'h1', ['tlbbalance', 'status']) == [
        'nsenter', '-t', '7', '-m', '--', '/v/bin/tlbbalance', 'status']
    assert cloud.host_argv(facts, 'h1', ['cat', '/proc/x'])[-2:] == [
        'cat', '/proc/x']
    with pytest.raises(Exception, match="no compute host 'h9'.*hosts: h1"):
        cloud.host_argv(facts, 'h9', ['true'])


def test_as_run_puts_another_cloud_dir_in_place_of_out_cloud(tmp_path):
    """The page writes ``. out/cloud/openrc``; a cloud in another
    TLBB_CLOUD_DIR runs that line with its own directory (the line as
    written failed there: no such file)."""
    other = str(tmp_path / 'c 2')
    got = first_hour.as_run('. out/cloud/openrc   # creds', other)
    assert got == '. %s/openrc   # creds' % shlex.quote(other)
    assert first_hour.as_run('ls out/cloud', other) == \
        'ls %s' % shlex.quote(other)
    # a path that only contains the words is left alone
    assert first_hour.as_run('ls x/out/cloud/a', other) == 'ls x/out/cloud/a'
    assert first_hour.as_run('ls out/cloudy', other) == 'ls out/cloudy'
    # the default directory (or none set): the line as written
    default = os.path.join(TOP, 'out', 'cloud')
    assert first_hour.as_run('. out/cloud/openrc', default) == \
        '. out/cloud/openrc'
