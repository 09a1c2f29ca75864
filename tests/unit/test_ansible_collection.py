# SPDX-License-Identifier: Apache-2.0
"""ansible/ is the collection tlbbalance.nova (galaxy.yml): its metadata,
and argument specs that describe every variable of the role with the
default the role really uses (defaults/main.yml). The collection is built,
installed and used in tox -e packaging (tests/packaging/test_collection.py).
"""

import os

import yaml

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
ROLE = os.path.join(TOP, 'ansible', 'roles', 'tlbbalance')


def load(*rel):
    with open(os.path.join(*rel)) as f:
        return yaml.safe_load(f)


def test_galaxy_metadata():
    galaxy = load(TOP, 'ansible', 'galaxy.yml')
    # what ansible-galaxy requires, and names Galaxy accepts
    for key in ('namespace', 'name', 'version', 'readme', 'authors'):
        assert galaxy[key], key
    assert galaxy['namespace'] == 'tlbbalance' and galaxy['name'] == 'nova'
    assert os.path.isfile(os.path.join(TOP, 'ansible', galaxy['readme']))
    assert galaxy['license'] == ['Apache-2.0']
    # the repository's playbook and inventory stay out of the collection
    assert {'site.yml', 'inventory.example.yml'} <= set(
        galaxy['build_ignore'])
    runtime = load(TOP, 'ansible', 'meta', 'runtime.yml')
    assert runtime['requires_ansible'].startswith('>=')


def specs():
    return load(ROLE, 'meta', 'argument_specs.yml')[
        'argument_specs']['main']['options']


def test_every_variable_has_a_spec_with_its_default():
    defaults = load(ROLE, 'defaults', 'main.yml')
    options = specs()
    assert sorted(set(defaults) - set(options)) == [], \
        'variables of defaults/main.yml without an argument spec'
    assert sorted(set(options) - set(defaults)) == [], \
        'argument specs without a default in defaults/main.yml'
    wrong = ['%s: spec says %r, defaults/main.yml %r'
             % (name, options[name].get('default'), value)
             for name, value in defaults.items()
             if 'default' not in options[name] or
             options[name]['default'] != value]
    assert not wrong, '\n'.join(wrong)


def test_every_spec_is_described_and_typed():
    for name, spec in specs().items():
        assert spec.get('description'), name
        assert spec.get('type') in ('str', 'bool', 'int', 'dict', 'list',
                                    'path'), name
        if 'choices' in spec:
            assert spec['default'] in spec['choices'], name
