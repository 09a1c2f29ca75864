#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every reference in the tree resolves inside the repository.

    python3 tools/check_references.py [TOP]     (default: this checkout)

Checks every tracked text file (and new, not yet ignored ones):

- a ``docs/...`` path (``docs/page.md``, ``docs/page.md#a-section``) names a
  file that exists, and its ``#anchor``, if any, a heading of that page
  (the anchors Sphinx/MyST and GitHub give headings);
- a Markdown link ``[text](target)`` resolves from the page's directory;
- a path into the tree's own directories (``tools/x.py``,
  ``kernel-module/y.c``, ...) names a file that exists;
- a bare page name (``platform.md``) is a page next to the citing file, at
  the top or in ``docs/``;
- nothing cites notes outside the repository (``../shared``) or an issue
  tracker entry ("issue 11"): say what the fact is, or point at the docs.

Prints one ``file:line: problem`` per culprit; exit status 1 if any.
Standard library only: run by ``tox -e pep8`` and tests/unit.
"""

import os
import re
import subprocess
import sys

# Directories of this repository whose files comments cite by path.
TREE_DIRS = ('docs', 'tools', 'tests', 'kernel-module', 'tlbsim',
             'nova_tlbbalance', 'ansible', 'libvirt-hooks', 'etc',
             'releasenotes', 'tempest-plugin')
# What a cited file's name ends with (a directory or a generated file,
# e.g. tlbsim/build/tlbsim, is not checked).
CITED_EXT = (r'(?:py|sh|c|h|md|rst|yml|yaml|def|txt|conf|sample|cfg|ini|png'
             r'|tlb)')
# Not preceded by a path character: "../docs/x" and "/etc/x" are not ours.
_NOT_PATH = r'(?<![\w/.~$-])'
TREE_PATH = re.compile(_NOT_PATH + r'((?:%s)/[\w./+-]*\w)(#[\w-]+)?'
                       % '|'.join(map(re.escape, TREE_DIRS)))
CITED_FILE = re.compile(r'\.%s$' % CITED_EXT)
MD_LINK = re.compile(r'\]\(([^)\s]+)\)')
BARE_PAGE = re.compile(r'(?<![\w/.~$\'"-])([\w-]+\.md)\b')
FORBIDDEN = (
    (re.compile(r'\.\./shared\b|/work/shared\b|\bshared/notes\b'),
     'cites notes outside the repository'),
    (re.compile(r'\bissues? #?\d+', re.I),
     'cites an issue number: say what it is, or point at docs/'),
)
# The files that define the rules above quote the patterns they reject.
SELF = ('tools/check_references.py', 'tests/unit/test_references.py')
# (a .patch, e.g. docs/parked/, cites the tree it would make, not this one)
SKIP_EXT = ('.png', '.jpg', '.gz', '.ko', '.o', '.bin', '.patch')


def slug(heading):
    """The anchor MyST (myst_heading_anchors) and GitHub give a heading."""
    text = heading.strip().lower().replace(' ', '-')
    return re.sub(r'[^\w-]', '', text)


def anchors(path):
    found = set()
    fence = False
    with open(path, errors='replace') as f:
        for line in f:
            if line.startswith('```'):
                fence = not fence
            elif not fence and re.match(r'#{1,6} ', line):
                found.add(slug(line.lstrip('#')))
    return found


def tracked_files(top):
    try:
        out = subprocess.run(
            ['git', '-C', top, 'ls-files', '-z', '--cached', '--others',
             '--exclude-standard'], capture_output=True, check=True).stdout
        names = sorted(set(out.decode().split('\0')) - {''})
    except (OSError, subprocess.CalledProcessError):
        names = []
        for d, subdirs, files in os.walk(top):
            subdirs[:] = [s for s in subdirs
                          if not s.startswith('.') and s not in ('build',
                                                                 'out')]
            names += [os.path.relpath(os.path.join(d, f), top)
                      for f in files]
    return [n for n in names
            if os.path.isfile(os.path.join(top, n))
            and not n.endswith(SKIP_EXT)]


class Checker:
    def __init__(self, top):
        self.top = top
        self._anchors = {}
        self.problems = []

    def report(self, name, lineno, msg):
        self.problems.append('%s:%d: %s' % (name, lineno, msg))

    def resolve(self, name, lineno, rel, anchor, cited):
        path = os.path.normpath(os.path.join(self.top, rel))
        if not os.path.exists(path):
            self.report(name, lineno, '%s does not exist' % cited)
        elif anchor and path.endswith('.md'):
            if path not in self._anchors:
                self._anchors[path] = anchors(path)
            if anchor.lstrip('#') not in self._anchors[path]:
                self.report(name, lineno, '%s: no heading with anchor %s'
                            % (cited, anchor))

    def resolve_tree(self, name, lineno, rel, anchor, cited):
        """A tree path, from the top or from the citing file's directory
        or one of its parents (kernel-module/Makefile cites tests/...)."""
        d = os.path.dirname(name)
        while d:
            if os.path.exists(os.path.join(self.top, d, rel)):
                rel = os.path.join(d, rel)
                break
            d = os.path.dirname(d)
        self.resolve(name, lineno, rel, anchor, cited)

    def check_file(self, name):
        here = os.path.dirname(name)
        is_md = name.endswith('.md')
        try:
            with open(os.path.join(self.top, name), encoding='utf-8') as f:
                lines = f.readlines()
        except UnicodeDecodeError:
            return
        fence = False
        for lineno, line in enumerate(lines, 1):
            if name in SELF:
                break
            for pattern, msg in FORBIDDEN:
                m = pattern.search(line)
                if m:
                    self.report(name, lineno, '%r %s' % (m.group(0), msg))
            for m in TREE_PATH.finditer(line):
                if CITED_FILE.search(m.group(1)):
                    self.resolve_tree(name, lineno, m.group(1), m.group(2),
                                      m.group(0))
            if is_md and line.startswith('```'):
                fence = not fence
            links = []
            if is_md and not fence:
                for m in MD_LINK.finditer(line):
                    links.append(m.span(1))
                    target = m.group(1)
                    if re.match(r'[a-z]+:', target) or target.startswith(
                            ('#', '<')):
                        continue
                    rel, _, anchor = target.partition('#')
                    self.resolve(name, lineno, os.path.join(here, rel),
                                 '#' + anchor if anchor else '', target)
            for m in BARE_PAGE.finditer(line):
                page = m.group(1)
                if any(s <= m.start() < e for s, e in links):
                    continue        # a link target, resolved above
                if page in ('README.md',) or any(
                        os.path.exists(os.path.join(self.top, d, page))
                        for d in (here, 'docs')):
                    continue
                # a path cited with its directory is checked above
                if line[m.start() - 1:m.start()] == '/':
                    continue
                self.report(name, lineno, '%s is not a page of this '
                            'repository (next to %s, or in docs/)'
                            % (page, name))

    def run(self):
        for name in tracked_files(self.top):
            self.check_file(name)
        return self.problems


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    top = argv[0] if argv else os.path.join(os.path.dirname(__file__), '..')
    problems = Checker(os.path.abspath(top)).run()
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
