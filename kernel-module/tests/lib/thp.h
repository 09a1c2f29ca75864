/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Transparent huge page helpers: allocate anonymous memory at a chosen
 * offset from a PMD boundary, fill and checksum it, and count the huge
 * pages that back a range from /proc/<pid>/smaps (AnonHugePages: only
 * PMD-mapped huge pages count there).
 */
#ifndef TLBB_TEST_THP_H
#define TLBB_TEST_THP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define THP_SYSFS "/sys/kernel/mm/transparent_hugepage"

/* hpage_pmd_size from sysfs (2 MiB on x86); aborts the test if absent. */
size_t thp_pmd_size(void);
/*
 * mmap len bytes of private anonymous memory starting misalign bytes after
 * a PMD boundary, madvise(MADV_HUGEPAGE) (or MADV_NOHUGEPAGE when huge is
 * 0), not yet touched.  Aborts the test on failure.
 */
void *thp_alloc(size_t len, size_t misalign, int huge);
void thp_free(void *addr, size_t len);
/* Write a pattern derived from seed to every 8-byte word. */
void thp_fill(void *addr, size_t len, uint64_t seed);
/* A checksum over the whole range (FNV-1a over 8-byte words). */
uint64_t thp_checksum(const void *addr, size_t len);
/*
 * Sum of AnonHugePages (kB) of the VMAs of pid (0: self) that intersect
 * [addr, addr + len); -errno on failure.  Callers keep whole VMAs inside
 * their range (thp_alloc does) so neighbours do not count.
 */
long thp_anon_huge_kb(pid_t pid, const void *addr, size_t len);
/* Huge pages (PMD-mapped) in the range: thp_anon_huge_kb / pmd size. */
long thp_huge_pages(pid_t pid, const void *addr, size_t len);
long thp_wait_huge(const void *addr, size_t len, long want, unsigned int ms);
/* VM_NOHUGEPAGE ("nh" in VmFlags) on this process's VMA at @addr: 1, 0, -1. */
int thp_vma_nohuge(const void *addr);
/* Write THP_SYSFS/<name> (e.g. "khugepaged/scan_sleep_millisecs"). */
int thp_sysfs_set(const char *name, const char *val);
/* Read it back (trailing newline removed); bytes or -errno. */
long thp_sysfs_get(const char *name, char *buf, size_t size);

#endif
