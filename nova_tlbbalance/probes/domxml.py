# SPDX-License-Identifier: Apache-2.0
"""The facts of a libvirt domain XML that tlbbalance needs (stdlib only)."""

import xml.etree.ElementTree as ET

from nova_tlbbalance import record
from nova_tlbbalance.shown import shown

# libvirt's memory units, in bytes: the one table (guest_config uses it too).
UNITS = {
    'b': 1, 'bytes': 1,
    'k': 1024, 'kib': 1024, 'kb': 1000,
    'm': 1024 ** 2, 'mib': 1024 ** 2, 'mb': 1000 ** 2,
    'g': 1024 ** 3, 'gib': 1024 ** 3, 'gb': 1000 ** 3,
    't': 1024 ** 4, 'tib': 1024 ** 4, 'tb': 1000 ** 4,
}


def parse_cpuset(text):
    """libvirt/Linux cpu list ``"0-3,^2,8"`` -> sorted tuple of ints."""
    cpus = set()
    drop = set()
    for part in (text or '').replace(' ', '').split(','):
        if not part:
            continue
        target = cpus
        if part.startswith('^'):
            target, part = drop, part[1:]
        try:
            if '-' in part:
                lo, hi = part.split('-', 1)
                target.update(range(int(lo), int(hi) + 1))
            else:
                target.add(int(part))
        except ValueError:
            raise ValueError('bad cpu list %s (at %s)'
                             % (shown(text), shown(part))) from None
    return tuple(sorted(cpus - drop))


def format_cpuset(cpus):
    """Sorted ints -> compact ``"0-3,8"``."""
    cpus = sorted(set(cpus))
    out = []
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else '%d-%d' % (cpus[i], cpus[j]))
        i = j + 1
    return ','.join(out)


def to_bytes(elem, what, text=None, default_unit='KiB'):
    """Bytes of a libvirt size element (its text, or ``text`` when the
    number is an attribute, as <cell memory=...>) in its ``unit``; a
    ValueError naming ``what`` otherwise."""
    if text is None and elem is not None:
        text = elem.text
    if elem is None or text is None:
        raise ValueError('%s is missing' % what)
    unit = (elem.get('unit') or default_unit).lower()
    if unit not in UNITS:
        raise ValueError('%s: unknown unit %s'
                         % (what, shown(elem.get('unit'))))
    try:
        return int(text.strip()) * UNITS[unit]
    except ValueError:
        raise ValueError('%s: %s is not an integer' % (what, shown(text))) \
            from None


@record.record
class NumaCell:
    id: int
    memory: int          # bytes
    cpus: tuple


@record.record
class Domain:
    name: str
    uuid: str
    virt_type: str       # 'kvm' or 'qemu' (TCG)
    arch: str
    machine: str
    memory: int          # bytes of guest RAM (sum of NUMA cells if any)
    vcpus: int
    cells: list          # [NumaCell], empty without guest NUMA
    hugepages: list      # [(page size bytes or None=default, nodeset)]
    source_type: str     # memoryBacking/source type or ''
    allocation: str      # memoryBacking/allocation mode or ''
    nosharepages: bool
    locked: bool
    vcpupin: dict        # vcpu index -> tuple of host cpus
    vcpu_cpuset: tuple   # <vcpu cpuset=...> or ()
    numa_nodeset: tuple  # <numatune><memory nodeset> or ()
    memnodes: dict       # guest cell id -> tuple of host nodes
    hotplug: bool        # <maxMemory> present: DIMMs are not handled

    @property
    def uses_hugetlbfs(self):
        return bool(self.hugepages)


def parse(xml):
    """Parse a domain XML string (or Element); ValueError naming the fault."""
    if isinstance(xml, (str, bytes)):
        try:
            root = ET.fromstring(xml)
        except ET.ParseError as exc:
            raise ValueError('domain XML: not well-formed: %s' % exc) \
                from None
    else:
        root = xml
    if root.tag != 'domain':
        raise ValueError('domain XML: root element is <%s>' % root.tag)
    name = (root.findtext('name') or '').strip()
    where = 'domain %r' % name
    ostype = root.find('os/type')
    cells = []
    for cell in root.findall('cpu/numa/cell'):
        cells.append(NumaCell(
            id=int(cell.get('id', len(cells))),
            memory=int(cell.get('memory', '0')) * UNITS[
                (cell.get('unit') or 'KiB').lower()],
            cpus=parse_cpuset(cell.get('cpus', ''))))
    if cells:
        memory = sum(c.memory for c in cells)
    else:
        memory = to_bytes(root.find('memory'), '%s: <memory>' % where)
    pages = []
    for page in root.findall('memoryBacking/hugepages/page'):
        size = page.get('size')
        pages.append((int(size) * UNITS[(page.get('unit') or 'KiB').lower()]
                      if size else None, parse_cpuset(page.get('nodeset'))))
    if root.find('memoryBacking/hugepages') is not None and not pages:
        pages.append((None, ()))
    pin = {}
    for vp in root.findall('cputune/vcpupin'):
        pin[int(vp.get('vcpu'))] = parse_cpuset(vp.get('cpuset'))
    vcpu = root.find('vcpu')
    memnodes = {}
    for mn in root.findall('numatune/memnode'):
        memnodes[int(mn.get('cellid'))] = parse_cpuset(mn.get('nodeset'))
    mem = root.find('numatune/memory')
    src = root.find('memoryBacking/source')
    alloc = root.find('memoryBacking/allocation')
    return Domain(
        name=name,
        uuid=(root.findtext('uuid') or '').strip(),
        virt_type=root.get('type', ''),
        arch=ostype.get('arch', '') if ostype is not None else '',
        machine=ostype.get('machine', '') if ostype is not None else '',
        memory=memory,
        vcpus=int((vcpu.text or '1').strip()) if vcpu is not None else 1,
        cells=cells,
        hugepages=pages,
        source_type=src.get('type', '') if src is not None else '',
        allocation=alloc.get('mode', '') if alloc is not None else '',
        nosharepages=root.find('memoryBacking/nosharepages') is not None,
        locked=root.find('memoryBacking/locked') is not None,
        vcpupin=pin,
        vcpu_cpuset=parse_cpuset(vcpu.get('cpuset'))
        if vcpu is not None and vcpu.get('cpuset') else (),
        numa_nodeset=parse_cpuset(mem.get('nodeset'))
        if mem is not None and mem.get('nodeset') else (),
        memnodes=memnodes,
        hotplug=root.find('maxMemory') is not None,
    )
