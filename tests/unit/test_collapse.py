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
                            madvise=fake_madvise(clock, errs=errs))
    assert res.collapsed == 2
    assert res.refused == {'EINVAL': 1, 'EAGAIN': 1}


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
    assert 'pid %d: 4 slot(s) asked, 4 collapsed, refused none; 4 huge' \
        % pid in out


def test_cli_collapse_bad_input(capsys):
    assert main(['collapse', '--pid', '1']) == 2
    assert 'give --vm, or --pid and at least one --range' in \
        capsys.readouterr().err
    assert main(['collapse', '--pid', '1', '--range', '0x1000']) == 2
    assert "--range '0x1000': not HVA:LENGTH" in capsys.readouterr().err
    assert main(['collapse', '--vm', 'nosuch', '--configfs',
                 '/nonexistent']) == 2
    assert "no VM 'nosuch'" in capsys.readouterr().err
