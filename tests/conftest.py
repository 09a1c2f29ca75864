# SPDX-License-Identifier: Apache-2.0
"""Shared test helpers importable from every suite: tests/ (fake_module),
tools/ (tlbbwait, the one bounded poll the tools share) and the tempest
plugin's own distribution (tempest-plugin/, whose SSH access the unit
tests drive without tempest installed)."""

import os
import sys

_TESTS = os.path.dirname(os.path.abspath(__file__))
_TOP = os.path.dirname(_TESTS)

# appended, not prepended: the suites' folders (ansible, functional, ...)
# must never shadow a real package
for _path in (_TESTS, os.path.join(_TOP, 'tools'),
              os.path.join(_TOP, 'tempest-plugin')):
    if _path not in sys.path:
        sys.path.append(_path)
