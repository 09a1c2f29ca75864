"""One version: setup.cfg's. Every other place that states it must agree.

The Python package's version is ``[metadata] version`` in setup.cfg (the
documentation reads it from there too, docs/conf.py). The kernel module's
DKMS package (kernel-module/dkms.conf) and the version the Ansible role
installs by default (``tlbbalance_module_version``) restate it because
DKMS and Ansible cannot read setup.cfg: this test fails, naming the file
and the line to change, when one of them differs. To release a new
version, change setup.cfg and then every place this test lists.
"""

import configparser
import os
import re
from importlib import metadata

import pytest
import yaml

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))

# (file, pattern whose group 1 is the version); each must match once.
RESTATED = (
    ('kernel-module/dkms.conf', r'^PACKAGE_VERSION="([^"]*)"$'),
    ('ansible/roles/tlbbalance/defaults/main.yml',
     r'^tlbbalance_module_version: "([^"]*)"$'),
    ('ansible/inventory.example.yml',
     r'^\s+tlbbalance_module_version: "([^"]*)"$'),
    ('ansible/inventory.example.yml',
     r'/nova_tlbbalance-([^-]+)-py3-none-any\.whl$'),
    ('docs/ansible.md', r'^\| `tlbbalance_module_version` \| `([^`]*)` \|'),
    ('docs/kernel-module.md', r'dkms install tlbbalance/(\S+)'),
)


def setup_cfg_version():
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(TOP, 'setup.cfg'))
    return cfg['metadata']['version']


def matches(rel, pattern):
    """[(line number, version)] where ``pattern`` matches in ``rel``."""
    with open(os.path.join(TOP, rel)) as f:
        return [(n, m.group(1)) for n, line in enumerate(f, 1)
                for m in [re.search(pattern, line.rstrip('\n'))] if m]


def test_setup_cfg_version_is_pep440():
    assert re.fullmatch(r'\d+\.\d+\.\d+', setup_cfg_version())


@pytest.mark.parametrize('rel, pattern', RESTATED,
                         ids=['%s:%d' % (r[0], i)
                              for i, r in enumerate(RESTATED)])
def test_restated_version_matches_setup_cfg(rel, pattern):
    version = setup_cfg_version()
    hits = matches(rel, pattern)
    assert len(hits) == 1, '%s: %r matched %d lines, not 1' % (
        rel, pattern, len(hits))
    lineno, found = hits[0]
    assert found == version, (
        '%s:%d says %s, setup.cfg says %s: the DKMS package, the Ansible '
        'role and the docs must install and name the version the Python '
        'package has' % (rel, lineno, found, version))


def test_ansible_default_is_what_dkms_builds():
    """The role's default module version is dkms.conf's PACKAGE_VERSION
    (the role rewrites PACKAGE_VERSION to tlbbalance_module_version when
    it unpacks the source, files/tlbbalance-module.sh)."""
    with open(os.path.join(TOP, 'ansible/roles/tlbbalance/defaults/'
                           'main.yml')) as f:
        default = yaml.safe_load(f)['tlbbalance_module_version']
    with open(os.path.join(TOP, 'kernel-module/dkms.conf')) as f:
        dkms = dict(line.rstrip('\n').split('=', 1) for line in f
                    if re.match(r'^[A-Z_]+=', line))
    assert dkms['PACKAGE_VERSION'].strip('"') == default
    assert dkms['PACKAGE_NAME'].strip('"') == 'tlbbalance'


def test_installed_metadata_version():
    """What pip installed (tox: this checkout) reports setup.cfg's."""
    assert metadata.version('nova-tlbbalance') == setup_cfg_version()
