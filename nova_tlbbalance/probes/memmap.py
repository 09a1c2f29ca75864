# SPDX-License-Identifier: Apache-2.0
"""Where a QEMU guest's RAM lives: guest-physical layout and host VMAs.

GPA side: QEMU lays the RAM backends (one ``pc.ram``, or one per guest NUMA
cell, in cell order) end to end in one RAM space and maps that space into
the guest by the machine type's memory map:

- x86 ``pc`` (i440fx): RAM below 4 GiB up to 0xe0000000, but only up to
  0xc0000000 (gigabyte aligned) when the RAM reaches 0xe0000000; the rest
  at 4 GiB.
- x86 ``q35``: below 4 GiB up to 0xb0000000, but only 0x80000000 when the
  RAM reaches 0xb0000000; the rest at 4 GiB.
- arm/aarch64/riscv ``virt``: one block from 0x40000000 / 0x80000000.

The machine option ``max-ram-below-4g`` and memory hot-plug (``<maxMemory>``,
DIMMs) are not modelled: such a domain is reported, not guessed.

HVA side: each backend is one mapping of exactly its size in
``/proc/<pid>/maps``; a hugetlbfs backend's file name carries the backend id.
Anonymous backends of equal size cannot be told apart by maps alone: they
are taken in QEMU's creation order (top-down mmap: the first created is the
highest) and marked ``ambiguous``; the CLI cross-checks every block with
QEMU's own ``gpa2hva``.
"""

import re

from nova_tlbbalance import record

GiB = 1024 ** 3
FOUR_G = 4 * GiB

_MAPS_RE = re.compile(
    r'^(?P<start>[0-9a-f]+)-(?P<end>[0-9a-f]+)\s+(?P<perms>\S+)\s+'
    r'(?P<offset>[0-9a-f]+)\s+(?P<dev>\S+)\s+(?P<inode>\d+)[ \t]*'
    r'(?P<path>.*)$', re.M)


@record.record
class Vma:
    start: int
    end: int
    perms: str
    path: str

    @property
    def size(self):
        return self.end - self.start


@record.record
class Block:
    """One RAM backend of the guest."""
    id: str
    size: int
    offset: int          # where it starts in the RAM space
    hva: int = None
    path: str = ''
    ambiguous: bool = False


@record.record
class Range:
    """One contiguous GPA range of guest RAM and its host address."""
    block: str
    hva: int
    length: int
    gpa: int

    def misalignment(self, page_size):
        """(hva - gpa) mod page_size: 0 when stage 2 can map it huge."""
        return (self.hva - self.gpa) % page_size


_RW_RE = re.compile(r'^[0-9a-f]+-[0-9a-f]+ rw.*$', re.M)


def parse_maps(text, writable_only=False):
    """``/proc/<pid>/maps`` text -> [Vma]; ``writable_only`` keeps the
    ``rw`` mappings (guest RAM is one), skipping most of a QEMU's map."""
    if writable_only:
        text = '\n'.join(_RW_RE.findall(text))
    return [Vma(int(m['start'], 16), int(m['end'], 16), m['perms'],
                m['path'].strip()) for m in _MAPS_RE.finditer(text)]


def read_maps(pid, proc='/proc', writable_only=False):
    with open('%s/%d/maps' % (proc, pid)) as f:
        return parse_maps(f.read(), writable_only)


def blocks_for(dom):
    """The RAM backends QEMU creates for ``dom`` (a domxml.Domain)."""
    if dom.hotplug:
        raise ValueError('domain %r: memory hot-plug (<maxMemory>) is not '
                         'supported: DIMM placement is not modelled'
                         % dom.name)
    out = []
    if dom.cells:
        offset = 0
        for cell in sorted(dom.cells, key=lambda c: c.id):
            out.append(Block('ram-node%d' % cell.id, cell.memory, offset))
            offset += cell.memory
    else:
        out.append(Block('pc.ram', dom.memory, 0))
    return out


def machine_map(machine, arch, ram_size):
    """[(ram_space_offset, length, gpa)] for the machine type."""
    m = (machine or '').lower()
    if arch in ('x86_64', 'i686') or m.startswith('pc'):
        if 'q35' in m:
            low = 0x80000000 if ram_size >= 0xb0000000 else 0xb0000000
        elif m.startswith('pc') or m.startswith('isapc'):
            low = 0xc0000000 if ram_size >= 0xe0000000 else 0xe0000000
        else:
            raise ValueError('machine type %r: guest memory map unknown'
                             % machine)
        below = min(ram_size, low)
        out = [(0, below, 0)]
        if ram_size > below:
            out.append((below, ram_size - below, FOUR_G))
        return out
    if m.startswith('virt') and arch in ('aarch64', 'armv7l'):
        return [(0, ram_size, 0x40000000)]
    if m.startswith('virt') and arch in ('riscv64', 'riscv32'):
        return [(0, ram_size, 0x80000000)]
    raise ValueError('machine type %r (%s): guest memory map unknown'
                     % (machine, arch))


def _candidates(vmas, block, taken):
    named = []
    sized = []
    for v in vmas:
        if v.size != block.size or v.start in taken:
            continue
        if 'rw' not in v.perms[:2]:
            continue
        if block.id in v.path:
            named.append(v)
        elif not v.path or v.path.startswith(('/memfd:', '/dev/hugepages',
                                             '/dev/shm', '[heap]')) \
                or 'qemu_back_mem' in v.path or 'hugepages' in v.path:
            sized.append(v)
    return named, sized


def locate(blocks, vmas):
    """Fill each block's hva/path from the process's VMAs (in place).

    Raises ValueError naming a block no mapping of its size was found for.
    """
    taken = set()
    # Blocks whose file name carries their id first, then by size.
    pending = []
    for b in blocks:
        named, _ = _candidates(vmas, b, taken)
        if len(named) == 1:
            b.hva, b.path = named[0].start, named[0].path
            taken.add(b.hva)
        else:
            pending.append(b)
    for b in pending:
        _, sized = _candidates(vmas, b, taken)
        if not sized:
            raise ValueError('guest RAM block %s (%d bytes): no mapping of '
                             'that size in the QEMU process' % (b.id, b.size))
        same = [o for o in pending if o.size == b.size and o.hva is None]
        if len(sized) > 1 or len(same) > 1:
            b.ambiguous = True
        # creation order = descending address (top-down mmap)
        v = max(sized, key=lambda x: x.start)
        b.hva, b.path = v.start, v.path
        taken.add(b.hva)
    return blocks


def ranges_for(blocks, machine_ranges):
    """Split blocks (with hva) over the machine map -> [Range]."""
    out = []
    for space_off, length, gpa in machine_ranges:
        end = space_off + length
        for b in blocks:
            lo = max(space_off, b.offset)
            hi = min(end, b.offset + b.size)
            if lo >= hi:
                continue
            out.append(Range(b.id, b.hva + (lo - b.offset), hi - lo,
                             gpa + (lo - space_off)))
    return out


def guest_ram(dom, pid, proc='/proc', vmas=None):
    """(blocks, ranges) of a running domain; ValueError when unknown."""
    blocks = blocks_for(dom)
    locate(blocks, read_maps(pid, proc, True) if vmas is None else vmas)
    return blocks, ranges_for(
        blocks, machine_map(dom.machine, dom.arch, dom.memory))
