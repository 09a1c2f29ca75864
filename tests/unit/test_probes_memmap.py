# SPDX-License-Identifier: Apache-2.0
import pytest

from nova_tlbbalance.probes import domxml
from nova_tlbbalance.probes import memmap

MiB = 1 << 20
GiB = 1 << 30


def test_machine_maps():
    assert memmap.machine_map('pc-i440fx-7.2', 'x86_64', 2 * GiB) == [
        (0, 2 * GiB, 0)]
    # pc: reaching 3.5 GiB -> gigabyte aligned 3 GiB below 4 GiB
    assert memmap.machine_map('pc', 'x86_64', 4 * GiB) == [
        (0, 3 * GiB, 0), (3 * GiB, GiB, 4 * GiB)]
    assert memmap.machine_map('pc', 'x86_64', 0xd0000000) == [
        (0, 0xd0000000, 0)]
    # q35: 2.75 GiB fits, 3 GiB is split at 2 GiB
    assert memmap.machine_map('pc-q35-7.2', 'x86_64', 0xa0000000) == [
        (0, 0xa0000000, 0)]
    assert memmap.machine_map('q35', 'x86_64', 3 * GiB) == [
        (0, 2 * GiB, 0), (2 * GiB, GiB, 4 * GiB)]
    assert memmap.machine_map('virt-7.2', 'aarch64', GiB) == [
        (0, GiB, 0x40000000)]
    with pytest.raises(ValueError, match="machine type 'ls3a7a'"):
        memmap.machine_map('ls3a7a', 'mips64el', GiB)


MAPS = ''.join(ln + '\n' for ln in (
    '55d0c0000000-55d0c0021000 rw-p 00000000 00:00 0        [heap]',
    '7f0000000000-7f0008100000 rw-p 00000000 00:00 0 ',
    '7f0008100000-7f0008101000 ---p 00000000 00:00 0 ',
    '7f0010000000-7f0017f00000 rw-p 00000000 00:00 0 ',
    '7f0020000000-7f0028000000 rw-s 00000000 00:2d 1234     '
    '/dev/hugepages/libvirt/qemu/1-vm/'
    'qemu_back_mem._objects_ram-node1.AbCd (deleted)',
    '7f0030000000-7f0038000000 rw-p 00000000 00:00 0 ',
    '7f0040000000-7f0040200000 r-xp 00000000 fe:00 42       '
    '/usr/bin/qemu-system-x86_64'))


def dom(cells, machine='pc', hugepages=False):
    xml = ("<domain type='qemu'><name>vm</name><memory>1</memory>"
           "<cpu><numa>%s</numa></cpu><os><type arch='x86_64' "
           "machine='%s'>hvm</type></os></domain>"
           % (''.join("<cell id='%d' cpus='%d' memory='%d' unit='MiB'/>"
                      % (i, i, m) for i, m in enumerate(cells)), machine))
    return domxml.parse(xml)


def test_locate_by_size_and_name():
    vmas = memmap.parse_maps(MAPS)
    assert vmas[1].size == 129 * MiB
    rw = memmap.parse_maps(MAPS, writable_only=True)
    assert [v.perms for v in rw] == ['rw-p', 'rw-p', 'rw-p', 'rw-s',
                                     'rw-p']
    blocks, ranges = memmap.guest_ram(dom([129, 127]), 1, vmas=vmas)
    assert [(b.id, hex(b.hva), b.ambiguous) for b in blocks] == [
        ('ram-node0', '0x7f0000000000', False),
        ('ram-node1', '0x7f0010000000', False)]
    assert [(r.block, hex(r.gpa), r.length // MiB) for r in ranges] == [
        ('ram-node0', '0x0', 129), ('ram-node1', '0x8100000', 127)]
    assert ranges[0].misalignment(2 * MiB) == 0
    assert ranges[1].misalignment(2 * MiB) == MiB


def test_hugetlbfs_backend_found_by_its_id():
    vmas = memmap.parse_maps(MAPS)
    blocks, _ = memmap.guest_ram(dom([128, 128]), 1, vmas=vmas)
    # node1's file name names it; node0 takes the anonymous one
    assert blocks[1].hva == 0x7f0020000000 and 'ram-node1' in blocks[1].path
    assert blocks[0].hva == 0x7f0030000000 and not blocks[0].ambiguous


def test_equal_anonymous_blocks_are_flagged_ambiguous():
    maps = ('7f0000000000-7f0004000000 rw-p 00000000 00:00 0\n'
            '7f1000000000-7f1004000000 rw-p 00000000 00:00 0\n')
    blocks, _ = memmap.guest_ram(dom([64, 64]), 1,
                                 vmas=memmap.parse_maps(maps))
    # creation order: the first created is the highest (top-down mmap)
    assert [hex(b.hva) for b in blocks] == ['0x7f1000000000',
                                            '0x7f0000000000']
    assert blocks[0].ambiguous


def test_split_across_4g_hole():
    d = dom([2048, 2048], machine='pc-q35-7.2')
    maps = ('7e0000000000-7e0080000000 rw-p 00000000 00:00 0\n'
            '7f0000000000-7f0080000000 rw-p 00000000 00:00 0\n')
    blocks, ranges = memmap.guest_ram(d, 1, vmas=memmap.parse_maps(maps))
    # q35 with 4 GiB: 2 GiB low, the rest from 4 GiB; node1 is all high
    assert [(r.block, r.gpa, r.length) for r in ranges] == [
        ('ram-node0', 0, 2 * GiB), ('ram-node1', 4 * GiB, 2 * GiB)]


def test_missing_block_and_hotplug():
    with pytest.raises(ValueError, match=r'ram-node0 \(135266304 bytes\)'):
        memmap.guest_ram(dom([129]), 1, vmas=[])
    d = domxml.parse("<domain><name>h</name><maxMemory slots='2'>8</maxMemory>"
                     "<memory>4</memory></domain>")
    with pytest.raises(ValueError, match='hot-plug'):
        memmap.blocks_for(d)
