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

A slot the kernel refuses (``EINVAL`` on a range tlbbalance.ko holds with
``VM_NOHUGEPAGE``, ``EAGAIN``/``ENOMEM`` when no huge page can be had) is
counted and skipped. The kernel needs ``CAP_SYS_NICE`` and ptrace access
to the process.
"""

import ctypes
import errno
import os
import platform
import time

MADV_COLLAPSE = 25
# The generic syscall table's number, the same on x86_64 and arm64.
SYS_PROCESS_MADVISE = {'x86_64': 440, 'aarch64': 440}


class CollapseError(Exception):
    """The collapse cannot go on at all (no process, no permission)."""


class Result:
    """What one :func:`collapse` did."""

    def __init__(self):
        self.slots = 0          # slots asked
        self.collapsed = 0      # calls that succeeded (huge now, or before)
        self.refused = {}       # errno name -> slots
        self.busy_s = 0.0       # time inside the calls
        self.total_s = 0.0      # wall time, pauses included
        self.stopped_at_limit = False

    def bytes_per_s(self, slot_size):
        return self.slots * slot_size / self.total_s if self.total_s else 0

    def as_dict(self):
        return {'slots': self.slots, 'collapsed': self.collapsed,
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


def collapse(pid, ranges, slot_size, limit=None, count=None, cpu_share=1.0,
             clock=time.monotonic, sleep=time.sleep, madvise=None):
    """Collapse the slots of ``ranges`` of process ``pid``; a :class:`Result`.

    ``limit``: the most huge pages the ranges may hold (None: no limit),
    with ``count()`` returning how many they hold now (needed with a
    limit). ``cpu_share``: 0 < share <= 1 of one CPU. ``madvise(pidfd,
    addr, length, advice) -> errno or 0`` is the system call (tests give
    their own). Raises :class:`CollapseError` when the process is gone,
    the caller may not advise it, or the kernel has no process_madvise.
    """
    if not 0 < cpu_share <= 1:
        raise ValueError('cpu_share %r: not in (0, 1]' % (cpu_share,))
    if limit is not None and count is None:
        raise ValueError('a limit needs count()')
    madvise = madvise or _syscall_madvise()
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
            t = clock()
            err = madvise(pidfd, addr, slot_size, MADV_COLLAPSE)
            res.busy_s += clock() - t
            res.slots += 1
            if not err:
                res.collapsed += 1
            elif err in (errno.ESRCH, errno.EPERM, errno.ENOSYS,
                         errno.EBADF):
                raise CollapseError('pid %d: process_madvise(MADV_COLLAPSE)'
                                    ': %s' % (pid, os.strerror(err)))
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


def smaps_huge(pid, ranges, slot_size):
    """Huge pages of ``pid`` in ``ranges``: AnonHugePages of every VMA the
    ranges overlap (smaps counts per VMA: one reaching beyond the ranges
    counts whole; QEMU's guest RAM is a VMA of its own)."""
    total_kb = 0
    lo = hi = 0
    with open('/proc/%d/smaps' % pid) as f:
        for line in f:
            head = line.split(None, 1)[0]
            if '-' in head and not head.endswith(':'):
                a, b = head.split('-')
                lo, hi = int(a, 16), int(b, 16)
            elif head == 'AnonHugePages:':
                kb = int(line.split()[1])
                if kb and any(h < hi and lo < h + n for h, n in ranges):
                    total_kb += kb
    return total_kb * 1024 // slot_size
