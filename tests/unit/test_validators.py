# SPDX-License-Identifier: Apache-2.0
"""nova_tlbbalance.validators, as nova-api loads and applies them."""

import pytest

from nova.api.validation.extra_specs import base
from nova.api.validation.extra_specs import validators as nova_validators
from nova import exception

from nova_tlbbalance import extra_specs as es
from nova_tlbbalance import module_defs
from nova_tlbbalance import validators


def test_one_nova_validator_per_table_row():
    got = validators.register()
    assert [v.name for v in got] == [s.key for s in es.SPECS]
    for v in got:
        assert isinstance(v, base.ExtraSpecValidator)


def test_loaded_by_nova_through_the_entry_point():
    # nova's own stevedore loading (run at import of its validators module)
    for s in es.SPECS:
        assert s.key in nova_validators.VALIDATORS
    assert 'tlbbalance' in nova_validators.NAMESPACES


@pytest.mark.parametrize('key,value', [
    ('tlbbalance:mode', 'balance'), ('tlbbalance:backing', 'none'),
    ('tlbbalance:tlbi_scope', 'die'), ('tlbbalance:strict', 'False'),
    ('tlbbalance:prefault', 'false'), ('tlbbalance:prefault', 'True'),
] + [('tlbbalance:' + p.name, str(p.max)) for p in module_defs.params()])
def test_nova_accepts(key, value):
    nova_validators.validate(key, value)


@pytest.mark.parametrize('key,value,words', [
    ('tlbbalance:mode', 'on', ['tlbbalance:mode', 'off | monitor | balance']),
    ('tlbbalance:strict', 'sure', ['tlbbalance:strict', 'true | false']),
    ('tlbbalance:prefault', 'lazy',
     ["tlbbalance:prefault: invalid value 'lazy'", 'true | false']),
    ('tlbbalance:interval_ms', '0', ['tlbbalance:interval_ms', '1..']),
    ('tlbbalance:frobnicate', '1', ['tlbbalance:frobnicate']),
])
def test_nova_rejects_naming_the_key(key, value, words):
    with pytest.raises(exception.ValidationError) as exc:
        nova_validators.validate(key, value)
    for word in words:
        assert word in str(exc.value)


def test_value_schema_for_nova_docs():
    by_name = {v.name: v for v in validators.register()}
    assert by_name['tlbbalance:mode'].value['enum'] == es.MODES
    assert by_name['tlbbalance:strict'].value['type'] is bool
    p = module_defs.param('samples')
    v = by_name['tlbbalance:samples'].value
    assert (v['type'], v['min'], v['max']) == (int, p.min, p.max)
