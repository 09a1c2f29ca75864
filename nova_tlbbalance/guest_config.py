"""Add a tlbbalance policy's settings to a libvirt domain XML.

One code path for the nova driver plugin (:mod:`nova_tlbbalance.driver`,
which passes nova's finished guest XML through :func:`apply_to_domain_xml`)
and for ``tlbbalance domain apply`` (plain libvirt XML, no nova).

What is added, never anything else (nova owns placement and pinning):

- ``backing=thp``: ``<memoryBacking>`` with ``<nosharepages/>``,
  ``<source type='anonymous'/>`` and, unless ``tlbbalance:prefault=false``,
  ``<allocation mode='immediate'/>`` (``threads`` = the vCPU count where
  libvirt supports it; with prefault=false an ``<allocation>`` already there
  is removed: guest RAM is faulted in as the guest touches it); the memory
  sizes
  (``<memory>``, ``<currentMemory>``, each NUMA ``<cell>``) are rounded
  *down* to a whole number of huge pages of the host's PMD size, so the
  guest never gets more than placement accounted for.
- ``backing=hugetlbfs``: ``<nosharepages/>``; the ``<hugepages>`` element
  itself is nova's job (``hw:mem_page_size``) and must be there already.
- always: ``<metadata>`` gets the ``<tlbbalance:policy>`` element.

Contradictions between the policy and the domain raise
:class:`PolicyConflict`, naming the flavor keys involved; among them
file-backed guest memory (``<source type='file'>``) with THP or hugetlbfs
backing.

Live migration (see :mod:`nova_tlbbalance.driver`): the source passes the
destination XML nova made through :func:`apply_to_domain_xml` with
``migrating=True`` (backing restored, memory sizes and pins left alone);
the destination checks itself with
:func:`nova_tlbbalance.rules.check_destination` (its file backing, its pins
against its own CPU topology) on the policy the guest runs with.
"""

import logging

from lxml import etree

from nova_tlbbalance import policy as tlbb_policy
from nova_tlbbalance import rules
from nova_tlbbalance.probes import domxml

LOG = logging.getLogger(__name__)

# libvirt's canonical order of <memoryBacking> children.
_MEMBACKING_ORDER = ('hugepages', 'nosharepages', 'locked', 'source',
                     'access', 'allocation', 'discard')


# The policy contradicts the domain (or the flavor that made it): the
# rules module's Conflict, one class whoever judges.
PolicyConflict = rules.Conflict


def _kib(elem):
    cell = elem.tag == 'cell'
    return domxml.to_bytes(elem, '<%s>' % elem.tag,
                           text=elem.get('memory') if cell else None) // 1024


def _set_kib(elem, kib):
    if elem.get('unit') is not None:
        elem.set('unit', 'KiB')
    if elem.tag == 'cell':
        elem.set('memory', str(kib))
    else:
        elem.text = str(kib)


def _insert_ordered(parent, tag, order, attrib=None):
    """Get ``parent``'s child ``tag``, creating it in canonical order."""
    found = parent.find(tag)
    if found is not None:
        return found
    new = etree.Element(tag, attrib or {})
    rank = order.index(tag)
    for i, child in enumerate(parent):
        if child.tag in order and order.index(child.tag) > rank:
            parent.insert(i, new)
            return new
    parent.append(new)
    return new


def _insert_after(root, tag, after):
    """``root``'s child ``tag``, created after the last of ``after``."""
    found = root.find(tag)
    if found is not None:
        return found
    new = etree.Element(tag)
    pos = 0
    for i, child in enumerate(root):
        if child.tag in after:
            pos = i + 1
    root.insert(pos, new)
    return new


def _vcpu_count(root):
    try:
        return int(root.findtext('vcpu').strip())
    except (AttributeError, ValueError):
        raise ValueError('domain XML has no valid <vcpu> count') from None


def _round_memory(root, hp_kib):
    """Round memory sizes down to whole huge pages of ``hp_kib`` KiB."""
    mem = root.find('memory')
    if mem is None:
        raise ValueError('domain XML has no <memory>')
    cells = root.findall('./cpu/numa/cell')
    if cells:
        total = 0
        for cell in cells:
            kib = _kib(cell)
            rounded = kib // hp_kib * hp_kib
            if rounded == 0:
                raise PolicyConflict(
                    'tlbbalance:backing=thp: NUMA cell %s has %d KiB, less '
                    'than one huge page (%d KiB); use more memory per '
                    'hw:numa_mem.N or fewer hw:numa_nodes'
                    % (cell.get('id'), kib, hp_kib))
            if rounded != kib:
                _set_kib(cell, rounded)
            total += rounded
    else:
        kib = _kib(mem)
        total = kib // hp_kib * hp_kib
        if total == 0:
            raise PolicyConflict(
                'tlbbalance:backing=thp: guest memory %d KiB is less than '
                'one huge page (%d KiB)' % (kib, hp_kib))
    if _kib(mem) != total:
        LOG.info('tlbbalance: guest memory %d KiB rounded down to %d KiB '
                 '(whole %d KiB huge pages)', _kib(mem), total, hp_kib)
        _set_kib(mem, total)
    cur = root.find('currentMemory')
    if cur is not None:
        kib = min(_kib(cur), total) // hp_kib * hp_kib or total
        if kib != _kib(cur):
            _set_kib(cur, kib)


def _pins(root):
    """{vCPU: set of host CPUs} from ``root``'s ``<cputune>``."""
    pins = {}
    for pin in root.findall('./cputune/vcpupin'):
        try:
            if pin.get('cpuset') is None:
                raise ValueError('no cpuset')
            pins[int(pin.get('vcpu'))] = domxml.parse_cpuset(pin.get('cpuset'))
        except (TypeError, ValueError):
            raise ValueError('bad <vcpupin vcpu=%r cpuset=%r>'
                             % (pin.get('vcpu'), pin.get('cpuset'))) from None
    return pins


# The judgments live in nova_tlbbalance.rules (one wording per finding);
# these names stay for the callers that import them from here.
check_pins = rules.check_pins
check_destination = rules.check_destination
_file_backing_conflict = rules.file_backing_conflict


def _memory_source(membacking):
    """The ``<source type>`` of guest memory ('anonymous' when unset)."""
    source = None if membacking is None else membacking.find('source')
    return 'anonymous' if source is None else source.get('type', 'anonymous')


def _apply_backing(root, policy, huge_page_kib, allocation_threads,
                   round_memory):
    membacking = root.find('memoryBacking')
    hugepages = membacking is not None and \
        membacking.find('hugepages') is not None
    source = _memory_source(membacking)
    if source == 'file':
        raise _file_backing_conflict(
            policy, "<source type='file'> memory (e.g. [libvirt] "
            "file_backed_memory in nova.conf)")
    if policy.backing == 'hugetlbfs':
        if not hugepages:
            raise PolicyConflict(
                'tlbbalance:backing=hugetlbfs needs hw:mem_page_size (large '
                'or a page size): the guest has no <hugepages> memory '
                'backing')
        _insert_ordered(membacking, 'nosharepages', _MEMBACKING_ORDER)
        return
    # thp
    if hugepages:
        raise PolicyConflict(
            'tlbbalance:backing=thp conflicts with hw:mem_page_size (the '
            'guest is backed by hugetlbfs pages); use '
            'tlbbalance:backing=hugetlbfs or drop hw:mem_page_size')
    if source != 'anonymous':
        raise PolicyConflict(
            'tlbbalance:backing=thp conflicts with <source type=%r> memory; '
            'THP backing needs anonymous memory' % source)
    if round_memory and huge_page_kib:
        _round_memory(root, huge_page_kib)
    elif round_memory:
        LOG.warning('tlbbalance: huge page size unknown; guest memory not '
                    'rounded to whole huge pages')
    membacking = _insert_after(root, 'memoryBacking',
                               ('name', 'uuid', 'title', 'description',
                                'metadata', 'maxMemory', 'memory',
                                'currentMemory'))
    _insert_ordered(membacking, 'nosharepages', _MEMBACKING_ORDER)
    _insert_ordered(membacking, 'source', _MEMBACKING_ORDER,
                    {'type': 'anonymous'})
    if not policy.prefault:
        for alloc in membacking.findall('allocation'):
            LOG.info('tlbbalance: <allocation mode=%r> removed '
                     '(tlbbalance:prefault=false)', alloc.get('mode'))
            membacking.remove(alloc)
        return
    alloc = _insert_ordered(membacking, 'allocation', _MEMBACKING_ORDER)
    alloc.set('mode', 'immediate')
    if allocation_threads and alloc.get('threads') is None:
        alloc.set('threads', str(_vcpu_count(root)))


def apply_to_domain_xml(xml, policy, huge_page_kib=None,
                        allocation_threads=False, topology=None,
                        migrating=False):
    """Return ``xml`` (a libvirt domain XML string) with ``policy`` applied.

    ``policy``: a :class:`nova_tlbbalance.policy.Policy`, or None for an
    unmanaged domain (then ``xml`` is returned unchanged, byte for byte).
    ``huge_page_kib``: the huge page size guest memory is rounded down to
    for THP backing (:func:`nova_tlbbalance.hostfacts.hpage_pmd_size`);
    None skips rounding.
    ``allocation_threads``: add ``threads=<vCPUs>`` to ``<allocation>``
    (libvirt >= 8.2.0). ``topology``: {cpu: :class:`hostfacts.CpuIds`}
    for the tlbi_scope check (the same table the hook and ``verify``
    judge with), None to read this host's. ``migrating``: ``xml`` is the
    destination XML of a live migration (built on the source host from the
    running domain): memory sizes are kept (guest RAM cannot change size in
    flight; they were rounded when the guest started) and the vCPU pins,
    the destination's CPUs, are not checked here (the destination checks
    them against its own topology: :func:`check_destination`).

    Applying twice gives the same result as applying once. Raises
    PolicyConflict (a ValueError) when the policy contradicts the domain,
    ValueError for malformed XML.
    """
    if policy is None:
        return xml
    data = xml.encode('utf-8') if isinstance(xml, str) else xml
    parser = etree.XMLParser(remove_blank_text=True, resolve_entities=False,
                             no_network=True)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        raise ValueError('domain XML: not well-formed: %s' % exc) from None
    if root.tag != 'domain':
        raise ValueError('domain XML: root element is <%s>, not <domain>'
                         % root.tag)
    if policy.tlbi_scope != 'none' and not migrating:
        check_pins(_pins(root), _vcpu_count(root), policy, topology)
    if policy.backing != 'none':
        _apply_backing(root, policy, huge_page_kib, allocation_threads,
                       round_memory=not migrating)
    metadata = _insert_after(root, 'metadata',
                             ('name', 'uuid', 'genid', 'title',
                              'description'))
    for old in metadata.findall(tlbb_policy.POLICY_TAG):
        metadata.remove(old)
    metadata.append(etree.fromstring(policy.to_xml()))
    return etree.tostring(root, encoding='unicode', pretty_print=True)
