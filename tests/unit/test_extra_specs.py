# SPDX-License-Identifier: Apache-2.0
"""nova_tlbbalance.extra_specs: the one table, derived from module_defs."""

import pytest

from nova_tlbbalance import extra_specs as es
from nova_tlbbalance import module_defs


def test_one_key_per_tunable_with_the_module_limits():
    params = module_defs.params()
    specs = [s for s in es.SPECS if s.param]
    assert [s.name for s in specs] == [p.name for p in params]
    for s, p in zip(specs, params):
        assert (s.key, s.kind, s.min, s.max, s.default, s.unit) == \
            ('tlbbalance:' + p.name, 'int', p.min, p.max, p.default, p.unit)
        assert p.help in s.description


def test_policy_keys():
    assert es.POLICY_KEYS == ('tlbbalance:mode', 'tlbbalance:backing',
                              'tlbbalance:tlbi_scope', 'tlbbalance:strict',
                              'tlbbalance:prefault')
    assert es.spec('tlbbalance:mode').choices == ('off', 'monitor',
                                                  'balance')
    assert es.spec('tlbbalance:backing').choices == ('thp', 'hugetlbfs',
                                                     'none')
    assert es.spec('tlbbalance:tlbi_scope').choices == ('none', 'die',
                                                        'cluster')
    for s in es.SPECS:
        if not s.param:
            assert s.parse(s.default) == s.default


@pytest.mark.parametrize('p', module_defs.params(), ids=lambda p: p.name)
def test_int_limits(p):
    s = es.spec('tlbbalance:' + p.name)
    assert s.parse(str(p.min)) == p.min
    assert s.parse(' %d ' % p.max) == p.max
    for bad in (str(p.max + 1), '-1', '1e3', '0x10', ''):
        with pytest.raises(ValueError, match='tlbbalance:' + p.name):
            s.parse(bad)


@pytest.mark.parametrize('value,want', [
    ('true', 'true'), ('True', 'true'), ('yes', 'true'), ('1', 'true'),
    ('on', 'true'), ('false', 'false'), ('No', 'false'), ('0', 'false'),
    ('off', 'false'), (True, 'true'), (False, 'false')])
def test_bool_spellings(value, want):
    assert es.spec('tlbbalance:strict').parse(value) == want


def test_prefault_is_a_boolean_defaulting_to_false():
    # lazy since docs/cloud.md's boot measurement: a lazy guest's touched
    # RAM is huge as it is touched, and the boot pays no pre-faulting
    s = es.spec('tlbbalance:prefault')
    assert (s.kind, s.default) == ('bool', 'false')
    assert s.parse('off') == 'false'
    with pytest.raises(ValueError, match="tlbbalance:prefault: invalid "
                       "value 'lazy'; allowed: true | false"):
        s.parse('lazy')


def test_enum_is_case_sensitive_like_nova():
    with pytest.raises(ValueError, match='off | monitor | balance'):
        es.spec('tlbbalance:mode').parse('Balance')


def test_unknown_key():
    with pytest.raises(ValueError, match="unknown extra spec 'tlbbalance:x'"):
        es.spec('tlbbalance:x')


def test_ours_filters_the_namespace():
    assert es.ours({'tlbbalance:mode': 'off', 'hw:cpu_policy': 'x',
                    'tlbbalancex:y': 1}) == {'tlbbalance:mode': 'off'}
    assert es.ours(None) == {}


def test_method_selects_the_controller_method():
    s = es.spec('tlbbalance:method')
    assert s.default == 0
    assert s.parse('1') == 1
    assert s.names == ('paper', 'hill', 'safe')
    assert [s.parse(n) for n in ('paper', 'hill', 'safe')] == [0, 1, 2]
    with pytest.raises(ValueError) as exc:
        s.parse('fast')
    assert str(exc.value) == (
        "tlbbalance:method: invalid value 'fast'; allowed: paper | hill | "
        "safe, or an integer 0..2 (method)")


def test_split_order_takes_its_names_and_numbers():
    """tlbbalance:split_order=heat is split_order 2 (tlbb_choices.def);
    the number is still taken; a name is matched whole and in its case,
    and another tunable's name is refused."""
    s = es.spec('tlbbalance:split_order')
    assert [s.parse(v) for v in ('address', 'random', ' heat ', '2')] == \
        [0, 1, 2, 2]
    for bad in ('Heat', 'hea', 'hill', '3'):
        with pytest.raises(ValueError, match='allowed: address | random | '
                           'heat, or an integer 0..2'):
            s.parse(bad)


def test_only_the_enumerated_tunables_have_names():
    named = {s.name: s.names for s in es.SPECS if s.names}
    assert named == {'split_order': ('address', 'random', 'heat'),
                     'method': ('paper', 'hill', 'safe')}
    with pytest.raises(ValueError, match='an integer 1..64'):
        es.spec('tlbbalance:samples').parse('paper')
