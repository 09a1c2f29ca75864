# SPDX-License-Identifier: Apache-2.0
"""tools/cloud's modules for the unit tests, imported once without
shadowing anything: tools/cloud has a module named ``openstack`` (and
others with common names), so its folders are on sys.path only while
they are imported, and the tools' modules leave sys.modules after (the
tests keep their own references)."""

import importlib
import os
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOLS = os.path.join(TOP, 'tools')
CLOUD = os.path.join(TOOLS, 'cloud')


def cloud_modules(*names):
    """The tools/cloud modules ``names``, in that order."""
    path, before = list(sys.path), set(sys.modules)
    sys.path[:0] = [TOP, TOOLS, CLOUD]
    try:
        return [importlib.import_module(n) for n in names]
    finally:
        sys.path[:] = path
        for m in set(sys.modules) - before:
            if (getattr(sys.modules[m], '__file__', None) or '').startswith(
                    TOOLS + os.sep):
                del sys.modules[m]
