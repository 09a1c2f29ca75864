# SPDX-License-Identifier: Apache-2.0
"""QEMU process probes over a temporary /proc tree."""

import os

import pytest

from nova_tlbbalance.probes import proc

SMAPS = """\
7f0000000000-7f0008000000 rw-p 00000000 00:00 0
Size:             131072 kB
KernelPageSize:        4 kB
Rss:              131072 kB
AnonHugePages:    129024 kB
Private_Hugetlb:       0 kB
7f0010000000-7f0018000000 rw-s 00000000 00:2d 7    /dev/hugepages/x
Size:             131072 kB
KernelPageSize:     2048 kB
Rss:                   0 kB
AnonHugePages:         0 kB
Shared_Hugetlb:    65536 kB
Private_Hugetlb:   65536 kB
7f0040000000-7f0040200000 rw-p 00000000 00:00 0
Size:               2048 kB
AnonHugePages:      2048 kB
"""


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


def test_vcpu_threads_and_pid(tmp_path):
    p = str(tmp_path)
    for tid, comm in ((10, 'qemu-system-x86'), (11, 'CPU 0/KVM'),
                      (13, 'CPU 1/KVM'), (12, 'IO mon_iothread')):
        write('%s/10/task/%d/comm' % (p, tid), comm + '\n')
    assert proc.vcpu_threads(10, p) == [(0, 11, 'KVM'), (1, 13, 'KVM')]
    write('%s/20/task/20/comm' % p, 'ALL CPUs/TCG\n')
    assert proc.vcpu_threads(20, p) == [(None, 20, 'TCG')]
    write(p + '/run/vm.pid', '4242')
    assert proc.qemu_pid('vm', p + '/run') == 4242
    try:
        proc.qemu_pid('other', p + '/run')
    except LookupError as exc:
        assert "domain 'other': no pid file" in str(exc)
    else:
        raise AssertionError('no LookupError')


def test_pid_file_of_an_escaped_name(tmp_path):
    """libvirt 9.0 writes the pid file of q'uo"te <a&b> as
    q&apos;uo&quot;te &lt;a&amp;b&gt;.pid (seen with a real libvirtd:
    tests/integration test_special_name_registered)."""
    run = str(tmp_path)
    name = 'q\'uo"te <a&b>'
    write(run + '/q&apos;uo&quot;te &lt;a&amp;b&gt;.pid', '77')
    assert proc.qemu_pid(name, run) == 77
    # another domain whose raw name is that escaped text: its own file
    write(run + '/a&amp;b.pid', '1')           # the pid file of 'a&b'
    try:
        proc.qemu_pid('a&amp;b', run)
    except LookupError as exc:
        assert 'a&amp;amp;b.pid' in str(exc)
    else:
        raise AssertionError("'a&amp;b' took the pid of 'a&b'")
    write(run + '/a&amp;amp;b.pid', '2')
    assert proc.qemu_pid('a&amp;b', run) == 2
    assert proc.qemu_pid('a&b', run) == 1
    # a libvirt that writes raw names (no '&' in the name: no ambiguity)
    write(run + '/sp ace "q".pid', '3')
    assert proc.qemu_pid('sp ace "q"', run) == 3


def test_smaps_coverage(tmp_path):
    write(str(tmp_path / '7/smaps'), SMAPS)
    res = proc.smaps_huge(7, [(0x7f0000000000, 128 << 20),
                              (0x7f0010000000, 128 << 20)], str(tmp_path))
    assert res['anon_huge'] == 126 << 20
    assert res['hugetlb'] == 128 << 20     # shared + private, 3rd VMA out
    assert res['kernel_page'] == 2 << 20
    assert abs(res['coverage'] - (254 / 256)) < 1e-9
    # resident: Rss (counts AnonHugePages, not hugetlb) + hugetlb
    assert res['rss'] == 128 << 20
    assert res['resident_coverage'] == pytest.approx((126 + 128) / 256)
    # A guest that touched 8 MiB of 128, 6 MiB of it huge (prefault=false)
    lazy = SMAPS.replace('Rss:              131072 kB',
                         'Rss:                8192 kB').replace(
        'AnonHugePages:    129024 kB', 'AnonHugePages:      6144 kB')
    write(str(tmp_path / '8/smaps'), lazy)
    res = proc.smaps_huge(8, [(0x7f0000000000, 128 << 20)], str(tmp_path))
    assert res['coverage'] == pytest.approx(6 / 128)
    assert res['resident_coverage'] == pytest.approx(6 / 8)
    write(str(tmp_path / '9/smaps'), lazy.replace(
        'Rss:                8192 kB', 'Rss:                   0 kB'))
    res = proc.smaps_huge(9, [(0x7f0000000000, 128 << 20)], str(tmp_path))
    assert res['resident_coverage'] is None


def test_smaps_ranges_not_starting_a_vma(tmp_path):
    write(str(tmp_path / '7/smaps'), SMAPS)
    # inside the first VMA, and one spanning the 2nd and 3rd: full scan
    res = proc.smaps_huge(7, [(0x7f0000200000, 2 << 20)], str(tmp_path))
    assert res['anon_huge'] == 126 << 20
    res = proc.smaps_huge(7, [(0x7f0010000000, 0x30200000)], str(tmp_path))
    assert (res['hugetlb'], res['anon_huge']) == (128 << 20, 2 << 20)
