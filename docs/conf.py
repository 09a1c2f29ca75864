# SPDX-License-Identifier: Apache-2.0
"""Sphinx configuration of the nova-tlbbalance documentation (tox -e docs).

The pages are Markdown (MyST); the release notes come from reno
(releasenotes/notes/, rendered by docs/releasenotes.rst). Warnings are
errors (tox runs sphinx-build -W).
"""

import configparser
import os

_TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..'))
_cfg = configparser.ConfigParser()
_cfg.read(os.path.join(_TOP, 'setup.cfg'))

project = 'nova-tlbbalance'
author = _cfg['metadata']['author']
copyright = 'nova-tlbbalance developers'
# One version, setup.cfg's (tests/unit/test_version.py checks the others).
version = release = _cfg['metadata']['version']

extensions = [
    'myst_parser',
    'reno.sphinxext',
]
source_suffix = {'.rst': 'restructuredtext', '.md': 'markdown'}
root_doc = 'index'
exclude_patterns = ['_build']
# Headings get anchors (as on GitHub): pages and comments cite
# docs/<page>.md#<heading> (tools/check_references.py checks them).
myst_heading_anchors = 4
# Tables and links as GitHub renders the same pages.
myst_enable_extensions = ['colon_fence']

html_theme = 'alabaster'
html_title = 'nova-tlbbalance %s' % release
