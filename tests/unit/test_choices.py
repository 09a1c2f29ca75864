# SPDX-License-Identifier: Apache-2.0
"""kernel-module/core/tlbb_choices.def: the names of the enumerated
tunables' values (split_order, method) in one table, read by the C core,
the module, tlbsim and Python (module_defs), and nowhere restated."""

import os
import re

import pytest

from nova_tlbbalance import module_defs
from nova_tlbbalance.policy import Policy

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
CORE = os.path.join(REPO, 'kernel-module', 'core')


def _read(*parts):
    with open(os.path.join(REPO, *parts)) as f:
        return f.read()


def test_table_parsed_into_the_params():
    method = module_defs.param('method')
    assert [(c.value, c.name) for c in method.choices] == [
        (0, 'paper'), (1, 'hill'), (2, 'safe')]
    assert module_defs.choice_names('split_order') == (
        'address', 'random', 'heat')
    assert all(c.help for c in method.choices)
    assert [p.name for p in module_defs.params() if p.choices] == [
        'split_order', 'method']


def test_check_takes_the_name_and_the_number():
    p = module_defs.param('split_order')
    assert [p.check(v) for v in ('heat', 2, '0', 'random')] == [2, 2, 0, 1]
    assert p.name_of(2) == 'heat'
    with pytest.raises(ValueError, match="split_order: 'hot' is not one of "
                       "address, random, heat or 0..2"):
        p.check('hot')
    with pytest.raises(ValueError, match='split_order: 3 is outside address'
                       r' \| random \| heat \(0..2 order\)'):
        p.check(3)
    with pytest.raises(ValueError, match="samples: 'heat' is not a decimal"):
        module_defs.param('samples').check('heat')


def test_a_named_value_is_carried_as_its_number():
    """The policy (domain metadata, extra specs written back) carries the
    number: what the hook and driver of an earlier release read, and what
    the module of an earlier release takes (docs/upgrade.md)."""
    pol = Policy.from_extra_specs({'tlbbalance:mode': 'balance',
                                   'tlbbalance:split_order': 'heat',
                                   'tlbbalance:method': 'hill'})
    assert pol.params == {'split_order': 2, 'method': 1}
    assert '<tlbbalance:param name="split_order" value="2" />' in \
        pol.to_xml()
    assert pol.to_extra_specs()['tlbbalance:method'] == '1'
    assert Policy.from_xml(pol.to_xml()).params == pol.params


def test_bad_table_is_refused_naming_it(monkeypatch):
    real = module_defs._lines

    def lines(filename, extra):
        out = real(filename)
        return out + extra if filename == 'tlbb_choices.def' else out

    for extra, want in (
            (['TLBB_CHOICE(bogus, X, 0, "x", "x")'],
             'not tunables of tlbb_params.def: bogus'),
            (['TLBB_CHOICE(samples, X, 1, "x", "x")'],
             'samples: the values must be 1..64 in order'),
            (['TLBB_CHOICE(method, X, 3, "fast", "x")'],
             'method: the values must be 0..2 in order'),
            (['TLBB_CHOICE(method, X, 3, "Fast", "x")'], 'cannot parse')):
        module_defs.params.cache_clear()
        module_defs._choices.cache_clear()
        monkeypatch.setattr(module_defs, '_lines',
                            lambda f, e=extra: lines(f, e))
        with pytest.raises(RuntimeError, match='tlbb_choices.def: .*' + want):
            module_defs.params()
    monkeypatch.setattr(module_defs, '_lines', real)
    module_defs.params.cache_clear()
    module_defs._choices.cache_clear()
    assert module_defs.param('method').choices


def test_shipped_as_package_data_like_the_other_tables():
    link = os.path.join(REPO, 'nova_tlbbalance', 'data', 'tlbb_choices.def')
    assert os.path.islink(link)
    assert os.path.realpath(link) == os.path.join(CORE, 'tlbb_choices.def')
    assert 'data/*.def' in _read('setup.cfg')


def test_c_consumers_include_the_table():
    assert '#include "tlbb_choices.def"' in _read('kernel-module', 'core',
                                                  'tlbb_ctrl.h')
    assert '#include "tlbb_choices.def"' in _read('kernel-module', 'core',
                                                  'tlbb_ctrl.c')
    assert 'tlbb_choice_parse(id, page' in _read('kernel-module',
                                                 'tlbb_configfs.c')
    for f in ('run.c', 'split_order.c'):
        assert 'tlbb_choice_parse(' in _read('tlbsim', 'src', f), f
    assert '#include "tlbb_choices.def"' in _read(
        'kernel-module', 'tests', 'guest', 't_badinput.c')


def _restatements():
    """Places outside the table that list the names of one tunable's
    values together: a tuple or list literal of them in Python, or one of
    them as a C string in the module, the core or tlbsim."""
    found = []
    sets = [p.names() for p in module_defs.params() if p.choices]
    listed = [re.compile(r"""[(\[]\s*['"]%s['"]""" % n[0] + ''.join(
        r"""\s*,\s*['"]%s['"]""" % x for x in n[1:])) for n in sets]
    for top, ext in (('nova_tlbbalance', '.py'), ('kernel-module', '.c'),
                     ('kernel-module', '.h'), ('tlbsim/src', '.c')):
        for root, _, files in os.walk(os.path.join(REPO, top)):
            if '/tests' in root[len(REPO):] or '/bench' in root[len(REPO):]:
                continue
            for f in files:
                if not f.endswith(ext):
                    continue
                path = os.path.join(root, f)
                with open(path) as fh:
                    text = fh.read()
                rel = os.path.relpath(path, REPO)
                if ext == '.py':
                    found += [rel for rx in listed if rx.search(text)]
                else:
                    found += ['%s: "%s"' % (rel, n) for names in sets
                              for n in names if '"%s"' % n in text and
                              n not in ('random', 'heat')]
    return found


def test_names_not_restated_outside_the_table():
    found = _restatements()
    assert not found, found
