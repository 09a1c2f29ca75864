#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""docs/first-hour.md's command block, run as written.

The page's block (the one after its ``first-hour`` marker) starts with
``tools/cloud/cloud.py up`` and ends with ``tools/cloud/cloud.py down``;
``tox -e tempest`` (run_tempest.py) runs its first line to bring the
cloud up, the lines between before tempest, and its last line to take
the cloud down. The lines between run in one bash, from the top of the
repository, each checked on its own: a line that exits non-zero (for a
``! command`` line: a command that succeeded) stops the walk, named with
its line number on the page. ``python3 tools/cloud/first_hour.py`` runs
the whole block against a new cloud by itself. The page writes the
cloud's directory as ``out/cloud``; with ``TLBB_CLOUD_DIR`` set elsewhere
the lines run with that directory in its place (:func:`as_run`).
"""

import os
import re
import shlex
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PAGE = os.path.join(REPO, 'docs', 'first-hour.md')
MARKER = '<!-- first-hour:'
UP = 'tools/cloud/cloud.py up'
DOWN = 'tools/cloud/cloud.py down'


class PageError(Exception):
    pass


def block(page=PAGE):
    """[(line number, command line)] of the block after the marker, blank
    lines left out; a page without one, or whose block does not start
    with ``cloud.py up`` and end with ``cloud.py down``, is an error
    naming the page."""
    lines, state = [], 'before'
    with open(page) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip('\n')
            if state == 'before' and line.startswith(MARKER):
                state = 'marker'
            elif state == 'marker':
                if not re.match(r'^```(sh|bash)\s*$', line):
                    raise PageError('%s:%d: a ```sh block must follow the '
                                    'first-hour marker' % (page, n))
                state = 'in'
            elif state == 'in':
                if line.startswith('```'):
                    state = 'after'
                    break
                if line.strip():
                    lines.append((n, line))
    if state != 'after' or not lines:
        raise PageError('%s: no first-hour block (a %r line, then a '
                        '```sh block)' % (page, MARKER))
    for (n, line), want in ((lines[0], UP), (lines[-1], DOWN)):
        if _command(line) != want:
            raise PageError('%s:%d: the block must %s with %r, not %r'
                            % (page, n, 'start' if want == UP else 'end',
                               want, line))
    return lines


def _command(line):
    """The line without its comment, words joined by one space."""
    return ' '.join(shlex.split(line, comments=True))


def as_run(line, cloud_dir=None):
    """``line`` as it runs: the page names the cloud's directory by its
    default, ``out/cloud``; with another ``TLBB_CLOUD_DIR`` (e.g. two
    clouds side by side) that path is put in its place."""
    cloud_dir = cloud_dir or os.environ.get('TLBB_CLOUD_DIR')
    default = os.path.join(REPO, 'out', 'cloud')
    if not cloud_dir or os.path.abspath(cloud_dir) == default:
        return line
    return re.sub(r'(?<![\w./-])out/cloud(?=/|\s|$)',
                  shlex.quote(os.path.abspath(cloud_dir)), line)


def script(lines):
    """bash text that runs ``lines`` in order and stops at the first that
    fails, saying which."""
    out = ['cd %s' % shlex.quote(REPO)]
    for n, line in lines:
        line = as_run(line)
        out += ['echo %s' % shlex.quote('first-hour:%d: $ %s' % (n, line)),
                line,
                'rc=$?; if [ "$rc" -ne 0 ]; then echo %s"(rc $rc)"; '
                'exit 1; fi' % shlex.quote(
                    'first-hour:%d: FAILED: %s ' % (n, _command(line)))]
    out.append('echo "first-hour: all %d lines ran"' % len(lines))
    return '\n'.join(out) + '\n'


def run(lines, env=None):
    """Run ``lines``; True when every one of them succeeded."""
    p = subprocess.run(['bash', '--noprofile', '--norc'], input=script(lines),
                       text=True, env=env, cwd=REPO)
    return p.returncode == 0


def main():
    lines = block()
    if not run(lines[:1]):
        return 1
    ok = run(lines[1:-1])
    return 0 if run(lines[-1:]) and ok else 1


if __name__ == '__main__':
    sys.exit(main())
