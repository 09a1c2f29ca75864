# SPDX-License-Identifier: Apache-2.0
"""A VM's tlbbalance policy and its libvirt ``<metadata>`` form.

The format is fixed in ``docs/design/interfaces.md``::

    <tlbbalance:policy
        xmlns:tlbbalance="http://openstack.org/xmlns/tlbbalance/1.0"
        mode="balance" backing="thp" tlbi_scope="die" strict="false">
      <tlbbalance:param name="imbalance_threshold" value="20"/>
    </tlbbalance:policy>

``prefault="false"`` is written only when pre-faulting is off (the default,
true, is left out), so the XML of a policy that does not use it is what
readers older than the attribute accept.

Only the standard library is used here (the libvirt hook imports this module
and must start fast). Bad input raises ValueError naming the culprit.
"""

import dataclasses
import xml.etree.ElementTree as ET

from nova_tlbbalance import extra_specs as es
from nova_tlbbalance.shown import shown

NS = 'http://openstack.org/xmlns/tlbbalance/1.0'
NS_PREFIX = 'tlbbalance'
POLICY_TAG = '{%s}policy' % NS
PARAM_TAG = '{%s}param' % NS

_ATTRS = ('mode', 'backing', 'tlbi_scope', 'strict', 'prefault')
_BOOLS = ('strict', 'prefault')

# Serialise with the documented prefix rather than ns0.
ET.register_namespace(NS_PREFIX, NS)


def _default(name):
    return es.BY_KEY['%s:%s' % (es.PREFIX, name)].default


@dataclasses.dataclass
class Policy:
    """What a flavor asks of tlbbalance for one VM."""

    mode: str = dataclasses.field(default_factory=lambda: _default('mode'))
    backing: str = dataclasses.field(
        default_factory=lambda: _default('backing'))
    tlbi_scope: str = dataclasses.field(
        default_factory=lambda: _default('tlbi_scope'))
    strict: bool = dataclasses.field(
        default_factory=lambda: _default('strict') == 'true')
    # backing=thp: pre-fault guest RAM at start (<allocation
    # mode='immediate'/>); ignored for other backings.
    prefault: bool = dataclasses.field(
        default_factory=lambda: _default('prefault') == 'true')
    # Controller tunables the flavor overrides: name -> int. Parameters not
    # named here keep the module's defaults.
    params: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        # Canonicalise and check, so an invalid Policy cannot exist.
        for name in ('mode', 'backing', 'tlbi_scope'):
            setattr(self, name, es.spec('%s:%s' % (es.PREFIX, name)).parse(
                getattr(self, name)))
        for name in _BOOLS:
            if not isinstance(getattr(self, name), bool):
                setattr(self, name, es.spec('%s:%s' % (es.PREFIX, name))
                        .parse(getattr(self, name)) == 'true')
        checked = {}
        for name, value in dict(self.params).items():
            if name not in es.PARAM_NAMES:
                raise ValueError('unknown tlbbalance parameter %s; known: %s'
                                 % (shown(name), ', '.join(es.PARAM_NAMES)))
            checked[name] = es.spec('%s:%s' % (es.PREFIX, name)).parse(value)
        # Keep tlbb_params.def order: stable XML, stable comparisons.
        self.params = {n: checked[n] for n in es.PARAM_NAMES if n in checked}

    # -- flavor extra specs -------------------------------------------------

    @classmethod
    def from_extra_specs(cls, extra_specs, defaults=None):
        """The policy a flavor's extra specs ask for, or None.

        ``extra_specs``: the flavor's extra specs (any mapping; keys other
        than ``tlbbalance:*`` are ignored). ``defaults``: an optional
        mapping of names (``mode``, ``backing``, ``tlbi_scope``,
        ``strict``, ``prefault``; None values are ignored), e.g. from
        ``[tlbbalance]`` in nova.conf, used for the keys the flavor does
        not set. A flavor without any ``tlbbalance:*`` key is managed only
        when ``defaults`` gives a ``mode``; otherwise None is returned
        (not managed).

        Raises ValueError naming every bad key and its allowed values.
        """
        tagged = es.ours(extra_specs)
        fallback = {'%s:%s' % (es.PREFIX, k): v
                    for k, v in (defaults or {}).items() if v is not None}
        if not tagged and es.PREFIX + ':mode' not in fallback:
            return None
        merged = dict(fallback)
        merged.update(tagged)
        errors = []
        values = {}
        params = {}
        for key in sorted(merged):
            try:
                spec = es.spec(key)
                value = spec.parse(merged[key])
            except ValueError as exc:
                where = '' if key in tagged else ' (from the defaults)'
                errors.append(str(exc) + where)
                continue
            if spec.param:
                params[spec.name] = value
            else:
                values[spec.name] = value
        if errors:
            raise ValueError('; '.join(errors))
        for name in _BOOLS:
            if name in values:
                values[name] = values[name] == 'true'
        return cls(params=params, **values)

    def to_extra_specs(self):
        """The extra specs that give this policy (all policy keys)."""
        out = {'%s:%s' % (es.PREFIX, n): getattr(self, n)
               for n in ('mode', 'backing', 'tlbi_scope')}
        for name in _BOOLS:
            out['%s:%s' % (es.PREFIX, name)] = \
                'true' if getattr(self, name) else 'false'
        for name, value in self.params.items():
            out['%s:%s' % (es.PREFIX, name)] = str(value)
        return out

    def effective_params(self):
        """Every tunable: the flavor's overrides over the module defaults."""
        out = {s.name: s.default for s in es.SPECS if s.param}
        out.update(self.params)
        return out

    # -- XML ----------------------------------------------------------------

    def to_element(self):
        """The ``<tlbbalance:policy>`` element (xml.etree.ElementTree)."""
        elem = ET.Element(POLICY_TAG, {
            'mode': self.mode,
            'backing': self.backing,
            'tlbi_scope': self.tlbi_scope,
            'strict': 'true' if self.strict else 'false',
        })
        if not self.prefault:
            # Only when not the default: older readers reject the attribute.
            elem.set('prefault', 'false')
        for name, value in self.params.items():
            ET.SubElement(elem, PARAM_TAG, {'name': name,
                                            'value': str(value)})
        return elem

    def to_xml(self, pretty=False):
        """The ``<tlbbalance:policy>`` element as a string."""
        elem = self.to_element()
        if pretty:
            ET.indent(elem)
        return ET.tostring(elem, encoding='unicode')

    @classmethod
    def from_xml(cls, xml):
        """Parse a ``<tlbbalance:policy>`` element (string or Element)."""
        elem = _parse(xml, 'tlbbalance policy XML')
        if elem.tag != POLICY_TAG:
            raise ValueError('expected <%s:policy> in namespace %s, got %s'
                             % (NS_PREFIX, NS, shown(elem.tag)))
        where = '<%s:policy>' % NS_PREFIX
        unknown = sorted(set(elem.attrib) - set(_ATTRS))
        if unknown:
            raise ValueError('%s: unknown attribute(s) %s; known: %s'
                             % (where, ', '.join(shown(u) for u in unknown[:5])
                                + (' and %d more' % (len(unknown) - 5)
                                   if len(unknown) > 5 else ''),
                                ', '.join(_ATTRS)))
        if 'mode' not in elem.attrib:
            raise ValueError('%s: attribute mode is missing' % where)
        values = {}
        for name in _ATTRS:
            if name in elem.attrib:
                try:
                    values[name] = es.spec('%s:%s' % (es.PREFIX, name)).parse(
                        elem.attrib[name])
                except ValueError as exc:
                    raise ValueError('%s attribute %s' % (where, exc)) \
                        from None
        for name in _BOOLS:
            if name in values:
                values[name] = values[name] == 'true'
        params = {}
        for child in elem:
            if child.tag != PARAM_TAG:
                raise ValueError('%s: unexpected child %s; only <%s:param> '
                                 'is allowed'
                                 % (where, shown(child.tag), NS_PREFIX))
            name = child.get('name')
            value = child.get('value')
            if name is None or value is None:
                raise ValueError('%s: <%s:param> needs name and value '
                                 'attributes, got %s'
                                 % (where, NS_PREFIX,
                                    shown(dict(child.attrib))))
            if name in params:
                raise ValueError('%s: parameter %s given twice'
                                 % (where, shown(name)))
            params[name] = value
        try:
            return cls(params=params, **values)
        except ValueError as exc:
            raise ValueError('%s: %s' % (where, exc)) from None

    @classmethod
    def from_domain_xml(cls, xml):
        """The policy in a libvirt domain XML's ``<metadata>``, or None.

        A domain without ``<tlbbalance:policy>`` is not managed: None.
        Raises ValueError (naming the domain) for malformed XML or a bad
        policy element.
        """
        dom = _parse(xml, 'domain XML')
        if dom.tag != 'domain':
            raise ValueError('domain XML: root element is <%s>, not <domain>'
                             % dom.tag)
        found = dom.findall('./metadata/' + POLICY_TAG)
        if not found:
            return None
        name = dom.findtext('name') or '?'
        if len(found) > 1:
            raise ValueError('domain %s: %d <%s:policy> elements in '
                             '<metadata>; expected one'
                             % (shown(name), len(found), NS_PREFIX))
        try:
            return cls.from_xml(found[0])
        except ValueError as exc:
            raise ValueError('domain %s: %s' % (shown(name), exc)) from None


def _parse(xml, what):
    if isinstance(xml, ET.Element):
        return xml
    if isinstance(xml, bytes):
        xml = xml.decode('utf-8')
    if not isinstance(xml, str):
        # lxml elements and the like: go through their serialisation.
        try:
            from lxml import etree  # noqa: only for lxml input
            xml = etree.tostring(xml, encoding='unicode')
        except Exception:
            raise ValueError('%s: cannot read a %s' % (what, type(xml)))
    try:
        return ET.fromstring(xml)
    except ET.ParseError as exc:
        raise ValueError('%s: not well-formed: %s' % (what, exc)) from None
