# SPDX-License-Identifier: Apache-2.0
"""nova_tlbbalance.policy: flavor extra specs <-> Policy <-> <metadata>."""

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from nova_tlbbalance import module_defs
from nova_tlbbalance.policy import NS, Policy

TOP = os.path.join(os.path.dirname(__file__), '..', '..')


def doc_example():
    """The <metadata> example of docs/design/interfaces.md."""
    with open(os.path.join(TOP, 'docs', 'design', 'interfaces.md')) as f:
        text = f.read()
    blocks = re.findall(r'```xml\n(.*?)```', text, re.S)
    [block] = [b for b in blocks if 'tlbbalance:policy' in b]
    return block


def domain(metadata='', name='vm1'):
    return ('<domain type="qemu"><name>%s</name><memory>1048576</memory>'
            '<vcpu>2</vcpu>%s</domain>' % (name, metadata))


def test_untagged_flavor_is_not_managed():
    assert Policy.from_extra_specs({}) is None
    assert Policy.from_extra_specs(None) is None
    assert Policy.from_extra_specs({'hw:cpu_policy': 'dedicated'}) is None


def test_defaults_of_the_table():
    p = Policy.from_extra_specs({'tlbbalance:mode': 'monitor'})
    assert (p.mode, p.backing, p.tlbi_scope, p.strict, p.params) == \
        ('monitor', 'thp', 'none', False, {})


def test_full_policy_round_trip():
    specs = {'tlbbalance:mode': 'balance', 'tlbbalance:backing': 'hugetlbfs',
             'tlbbalance:tlbi_scope': 'cluster', 'tlbbalance:strict': 'yes',
             'tlbbalance:samples': '7', 'tlbbalance:floor_pages': '0',
             'hw:mem_page_size': 'large'}
    p = Policy.from_extra_specs(specs)
    assert p.strict is True
    assert p.params == {'samples': 7, 'floor_pages': 0}
    assert Policy.from_xml(p.to_xml()) == p
    assert Policy.from_xml(p.to_element()) == p
    assert Policy.from_domain_xml(
        domain('<metadata>%s</metadata>' % p.to_xml(pretty=True))) == p
    assert Policy.from_extra_specs(p.to_extra_specs()) == p


def test_prefault_defaults_false_and_is_written_out():
    # The flavor default is lazy; in the XML an absent prefault means true
    # (what every release before the attribute did), so false is written.
    p = Policy.from_extra_specs({'tlbbalance:mode': 'monitor'})
    assert p.prefault is False
    assert ET.fromstring(p.to_xml()).get('prefault') == 'false'
    assert Policy.from_xml(p.to_xml()) == p
    assert p.to_extra_specs()['tlbbalance:prefault'] == 'false'
    assert Policy(mode='monitor').prefault is False


def test_prefault_true_is_left_out_of_the_xml():
    p = Policy.from_extra_specs({'tlbbalance:mode': 'monitor',
                                 'tlbbalance:prefault': 'true'})
    assert p.prefault is True
    # What older readers (before the attribute) parse, and read back
    assert 'prefault' not in p.to_xml()
    assert Policy.from_xml(p.to_xml()) == p
    assert p.to_extra_specs()['tlbbalance:prefault'] == 'true'


@pytest.mark.parametrize('backing', ['thp', 'hugetlbfs', 'none'])
def test_prefault_false_round_trip(backing):
    p = Policy.from_extra_specs({'tlbbalance:mode': 'monitor',
                                 'tlbbalance:backing': backing,
                                 'tlbbalance:prefault': 'no'})
    assert p.prefault is False
    assert ET.fromstring(p.to_xml()).get('prefault') == 'false'
    assert Policy.from_xml(p.to_xml()) == p
    assert Policy.from_domain_xml(
        domain('<metadata>%s</metadata>' % p.to_xml(pretty=True))) == p
    assert Policy.from_extra_specs(p.to_extra_specs()) == p
    assert Policy(mode='monitor', backing=backing, prefault='false') == p


def test_old_policy_xml_without_prefault_parses_as_true():
    old = ('<tlbbalance:policy xmlns:tlbbalance="%s" mode="balance" '
           'backing="thp" tlbi_scope="none" strict="false"/>' % NS)
    assert Policy.from_xml(old).prefault is True


def test_bad_prefault_in_xml_names_the_attribute():
    bad = ('<tlbbalance:policy xmlns:tlbbalance="%s" mode="balance" '
           'prefault="later"/>' % NS)
    with pytest.raises(ValueError, match="attribute tlbbalance:prefault: "
                       "invalid value 'later'; allowed: true | false"):
        Policy.from_xml(bad)


def test_xml_uses_documented_prefix_and_def_order():
    p = Policy(mode='balance', params={'samples': 4,
                                       'imbalance_threshold': 9})
    text = p.to_xml()
    assert text.startswith('<tlbbalance:policy xmlns:tlbbalance="%s"' % NS)
    names = [e.get('name') for e in ET.fromstring(text)]
    order = [q.name for q in module_defs.params()]
    assert names == sorted(names, key=order.index)


def test_documented_example_parses():
    p = Policy.from_domain_xml(domain(doc_example()))
    # no prefault attribute: pre-faulting (what it meant before the key)
    assert p == Policy(mode='balance', backing='thp', tlbi_scope='die',
                       strict=False, prefault=True,
                       params={'imbalance_threshold': 20})


def test_unmanaged_domain():
    assert Policy.from_domain_xml(domain()) is None
    assert Policy.from_domain_xml(domain('<metadata><x/></metadata>')) \
        is None


def test_effective_params_fill_module_defaults():
    p = Policy(mode='monitor', params={'samples': 9})
    eff = p.effective_params()
    for q in module_defs.params():
        assert eff[q.name] == (9 if q.name == 'samples' else q.default)


def test_defaults_apply_to_missing_keys_and_untagged():
    d = {'mode': 'monitor', 'backing': 'none', 'tlbi_scope': None,
         'strict': True}
    p = Policy.from_extra_specs({}, d)
    assert (p.mode, p.backing, p.strict) == ('monitor', 'none', True)
    p = Policy.from_extra_specs({'tlbbalance:backing': 'thp'}, d)
    assert (p.mode, p.backing) == ('monitor', 'thp')
    # Defaults without a mode do not make untagged flavors managed.
    assert Policy.from_extra_specs({}, {'backing': 'none'}) is None


@pytest.mark.parametrize('specs,words', [
    ({'tlbbalance:mode': 'fast'},
     ['tlbbalance:mode', "'fast'", 'off | monitor | balance']),
    ({'tlbbalance:backing': 'huge'},
     ['tlbbalance:backing', 'thp | hugetlbfs | none']),
    ({'tlbbalance:tlbi_scope': 'socket'}, ['tlbbalance:tlbi_scope']),
    ({'tlbbalance:strict': 'maybe'}, ['tlbbalance:strict', 'true | false']),
    ({'tlbbalance:prefault': 'lazy'},
     ['tlbbalance:prefault', "'lazy'", 'true | false']),
    ({'tlbbalance:samples': '0'}, ['tlbbalance:samples', '1..64']),
    ({'tlbbalance:samples': '3.5'}, ['tlbbalance:samples']),
    ({'tlbbalance:nonsense': '1'}, ["'tlbbalance:nonsense'", 'known:']),
])
def test_bad_extra_specs_name_the_key(specs, words):
    with pytest.raises(ValueError) as exc:
        Policy.from_extra_specs(specs)
    for word in words:
        assert word in str(exc.value)


def test_every_bad_key_is_reported_at_once():
    with pytest.raises(ValueError) as exc:
        Policy.from_extra_specs({'tlbbalance:mode': 'x',
                                 'tlbbalance:samples': '99'})
    assert 'tlbbalance:mode' in str(exc.value)
    assert 'tlbbalance:samples' in str(exc.value)


def test_bad_default_says_so():
    with pytest.raises(ValueError, match='from the defaults'):
        Policy.from_extra_specs({}, {'mode': 'fast'})


def _pol(attrs='mode="balance"', body=''):
    return domain('<metadata><t:policy xmlns:t="%s" %s>%s</t:policy>'
                  '</metadata>' % (NS, attrs, body), name='web-1')


@pytest.mark.parametrize('xml,words', [
    (_pol('mode="bal"'), ["domain 'web-1'", 'mode', "'bal'"]),
    (_pol('backing="thp"'), ['mode is missing']),
    (_pol(body='<t:param name="samples"/>'), ['needs name and value']),
    (_pol(body='<t:param name="samples" value="65"/>'),
     ['samples', '1..64']),
    (_pol(body='<t:param name="samples" value="2"/>'
               '<t:param name="samples" value="3"/>'), ['given twice']),
    (_pol('mode="off" version="two"'), ['version', "'two'"]),
    (_pol('mode="off" version="0"'), ['version', "'0'"]),
    (domain('<metadata><t:policy xmlns:t="%s" mode="off"/>'
            '<t:policy xmlns:t="%s" mode="off"/></metadata>' % (NS, NS)),
     ['2 <tlbbalance:policy> elements']),
    ('<domain><name>x</name', ['not well-formed']),
    ('<network/>', ['not <domain>']),
])
def test_bad_domain_xml_names_the_culprit(xml, words):
    with pytest.raises(ValueError) as exc:
        Policy.from_domain_xml(xml)
    for word in words:
        assert word in str(exc.value)


def test_from_xml_wrong_element():
    with pytest.raises(ValueError, match='expected <tlbbalance:policy>'):
        Policy.from_xml('<policy mode="off"/>')


def test_bytes_input():
    p = Policy(mode='off')
    assert Policy.from_domain_xml(
        domain('<metadata>%s</metadata>' % p.to_xml()).encode()) == p


def test_invalid_policy_cannot_be_built():
    with pytest.raises(ValueError, match='tlbbalance:mode'):
        Policy(mode='on')
    with pytest.raises(ValueError, match='unknown tlbbalance parameter'):
        Policy(params={'speed': 1})


def test_hook_import_path_is_stdlib_only():
    # The libvirt hook imports this module on every VM start: no lxml,
    # nova or oslo may come with it.
    code = ('import sys, nova_tlbbalance.policy; '
            'bad = [m for m in sys.modules if m.split(".")[0] in '
            '("lxml", "nova", "oslo_config", "oslo_log")]; '
            'print(",".join(bad))')
    out = subprocess.run([sys.executable, '-c', code], check=True,
                         capture_output=True, text=True).stdout.strip()
    assert out == ''


# -- newer releases (docs/upgrade.md) ---------------------------------------

def test_names_of_a_newer_release_are_ignored_and_named():
    # what a later release may write: a format version, an attribute, a
    # parameter and an element this one does not know
    xml = _pol('mode="balance" version="2" colour="red"',
               '<t:param name="samples" value="7"/>'
               '<t:param name="speed" value="3"/><t:other/>')
    p = Policy.from_domain_xml(xml)
    assert (p.mode, p.params) == ('balance', {'samples': 7})
    assert p == Policy(mode='balance', prefault=True, params={'samples': 7})
    assert sorted((u.kind, u.name) for u in p.unknown) == [
        ('attribute', 'colour'), ('element', 'tlbbalance:other'),
        ('param', 'speed'), ('version', '2')]
    text = '\n'.join(p.compat_warnings())
    for word in ('format version 2', 'attribute colour', 'parameter speed',
                 'element tlbbalance:other'):
        assert word in text
    assert p.refusal() is None


@pytest.mark.parametrize('strict,name,refused', [
    ('true', 'require_numa', True),     # strict guards it: refused
    ('false', 'require_numa', False),   # not strict: warned, managed
    ('true', 'colour', False),          # advisory: strict does not care
])
def test_refused_only_when_strict_and_the_name_is_a_requirement(
        strict, name, refused):
    p = Policy.from_domain_xml(_pol('mode="monitor" strict="%s" %s="1"'
                                    % (strict, name)))
    why = p.refusal()
    assert bool(why) == refused
    if refused:
        assert 'require_numa' in why and 'strict' in why
        assert p.compat_warnings() == []
    else:
        assert name in p.compat_warnings()[0]
    specs = Policy.from_extra_specs({'tlbbalance:mode': 'monitor',
                                     'tlbbalance:strict': strict,
                                     'tlbbalance:' + name: '1'},
                                    tolerant=True)
    assert bool(specs.refusal()) == refused
    if refused:
        assert 'extra spec tlbbalance:require_numa' in specs.refusal()


def test_unknown_extra_spec_is_an_error_unless_tolerant():
    specs = {'tlbbalance:mode': 'monitor', 'tlbbalance:colour': 'red'}
    with pytest.raises(ValueError, match="unknown extra spec "
                       "'tlbbalance:colour'"):
        Policy.from_extra_specs(specs)
    p = Policy.from_extra_specs(specs, tolerant=True)
    assert p == Policy(mode='monitor')
    assert [str(u) for u in p.unknown] == ['extra spec tlbbalance:colour']
    # a known key's bad value stays an error: values never grow
    with pytest.raises(ValueError, match='tlbbalance:mode'):
        Policy.from_extra_specs({'tlbbalance:mode': 'fast'}, tolerant=True)


def test_writer_writes_the_oldest_format_that_holds_the_policy():
    # release 0.1.0's reader refuses any attribute it does not know: no
    # version attribute while format 1 holds the policy
    for p in (Policy(mode='balance', strict=True, params={'samples': 3}),
              Policy(mode='monitor', prefault=False)):
        assert 'version' not in p.to_element().attrib
        assert not Policy.from_xml(p.to_xml()).unknown
