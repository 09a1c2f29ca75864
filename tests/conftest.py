# SPDX-License-Identifier: Apache-2.0
"""Shared test helpers (tests/fake_module.py) importable from every suite."""

import os
import sys

# appended, not prepended: the suites' folders (ansible, functional, ...)
# must never shadow a real package
sys.path.append(os.path.dirname(os.path.abspath(__file__)))
