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

Standard library only, pyexpat imported when first needed: the hook's
fast path for untagged domains does not pay for it. The
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


def _policies(data):
    """The attributes (dicts) of the policy elements directly under the
    domain's <metadata> in the XML data (bytes or str); [] for a root
    other than <domain>; None when it does not parse. pyexpat directly,
    not ElementTree, which imports ``re`` and ``enum``: half the time of
    a ``prepare`` that has nothing else to do."""
    from xml.parsers import expat
    found = []
    path = []

    def start(name, attrs):
        path.append(name)
        if path[:2] == ['domain', 'metadata'] and len(path) == 3 and \
                name == NS + ' policy':
            found.append(attrs)

    parser = expat.ParserCreate(namespace_separator=' ')
    parser.StartElementHandler = start
    parser.EndElementHandler = lambda name: path.pop()
    try:
        parser.Parse(data, True)
    except (expat.ExpatError, ValueError, TypeError):
        return None
    return found


def _strict(elems):
    answer = False
    for elem in elems:
        value = elem.get('strict')
        if value is None:
            continue
        value = value.strip().lower()
        if value in TRUE:
            return True
        if value not in FALSE:
            answer = None
    return answer


def declared(data):
    """True, False or None (unknown) for the domain XML data (bytes or
    str): see the module's rule."""
    elems = _policies(data)
    return None if elems is None else _strict(elems)


def prepare_can_wait(data):
    """True when ``prepare`` has nothing to do before QEMU starts that
    ``started`` cannot do as well: every policy element of the domain is
    surely not strict (:func:`declared` is False) and asks for THP
    backing (``backing="thp"``, what the driver plugin writes), whose one
    check, the host's THP mode, answers the same after the start. A
    strict domain is refused in ``prepare``; hugetlbfs' free pages are
    only worth counting before QEMU takes them; anything else (no
    element, a spelling that is neither, XML that does not parse) is
    left to the full phase."""
    elems = _policies(data)
    if not elems or _strict(elems) is not False:
        return False
    return all((e.get('backing') or '').strip().lower() == 'thp'
               for e in elems)
