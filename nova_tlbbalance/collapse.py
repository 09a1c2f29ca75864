# SPDX-License-Identifier: Apache-2.0
"""Restore huge-page coverage on purpose: ``MADV_COLLAPSE`` from outside.

After the limit is lifted (or a guest was faulted in lazily, or landed
small on a migration destination) khugepaged re-forms huge pages at its own
pace: with its defaults (4096 pages every 10 s) 16 MiB per 10 s, 640 s per
GiB of 4 KiB pages. ``process_madvise(2)`` with ``MADV_COLLAPSE`` (Linux
6.1) collapses a chosen range now, in the calling process's context, so
its CPU time is the caller's and can be paced.

:func:`collapse` walks the huge-page slots of the given ranges (whole,
aligned huge pages, low address first), one call per slot, and

* never forms more huge pages than ``limit`` allows: each call forms at
  most one, so it asks for at most ``limit - huge`` slots before counting
  the huge pages again (``count()``, e.g. smaps);
* keeps its share of one CPU at most ``cpu_share``: after each call it
  sleeps so that its busy time stays under that share of the time since
  it started.

A slot nothing has touched is not a failure: the kernel (6.1, 6.12 and
6.18 alike) answers ``EINVAL`` for a slot with no page mapped, the same
errno as for a range tlbbalance.ko holds with ``VM_NOHUGEPAGE``. So after
an ``EINVAL`` the slot's pages are looked up in ``/proc/PID/pagemap``:
with no resident page (none present but the shared zero page, none
swapped) it is counted ``untouched``; with resident pages it stays small
and is refused. ``EAGAIN`` (the pages were busy) is tried again a few
times before it counts as refused; ``ENOMEM`` and other errnos are
refused at once. Refused slots are counted and skipped. The kernel needs
``CAP_SYS_NICE`` and ptrace access to the process.
"""

import ctypes
import errno
import os
import platform
import struct
import time

from nova_tlbbalance.probes import proc

MADV_COLLAPSE = 25
# The generic syscall table's number, the same on x86_64 and arm64.
SYS_PROCESS_MADVISE = {'x86_64': 440, 'aarch64': 440}
# EAGAIN (pages locked, isolated, or under writeback): tries in all, and
# the pause between them
EAGAIN_TRIES = 3
EAGAIN_PAUSE_S = 0.01
# /proc/PID/pagemap (Documentation/admin-guide/mm/pagemap.rst): one
# little-endian 64-bit entry per page
PM_PRESENT = 1 << 63
PM_SWAP = 1 << 62
PM_FILE = 1 << 61
PM_MMAP_EXCLUSIVE = 1 << 56
PAGE_SIZE = os.sysconf('SC_PAGE_SIZE')


class CollapseError(Exception):
    """The collapse cannot go on at all (no process, no permission)."""


class Result:
    """What one :func:`collapse` did."""

    def __init__(self):
        self.slots = 0          # slots asked
        self.collapsed = 0      # calls that succeeded (huge now, or before)
        self.untouched = 0      # EINVAL, and no resident page: nothing to do
        self.refused = {}       # errno name -> slots
        self.busy_s = 0.0       # time inside the calls
        self.total_s = 0.0      # wall time, pauses included
        self.stopped_at_limit = False

    def bytes_per_s(self, slot_size):
        return self.slots * slot_size / self.total_s if self.total_s else 0

    def as_dict(self):
        return {'slots': self.slots, 'collapsed': self.collapsed,
                'untouched': self.untouched,
                'refused': dict(self.refused),
                'busy_s': round(self.busy_s, 6),
                'total_s': round(self.total_s, 6),
                'stopped_at_limit': self.stopped_at_limit}


def slots(ranges, slot_size):
    """The whole, aligned huge-page slots of ``[(hva, length), ...]``."""
    for hva, length in sorted(ranges):
        start = -(-hva // slot_size) * slot_size
        stop = (hva + length) // slot_size * slot_size
        yield from range(start, stop, slot_size)


class _Iovec(ctypes.Structure):
    _fields_ = [('iov_base', ctypes.c_void_p), ('iov_len', ctypes.c_size_t)]


def _syscall_madvise():
    nr = SYS_PROCESS_MADVISE.get(platform.machine())
    if nr is None:
        raise CollapseError('process_madvise: no syscall number known for '
                            '%s' % platform.machine())
    libc = ctypes.CDLL(None, use_errno=True)
    fn = libc.syscall
    fn.restype = ctypes.c_long

    def madvise(pidfd, addr, length, advice):
        iov = _Iovec(addr, length)
        ret = fn(ctypes.c_long(nr), ctypes.c_int(pidfd), ctypes.byref(iov),
                 ctypes.c_size_t(1), ctypes.c_int(advice),
                 ctypes.c_uint(0))
        return 0 if ret >= 0 else ctypes.get_errno()
    return madvise


def resident_pages(pid, addr, length):
    """Resident pages of ``pid`` in ``[addr, addr + length)`` from
    /proc/PID/pagemap: swapped, or present and not the shared zero page.

    A present entry counts when the page is mapped once (``exclusive``:
    private anonymous memory such as QEMU's guest RAM) or is a file page;
    a present entry with neither flag is the zero page a read of untouched
    memory maps (or a page shared by KSM or a fork: not counted). Raises
    OSError (named by path) when pagemap cannot be read.
    """
    path = '/proc/%d/pagemap' % pid
    n = length // PAGE_SIZE
    try:
        with open(path, 'rb') as f:
            f.seek(addr // PAGE_SIZE * 8)
            data = f.read(n * 8)
    except OSError as exc:
        raise OSError(exc.errno, '%s: %s' % (path, exc.strerror)) from None
    count = 0
    for (e,) in struct.iter_unpack('<Q', data):
        if e & PM_SWAP or (e & PM_PRESENT and
                           e & (PM_MMAP_EXCLUSIVE | PM_FILE)):
            count += 1
    return count


def collapse(pid, ranges, slot_size, limit=None, count=None, cpu_share=1.0,
             clock=time.monotonic, sleep=time.sleep, madvise=None,
             resident=None):
    """Collapse the slots of ``ranges`` of process ``pid``; a :class:`Result`.

    ``limit``: the most huge pages the ranges may hold (None: no limit),
    with ``count()`` returning how many they hold now (needed with a
    limit). ``cpu_share``: 0 < share <= 1 of one CPU. ``madvise(pidfd,
    addr, length, advice) -> errno or 0`` is the system call (tests give
    their own), ``resident(pid, addr, length) -> pages`` the look-up
    that tells an untouched slot from a refused one (default
    :func:`resident_pages`). Raises :class:`CollapseError` when the
    process is gone, the caller may not advise it, or the kernel has no
    process_madvise.
    """
    if not 0 < cpu_share <= 1:
        raise ValueError('cpu_share %r: not in (0, 1]' % (cpu_share,))
    if limit is not None and count is None:
        raise ValueError('a limit needs count()')
    madvise = madvise or _syscall_madvise()
    resident = resident or resident_pages
    res = Result()
    try:
        pidfd = os.pidfd_open(pid)
    except OSError as exc:
        raise CollapseError('pid %d: %s' % (pid, exc.strerror)) from None
    t0 = clock()
    room = None
    try:
        for addr in slots(ranges, slot_size):
            if limit is not None:
                if not room:
                    room = limit - count()
                    if room <= 0:
                        res.stopped_at_limit = True
                        break
                room -= 1
            for tries_left in range(EAGAIN_TRIES - 1, -1, -1):
                t = clock()
                err = madvise(pidfd, addr, slot_size, MADV_COLLAPSE)
                res.busy_s += clock() - t
                if err != errno.EAGAIN or not tries_left:
                    break
                sleep(EAGAIN_PAUSE_S)
            res.slots += 1
            if not err:
                res.collapsed += 1
            elif err in (errno.ESRCH, errno.EPERM, errno.ENOSYS,
                         errno.EBADF):
                raise CollapseError('pid %d: process_madvise(MADV_COLLAPSE)'
                                    ': %s' % (pid, os.strerror(err)))
            elif err == errno.EINVAL and not _resident(resident, pid, addr,
                                                       slot_size):
                res.untouched += 1
            else:
                name = errno.errorcode.get(err, str(err))
                res.refused[name] = res.refused.get(name, 0) + 1
            # pace: busy time at most cpu_share of the time so far
            pause = res.busy_s / cpu_share - (clock() - t0)
            if pause > 0:
                sleep(pause)
    finally:
        os.close(pidfd)
        res.total_s = clock() - t0
    return res


def _resident(resident, pid, addr, length):
    try:
        return resident(pid, addr, length)
    except OSError as exc:
        raise CollapseError('pid %d: %s' % (pid, exc)) from None


def smaps_huge(pid, ranges, slot_size):
    """Huge pages of ``pid`` in ``ranges``, in slots: AnonHugePages of
    every VMA the ranges overlap (probes.proc.smaps_huge, the one smaps
    reader; smaps counts per VMA: one reaching beyond the ranges counts
    whole; QEMU's guest RAM is a VMA of its own)."""
    return proc.smaps_huge(pid, ranges)['anon_huge'] // slot_size
