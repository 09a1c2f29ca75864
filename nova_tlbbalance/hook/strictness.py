# SPDX-License-Identifier: Apache-2.0
"""Whether a domain's tlbbalance policy asks for strict mode, when
nothing else can be trusted (the hook's error paths and its background
decision).

The rule (docs/hook.md, "Strict mode when something fails"): strictness
is the ``strict`` attribute of the ``<tlbbalance:policy>`` element, in
the policy namespace, directly under the domain's ``<metadata>``; never
a substring anywhere in the domain XML, which carries tenant-chosen text
(the server's name, nova's ``<nova:name>``, a description). It is
strict when that attribute reads as true with the spellings extra specs
accept, even if the rest of the policy does not parse (a strict policy
fails closed); a domain without the element, or whose attribute is
absent or reads as false, is not strict. Anything else (XML that is not
well-formed, an unknown spelling) is unknown: never refused for it, and
never detached into the background either.

Standard library only, ElementTree imported when first needed: the
hook's fast path for untagged domains does not pay for it. The
installed hook's import fallback (libvirt-hooks/tlbbalance) carries a
copy of :func:`declared` (it runs when this package cannot be imported);
tests/unit/test_hook.py holds the two to the same answers.
"""

NS = 'http://openstack.org/xmlns/tlbbalance/1.0'
POLICY = '{%s}policy' % NS
# nova_tlbbalance.extra_specs' spellings (oslo_utils.strutils), kept
# here so that this module imports nothing (a test holds them equal)
TRUE = ('1', 't', 'true', 'on', 'y', 'yes')
FALSE = ('0', 'f', 'false', 'off', 'n', 'no')


def declared(data):
    """True, False or None (unknown) for the domain XML data (bytes or
    str): see the module's rule."""
    import xml.etree.ElementTree as ET
    try:
        root = ET.fromstring(data)
    except (ET.ParseError, ValueError, TypeError):
        return None
    if root.tag != 'domain':
        return False
    answer = False
    for elem in root.findall('./metadata/' + POLICY):
        value = elem.get('strict')
        if value is None:
            continue
        value = value.strip().lower()
        if value in TRUE:
            return True
        if value not in FALSE:
            answer = None
    return answer
