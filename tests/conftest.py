# SPDX-License-Identifier: Apache-2.0
"""Shared test helpers (tests/fake_module.py) importable from every suite."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
