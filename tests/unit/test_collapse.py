# SPDX-License-Identifier: Apache-2.0
"""nova_tlbbalance.collapse: MADV_COLLAPSE from outside, paced, limited.

The pacing and limit logic runs against a recorded fake system call and
clock; then the real thing on this host's kernel (process_madvise with
MADV_COLLAPSE, Linux >= 6.1, root): a child process holding 4 huge-page
slots of small pages, collapsed whole, then up to a limit, and through
``tlbbalance collapse``.
"""

import ctypes
import errno
import json
import mmap
import os
import subprocess
import sys
import textwrap

import pytest

from nova_tlbbalance import collapse
from nova_tlbbalance.cli import main

SLOT = 2 << 20


class FakeClock:
    def __init__(self):
        self.t = 0.0
        self.sleeps = []

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.sleeps.append(s)
        self.t += s


def fake_madvise(clock, cost=0.01, errs=None, calls=None):
    errs = errs or {}

    def madvise(pidfd, addr, length, advice):
        assert advice == collapse.MADV_COLLAPSE and length == SLOT
        clock.t += cost
        if calls is not None:
            calls.append(addr)
        return errs.get(addr, 0)
    return madvise


def test_slots_whole_aligned_only():
    ranges = [(SLOT * 3 + 4096, SLOT * 2), (0, SLOT * 2 + 8192)]
    assert list(collapse.slots(ranges, SLOT)) == [0, SLOT, SLOT * 4]


def test_paced_to_cpu_share():
    clock, calls = FakeClock(), []
    res = collapse.collapse(os.getpid(), [(0, 8 * SLOT)], SLOT,
                            cpu_share=0.25, clock=clock, sleep=clock.sleep,
                            madvise=fake_madvise(clock, calls=calls))
    assert res.slots == res.collapsed == 8 and not res.refused
    assert res.busy_s == pytest.approx(0.08)
    # busy 0.01 a call, at most a quarter of the time: 0.04 s per slot
    assert res.total_s == pytest.approx(0.32)
    assert res.busy_s / res.total_s <= 0.25 + 1e-9


def test_never_above_the_limit():
    """Each call forms at most one huge page: with 5 huge of a limit of 7
    it asks 2 slots, counts again, and stops when the count is there."""
    clock, calls = FakeClock(), []
    counts = iter([5, 6, 7])
    res = collapse.collapse(os.getpid(), [(0, 16 * SLOT)], SLOT, limit=7,
                            count=lambda: next(counts), clock=clock,
                            sleep=clock.sleep,
                            madvise=fake_madvise(clock, calls=calls))
    # 2 asked (room 2), count 6 -> 1 more, count 7 -> stop
    assert calls == [0, SLOT, 2 * SLOT]
    assert res.stopped_at_limit and res.slots == 3


def test_refused_slots_counted_and_skipped():
    clock = FakeClock()
    errs = {SLOT: errno.EINVAL, 3 * SLOT: errno.EAGAIN}
    res = collapse.collapse(os.getpid(), [(0, 4 * SLOT)], SLOT, clock=clock,
                            sleep=clock.sleep,
                            madvise=fake_madvise(clock, errs=errs),
                            resident=lambda pid, addr, n: 512)
    assert res.collapsed == 2 and res.untouched == 0
    assert res.refused == {'EINVAL': 1, 'EAGAIN': 1}


def test_einval_on_an_untouched_slot_is_not_a_failure():
    """The kernel answers EINVAL for a slot with nothing mapped (a lazy
    guest's untouched RAM) as for a VM_NOHUGEPAGE one: the slot's
    resident pages tell them apart."""
    clock, looked = FakeClock(), []
    errs = {0: errno.EINVAL, SLOT: errno.EINVAL, 2 * SLOT: errno.ENOMEM}

    def resident(pid, addr, length):
        looked.append(addr)
        assert (pid, length) == (os.getpid(), SLOT)
        return 3 if addr == SLOT else 0
    res = collapse.collapse(os.getpid(), [(0, 4 * SLOT)], SLOT, clock=clock,
                            sleep=clock.sleep,
                            madvise=fake_madvise(clock, errs=errs),
                            resident=resident)
    assert looked == [0, SLOT]       # only after EINVAL
    assert (res.slots, res.collapsed, res.untouched) == (4, 1, 1)
    assert res.refused == {'EINVAL': 1, 'ENOMEM': 1}
    assert res.as_dict()['untouched'] == 1


def test_eagain_tried_again_then_refused():
    clock, calls = FakeClock(), []
    seq = {0: [errno.EAGAIN, errno.EAGAIN, 0],
           SLOT: [errno.EAGAIN] * collapse.EAGAIN_TRIES}

    def madvise(pidfd, addr, length, advice):
        calls.append(addr)
        return seq[addr].pop(0)
    res = collapse.collapse(os.getpid(), [(0, 2 * SLOT)], SLOT, clock=clock,
                            sleep=clock.sleep, madvise=madvise)
    assert calls == [0] * 3 + [SLOT] * collapse.EAGAIN_TRIES
    assert res.collapsed == 1 and res.refused == {'EAGAIN': 1}
    # a pause between tries, none after the last
    assert clock.sleeps.count(collapse.EAGAIN_PAUSE_S) == \
        2 + collapse.EAGAIN_TRIES - 1


def test_fatal_errors_name_the_pid():
    clock = FakeClock()
    with pytest.raises(collapse.CollapseError, match='pid %d: .*not '
                       'permitted' % os.getpid()):
        collapse.collapse(os.getpid(), [(0, SLOT)], SLOT, clock=clock,
                          sleep=clock.sleep,
                          madvise=fake_madvise(clock,
                                               errs={0: errno.EPERM}))
    with pytest.raises(collapse.CollapseError, match='pid 2147483647'):
        collapse.collapse(2 ** 31 - 1, [(0, SLOT)], SLOT)
    with pytest.raises(ValueError, match='cpu_share'):
        collapse.collapse(os.getpid(), [], SLOT, cpu_share=0)
    with pytest.raises(ValueError, match='count'):
        collapse.collapse(os.getpid(), [], SLOT, limit=1)


# -- the real kernel ----------------------------------------------------------

CHILD = textwrap.dedent('''
    import ctypes, mmap, sys
    slot, n = int(sys.argv[1]), int(sys.argv[2])
    # private anonymous memory, like QEMU's guest RAM (mmap.mmap(-1, n)
    # alone is MAP_SHARED: shmem, which smaps counts apart and which
    # collapses only as shmem_enabled allows)
    m = mmap.mmap(-1, (n + 1) * slot,
                  flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    base = ctypes.addressof(ctypes.c_char.from_buffer(m))
    off = -base % slot
    thp = open('/sys/kernel/mm/transparent_hugepage/enabled').read()
    always = '[always]' in thp
    if always:   # fault small pages
        m.madvise(mmap.MADV_NOHUGEPAGE, 0, len(m))
    for i in range(off, off + n * slot, 4096):
        m[i] = 1
    if always:   # MADV_COLLAPSE refuses VM_NOHUGEPAGE
        m.madvise(mmap.MADV_HUGEPAGE, 0, len(m))
    print(base + off, flush=True)
    sys.stdin.read()
''')


def kernel_refuses_collapse():
    """Why this kernel refuses MADV_COLLAPSE on a process's own anonymous
    memory, or None (Linux >= 6.1 takes it on private anonymous memory,
    whatever the THP sysfs settings say)."""
    libc = ctypes.CDLL(None, use_errno=True)
    m = mmap.mmap(-1, 2 * SLOT, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    buf = ctypes.c_char.from_buffer(m)
    try:
        base = ctypes.addressof(buf)
        addr = base + (-base % SLOT)
        ctypes.memset(addr, 1, SLOT)
        if libc.madvise(ctypes.c_void_p(addr), ctypes.c_size_t(SLOT),
                        collapse.MADV_COLLAPSE):
            return 'madvise(MADV_COLLAPSE) on own memory: %s (kernel %s)' % (
                os.strerror(ctypes.get_errno()), os.uname().release)
        return None
    finally:
        del buf
        m.close()


@pytest.fixture
def child():
    with open('/sys/kernel/mm/transparent_hugepage/hpage_pmd_size') as f:
        assert int(f.read()) == SLOT, 'the tests assume 2 MiB huge pages'
    why = kernel_refuses_collapse()
    if why:
        pytest.skip('a kernel capability this machine lacks: %s' % why)
    p = subprocess.Popen([sys.executable, '-c', CHILD, str(SLOT), '4'],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    try:
        addr = int(p.stdout.readline())
        yield p.pid, [(addr, 4 * SLOT)]
    finally:
        p.stdin.close()
        p.wait(timeout=30)


def test_real_collapse_whole(child):
    pid, ranges = child
    assert collapse.smaps_huge(pid, ranges, SLOT) == 0
    res = collapse.collapse(pid, ranges, SLOT)
    assert (res.slots, res.collapsed, res.refused) == (4, 4, {})
    assert collapse.smaps_huge(pid, ranges, SLOT) == 4


def test_real_collapse_up_to_the_limit(child):
    pid, ranges = child
    res = collapse.collapse(
        pid, ranges, SLOT, limit=2,
        count=lambda: collapse.smaps_huge(pid, ranges, SLOT),
        cpu_share=0.5)
    assert res.stopped_at_limit and res.collapsed == 2
    assert collapse.smaps_huge(pid, ranges, SLOT) == 2
    assert res.busy_s <= 0.5 * res.total_s + 0.01


def test_cli_collapse_pid_and_range(child, capsys):
    pid, [(addr, length)] = child
    rc = main(['collapse', '--pid', str(pid), '--range',
               '%#x:%#x' % (addr, length), '--cpu-share', '1'])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert 'pid %d: 4 slot(s) asked, 4 collapsed, untouched: 0 slots, ' \
        'refused none; 4 huge' % pid in out


LAZY_CHILD = textwrap.dedent('''
    import ctypes, mmap, sys
    slot, kinds = int(sys.argv[1]), sys.argv[2]
    m = mmap.mmap(-1, (len(kinds) + 1) * slot,
                  flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    base = ctypes.addressof(ctypes.c_char.from_buffer(m))
    off = -base % slot
    m.madvise(mmap.MADV_HUGEPAGE, 0, len(m))
    for k, kind in enumerate(kinds):
        o = off + k * slot
        if kind == 'u':      # untouched: nothing mapped
            continue
        m.madvise(mmap.MADV_NOHUGEPAGE, o, slot)    # fault small pages
        if kind == 'z':      # read only: the shared zero page mapped
            sum(m[i] for i in range(o, o + slot, 4096))
        else:
            for i in range(o, o + slot, 4096):
                m[i] = 1
        if kind == 'd':      # touched, then dropped: a page table, no page
            m.madvise(mmap.MADV_DONTNEED, o, slot)
        if kind != 'n':      # 'n': VM_NOHUGEPAGE kept, as the module does
            m.madvise(mmap.MADV_HUGEPAGE, o, slot)
    print(base + off, flush=True)
    sys.stdin.read()
''')


@pytest.fixture
def lazy_child():
    """A process holding slots of each kind: 'u' untouched, 's' small
    pages, 'z' the zero page only, 'd' dropped, 'n' small pages under
    VM_NOHUGEPAGE (what tlbbalance.ko holds)."""
    why = kernel_refuses_collapse()
    if why:
        pytest.skip('a kernel capability this machine lacks: %s' % why)
    procs = []

    def start(kinds):
        p = subprocess.Popen([sys.executable, '-c', LAZY_CHILD, str(SLOT),
                              kinds], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        procs.append(p)
        return p.pid, int(p.stdout.readline())
    yield start
    for p in procs:
        p.stdin.close()
        p.wait(timeout=30)


def test_real_resident_pages(lazy_child):
    pid, addr = lazy_child('uszdn')
    got = [collapse.resident_pages(pid, addr + k * SLOT, SLOT)
           for k in range(5)]
    assert got == [0, 512, 0, 0, 512], got
    with pytest.raises(OSError, match='/proc/2147483647/pagemap'):
        collapse.resident_pages(2 ** 31 - 1, addr, SLOT)


def test_real_untouched_slots_are_not_refused(lazy_child):
    """This kernel's own answers, slot by slot: EINVAL for an untouched
    or dropped slot (6.1, 6.12, 6.18), counted untouched; a VM_NOHUGEPAGE
    slot with its pages resident still refused. The zero-page slot is
    collapsed (6.18) or refused with EINVAL and counted untouched (6.1,
    6.12): either way not a failure."""
    pid, addr = lazy_child('usdzn')
    res = collapse.collapse(pid, [(addr, 5 * SLOT)], SLOT)
    assert res.refused == {'EINVAL': 1}, res.as_dict()
    assert res.collapsed + res.untouched == 4, res.as_dict()
    assert res.untouched >= 2, res.as_dict()
    assert collapse.resident_pages(pid, addr + SLOT, SLOT) == 512


def test_cli_collapse_lazy_exits_0(lazy_child, capsys):
    """A lazily faulted process (untouched slots between touched ones):
    exit status 0, the untouched slots named as such."""
    pid, addr = lazy_child('usus')
    rc = main(['collapse', '--pid', str(pid), '--range',
               '%#x:%#x' % (addr, 4 * SLOT), '--cpu-share', '1'])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert ('pid %d: 4 slot(s) asked, 2 collapsed, untouched: 2 slots, '
            'refused none; 2 huge' % pid) in out
    rc = main(['collapse', '--pid', str(pid), '--range',
               '%#x:%#x' % (addr, 4 * SLOT), '--json'])
    assert rc == 0
    assert json.loads(capsys.readouterr().out)['untouched'] == 2


def test_cli_collapse_refused_exits_1(lazy_child, capsys):
    pid, addr = lazy_child('sn')
    rc = main(['collapse', '--pid', str(pid), '--range',
               '%#x:%#x' % (addr, 2 * SLOT)])
    out = capsys.readouterr().out
    assert rc == 1, out
    assert 'untouched: 0 slots, refused EINVAL 1' in out


def test_cli_collapse_bad_input(capsys):
    assert main(['collapse', '--pid', '1']) == 2
    assert 'give --vm, or --pid and at least one --range' in \
        capsys.readouterr().err
    assert main(['collapse', '--pid', '1', '--range', '0x1000']) == 2
    assert "--range '0x1000': not HVA:LENGTH" in capsys.readouterr().err
    assert main(['collapse', '--vm', 'nosuch', '--configfs',
                 '/nonexistent']) == 2
    assert "no VM 'nosuch'" in capsys.readouterr().err
