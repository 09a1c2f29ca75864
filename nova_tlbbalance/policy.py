# SPDX-License-Identifier: Apache-2.0
"""A VM's tlbbalance policy and its libvirt ``<metadata>`` form.

The format is fixed in ``docs/design/interfaces.md``::

    <tlbbalance:policy
        xmlns:tlbbalance="http://openstack.org/xmlns/tlbbalance/1.0"
        mode="balance" backing="thp" tlbi_scope="die" strict="false">
      <tlbbalance:param name="imbalance_threshold" value="20"/>
    </tlbbalance:policy>

``prefault`` is written only when it is not what its absence means in the
XML: absent, it means true (:data:`XML_ABSENT`, fixed by the format since
releases that pre-faulted every THP guest wrote no attribute). So a
pre-faulting policy's XML is what readers older than the attribute accept,
and the flavor default (false since pre-faulting stopped being the
default, docs/cloud.md) is written out as ``prefault="false"``.

Compatibility across releases (``docs/upgrade.md``): the element may carry
``version="K"``, the format it was written in (absent: 1). A writer writes
the lowest format that holds the policy, so this release writes no
``version`` at all (release 0.1.0 readers refuse any attribute they do not
know). A reader meets names a newer release added (attributes, params,
child elements, extra specs) as :class:`Unknown`: they are kept on the
policy (:attr:`Policy.unknown`), the callers log
:meth:`Policy.compat_warnings` and manage the VM with what they know, and
refuse it (:meth:`Policy.refusal`) only when the policy is strict and an
unknown name changes what strict guards: by the contract such names begin
with ``require_`` (:data:`GUARDED_PREFIX`).

Only the standard library is used here (the libvirt hook imports this module
and must start fast). Bad input raises ValueError naming the culprit.
"""

import xml.etree.ElementTree as ET

from nova_tlbbalance import extra_specs as es
from nova_tlbbalance import record
from nova_tlbbalance.shown import shown

NS = 'http://openstack.org/xmlns/tlbbalance/1.0'
NS_PREFIX = 'tlbbalance'
POLICY_TAG = '{%s}policy' % NS
PARAM_TAG = '{%s}param' % NS

# The policy keys, from the extra specs table: one attribute each.
_ATTRS = tuple(s.name for s in es.SPECS if not s.param)
_BOOLS = tuple(s.name for s in es.SPECS if not s.param and s.kind == 'bool')
_ENUMS = tuple(s.name for s in es.SPECS if not s.param and s.kind == 'enum')
# The attributes release 0.1.0 knew, always written; a later one is
# written only when it is not its default, so an older reader (which
# refuses attributes it does not know) still reads every policy that does
# not use it (docs/upgrade.md).
_FIRST_ATTRS = ('mode', 'backing', 'tlbi_scope', 'strict')
# What a later attribute means when the XML leaves it out, where that is
# not the extra spec's default: the format fixed it when the attribute
# came (releases before it pre-faulted every THP guest); the spec's default
# may change since, this may not.
XML_ABSENT = {'prefault': 'true'}
VERSION_ATTR = 'version'

# The policy metadata format this release reads in full; absent = 1.
FORMAT = 1
# A name a later release adds that changes what strict guards (a
# requirement the start must meet or be refused) begins with this; every
# other new name is advisory (docs/upgrade.md, "Names added later").
GUARDED_PREFIX = 'require_'

# Serialise with the documented prefix rather than ns0.
ET.register_namespace(NS_PREFIX, NS)


def _default(name):
    return es.BY_KEY['%s:%s' % (es.PREFIX, name)].default


def _xml_absent(name):
    """What attribute ``name`` means when the XML leaves it out."""
    return XML_ABSENT.get(name) or _default(name)


@record.record(frozen=True)
class Unknown:
    """A part of a policy that a newer release wrote and this one does not
    know: ``kind`` 'extra spec' (``name`` without the prefix),
    'attribute', 'param', 'element' or 'version' (``name``: the number)."""

    kind: str
    name: str

    @property
    def guarded(self):
        """Whether strict guards it (params tune the controller only)."""
        return self.kind in ('extra spec', 'attribute') and \
            self.name.startswith(GUARDED_PREFIX)

    def __str__(self):
        if self.kind == 'extra spec':
            return 'extra spec %s:%s' % (es.PREFIX, self.name)
        if self.kind == 'version':
            return 'policy format version %s (this release reads %d)' % (
                self.name, FORMAT)
        if self.kind == 'element':
            return 'element %s in <%s:policy>' % (self.name, NS_PREFIX)
        if self.kind == 'param':
            return 'parameter %s' % self.name
        return 'attribute %s of <%s:policy>' % (self.name, NS_PREFIX)


@record.record
class Policy:
    """What a flavor asks of tlbbalance for one VM."""

    mode: str = record.field(default_factory=lambda: _default('mode'))
    backing: str = record.field(
        default_factory=lambda: _default('backing'))
    tlbi_scope: str = record.field(
        default_factory=lambda: _default('tlbi_scope'))
    strict: bool = record.field(
        default_factory=lambda: _default('strict') == 'true')
    # backing=thp: pre-fault guest RAM at start (<allocation
    # mode='immediate'/>); ignored for other backings.
    prefault: bool = record.field(
        default_factory=lambda: _default('prefault') == 'true')
    # Controller tunables the flavor overrides: name -> int. Parameters not
    # named here keep the module's defaults.
    params: dict = record.field(default_factory=dict)
    # What a newer release wrote and this one ignores (tuple of Unknown;
    # not part of the policy's value: two policies that differ only here
    # ask the same of this release).
    unknown: tuple = record.field(default=(), compare=False, repr=False)

    def __post_init__(self):
        # Canonicalise and check, so an invalid Policy cannot exist.
        for name in _ENUMS:
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
        self.unknown = tuple(self.unknown)

    # -- newer releases (docs/upgrade.md) -----------------------------------

    def compat_warnings(self):
        """One line per unknown part: what a newer release wrote that this
        one ignores, for the caller's log (empty when there is none). A
        requirement a strict policy makes is :meth:`refusal`'s, not here."""
        out = []
        for u in self.unknown:
            if u.kind == 'version':
                out.append('the policy was written in format version %s; '
                           'this release reads %d: what it does not know is '
                           'ignored' % (u.name, FORMAT))
            elif not (u.guarded and self.strict):
                out.append('%s: not known to this release (a newer one '
                           'wrote it?); ignored, the VM is managed with the '
                           'rest of the policy%s'
                           % (u, ' (a strict policy would be refused)'
                              if u.guarded else ''))
        return out

    def refusal(self):
        """Why this release must refuse the VM, or None: the policy is
        strict and names a requirement (``require_*``) this release does
        not know, so it cannot guard what strict asks."""
        guarded = [str(u) for u in self.unknown if u.guarded]
        if not (guarded and self.strict):
            return None
        return ('strict policy (%s:strict=true) requires %s, which this '
                'release of tlbbalance does not know: refused (upgrade this '
                'host, or set %s:strict=false to run without it)'
                % (es.PREFIX, ', '.join(guarded), es.PREFIX))

    # -- flavor extra specs -------------------------------------------------

    @classmethod
    def from_extra_specs(cls, extra_specs, defaults=None, tolerant=False):
        """The policy a flavor's extra specs ask for, or None.

        ``extra_specs``: the flavor's extra specs (any mapping; keys other
        than ``tlbbalance:*`` are ignored). ``defaults``: an optional
        mapping of names (``mode``, ``backing``, ``tlbi_scope``,
        ``strict``, ``prefault``; None values are ignored), e.g. from
        ``[tlbbalance]`` in nova.conf, used for the keys the flavor does
        not set. A flavor without any ``tlbbalance:*`` key is managed only
        when ``defaults`` gives a ``mode``; otherwise None is returned
        (not managed).

        ``tolerant``: a ``tlbbalance:*`` key this release does not know
        (a newer release's, during a rolling upgrade) is kept in
        :attr:`unknown` and ignored instead of being an error (the compute
        driver; ``tlbbalance domain apply`` keeps it an error, a typo).

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
        unknown = []
        for key in sorted(merged):
            if tolerant and key in tagged and key not in es.BY_KEY:
                unknown.append(Unknown('extra spec',
                                       key[len(es.PREFIX) + 1:]))
                continue
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
        return cls(params=params, unknown=unknown, **values)

    def to_json(self):
        """The policy in ``tlbbalance status --json`` (the ``policy``
        object of docs/schemas/vm-report.schema.json): every field, the
        unknown parts as the text :meth:`compat_warnings` names them by."""
        return dict(record.asdict(self),
                    unknown=[str(u) for u in self.unknown])

    def to_extra_specs(self):
        """The extra specs that give this policy (all policy keys)."""
        out = {'%s:%s' % (es.PREFIX, n): getattr(self, n) for n in _ENUMS}
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
        elem = ET.Element(POLICY_TAG)
        for name in _ATTRS:
            value = getattr(self, name)
            if name in _BOOLS:
                value = 'true' if value else 'false'
            if name in _FIRST_ATTRS or value != _xml_absent(name):
                elem.set(name, value)
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
        """Parse a ``<tlbbalance:policy>`` element (string or Element).

        Attributes, params and child elements this release does not know
        (a newer release's) are kept in :attr:`unknown`, not refused; a bad
        value of a known one is a ValueError naming it.
        """
        elem = _parse(xml, 'tlbbalance policy XML')
        if elem.tag != POLICY_TAG:
            raise ValueError('expected <%s:policy> in namespace %s, got %s'
                             % (NS_PREFIX, NS, shown(elem.tag)))
        where = '<%s:policy>' % NS_PREFIX
        unknown = []
        version = elem.get(VERSION_ATTR, '1')
        if not version.isdigit() or int(version) < 1:
            raise ValueError('%s: attribute %s=%s is not a format version '
                             '(1, 2, ...)' % (where, VERSION_ATTR,
                                              shown(version)))
        if int(version) > FORMAT:
            unknown.append(Unknown('version', str(int(version))))
        unknown += [Unknown('attribute', a) for a in sorted(
            set(elem.attrib) - set(_ATTRS) - {VERSION_ATTR})]
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
            elif name not in _FIRST_ATTRS:
                values[name] = _xml_absent(name)
        for name in _BOOLS:
            if name in values:
                values[name] = values[name] == 'true'
        params = {}
        for child in elem:
            if child.tag != PARAM_TAG:
                unknown.append(Unknown('element', child.tag.replace(
                    '{%s}' % NS, NS_PREFIX + ':')))
                continue
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
            if name not in es.PARAM_NAMES:
                unknown.append(Unknown('param', name))
                continue
            params[name] = value
        try:
            return cls(params=params, unknown=unknown, **values)
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
