# SPDX-License-Identifier: Apache-2.0
"""tox -e packaging: the Ansible collection tlbbalance.nova (ansible/,
galaxy.yml) as an operator gets it: ``ansible-galaxy collection build``,
then ``ansible-galaxy collection install`` of the tarball into an empty
collections path; there ``ansible-doc`` shows the role by its fully
qualified name with every variable's default, and a playbook that uses
``tlbbalance.nova.tlbbalance`` passes ``--syntax-check``
(docs/ansible.md#as-a-collection).
"""

import json
import os
import sys
import tarfile

import pytest
import yaml

from pkgtest import TOP, VERSION, run

BIN = os.path.dirname(sys.executable)
TARBALL = 'tlbbalance-nova-%s.tar.gz' % VERSION
ROLE = 'tlbbalance.nova.tlbbalance'


@pytest.fixture(scope='module')
def installed(tmp_path_factory):
    out = tmp_path_factory.mktemp('collection')
    run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'build',
         os.path.join(TOP, 'ansible'), '--output-path', str(out)], 300)
    tarball = out / TARBALL
    assert tarball.is_file(), os.listdir(out)
    path = out / 'collections'
    run([os.path.join(BIN, 'ansible-galaxy'), 'collection', 'install',
         str(tarball), '-p', str(path)], 300)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(path),
               ANSIBLE_ROLES_PATH=str(out / 'no-roles'))
    return str(tarball), str(path), env


def test_tarball_holds_the_role_only(installed):
    tarball, _, _ = installed
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
        manifest = json.load(tar.extractfile('MANIFEST.json'))
    assert manifest['collection_info']['version'] == VERSION
    # galaxy.yml becomes MANIFEST.json; the playbook and inventory stay
    assert not names & {'galaxy.yml', 'site.yml', 'inventory.example.yml'}
    for rel in ('README.md', 'LICENSE', 'meta/runtime.yml',
                'roles/tlbbalance/tasks/main.yml',
                'roles/tlbbalance/meta/argument_specs.yml',
                'roles/tlbbalance/files/tlbbalance-module.sh'):
        assert rel in names, rel


def test_ansible_doc_shows_every_default(installed):
    _, path, env = installed
    out = run([os.path.join(BIN, 'ansible-doc'), '-t', 'role', '--json',
               ROLE], 300, env=env)
    doc = json.loads(out[out.index('{'):])
    options = doc[ROLE]['entry_points']['main']['options']
    with open(os.path.join(TOP, 'ansible', 'roles', 'tlbbalance',
                           'defaults', 'main.yml')) as f:
        defaults = yaml.safe_load(f)
    assert set(options) == set(defaults)
    for name, value in defaults.items():
        assert options[name]['default'] == value, name
        assert options[name]['description'], name
    assert doc[ROLE]['path'].startswith(path)


def test_playbook_with_the_installed_role(installed, tmp_path):
    _, _, env = installed
    play = tmp_path / 'play.yml'
    play.write_text('- name: nova-tlbbalance from the collection\n'
                    '  hosts: compute\n'
                    '  gather_facts: false\n'
                    '  roles:\n'
                    '    - role: %s\n' % ROLE)
    out = run([os.path.join(BIN, 'ansible-playbook'), '--syntax-check',
               '-i', 'localhost,', str(play)], 300, env=env)
    assert 'playbook: %s' % play in out
    # the FQCN resolves to the installed copy only: with no collection
    # path the same play does not parse
    bad = dict(env, ANSIBLE_COLLECTIONS_PATH=str(tmp_path / 'none'))
    with pytest.raises(AssertionError, match="the role '%s' was not found"
                       % ROLE):
        run([os.path.join(BIN, 'ansible-playbook'), '--syntax-check',
             '-i', 'localhost,', str(play)], 300, env=bad)
