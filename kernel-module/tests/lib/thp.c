// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "cfs.h"
#include "tap.h"
#include "thp.h"
#include "util.h"

size_t thp_pmd_size(void)
{
	static uint64_t size;
	int err;

	if (size)
		return size;
	err = file_read_u64(THP_SYSFS "/hpage_pmd_size", &size);
	if (err || !size)
		tap_bail("read " THP_SYSFS "/hpage_pmd_size: %s",
			 strerror(err ? -err : EINVAL));
	return size;
}

void *thp_alloc(size_t len, size_t misalign, int huge)
{
	size_t pmd = thp_pmd_size(), total = len + 2 * pmd;
	uintptr_t raw, start;
	void *p;

	p = mmap(NULL, total, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		tap_bail("mmap %zu bytes: %s", total, strerror(errno));
	raw = (uintptr_t)p;
	start = ((raw + pmd - 1) & ~(uintptr_t)(pmd - 1)) + misalign;
	/* Trim both ends so the range is a VMA of its own. */
	if (start > raw)
		munmap(p, start - raw);
	if (raw + total > start + len)
		munmap((void *)(start + len), raw + total - (start + len));
	if (madvise((void *)start, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE))
		tap_bail("madvise %s: %s", huge ? "MADV_HUGEPAGE" :
			 "MADV_NOHUGEPAGE", strerror(errno));
	return (void *)start;
}

void thp_free(void *addr, size_t len)
{
	munmap(addr, len);
}

void thp_fill(void *addr, size_t len, uint64_t seed)
{
	uint64_t *w = addr;
	size_t i;

	for (i = 0; i < len / sizeof(*w); i++)
		w[i] = (seed + i) * 0x9e3779b97f4a7c15ull;
}

uint64_t thp_checksum(const void *addr, size_t len)
{
	const uint64_t *w = addr;
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < len / sizeof(*w); i++) {
		h ^= w[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

long thp_anon_huge_kb(pid_t pid, const void *addr, size_t len)
{
	uintptr_t lo = (uintptr_t)addr, hi = lo + len, s, e;
	char path[64], line[512];
	int inside = 0;
	long sum = 0, kb;
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/smaps");
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%" SCNxPTR "-%" SCNxPTR " ", &s, &e) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			inside = s < hi && e > lo;
			continue;
		}
		if (inside && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			sum += kb;
	}
	fclose(f);
	return sum;
}

long thp_huge_pages(pid_t pid, const void *addr, size_t len)
{
	long kb = thp_anon_huge_kb(pid, addr, len);

	return kb < 0 ? kb : kb / (long)(thp_pmd_size() >> 10);
}

/*
 * This process's huge pages in [addr, addr + len) (smaps), polled every
 * 20 ms until there are @want or @ms pass; the last count.
 */
long thp_wait_huge(const void *addr, size_t len, long want, unsigned int ms)
{
	unsigned int t;
	long huge = -1;

	for (t = 0; t <= ms; t += 20) {
		huge = thp_huge_pages(0, addr, len);
		if (huge == want)
			break;
		tlbb_msleep(20);
	}
	return huge;
}

int thp_sysfs_set(const char *name, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), THP_SYSFS "/%s", name);
	return file_printf(path, "%s\n", val);
}

long thp_sysfs_get(const char *name, char *buf, size_t size)
{
	char path[256];
	long n;

	snprintf(path, sizeof(path), THP_SYSFS "/%s", name);
	n = file_read(path, buf, size);
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return n;
}

/* VM_NOHUGEPAGE ("nh" in VmFlags) on the VMA holding @addr: 1, 0, -1. */
int thp_vma_nohuge(const void *addr)
{
	uintptr_t lo = (uintptr_t)addr, s, e;
	char line[512];
	int inside = 0, nh = -1;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &s, &e) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			inside = s <= lo && lo < e;
			continue;
		}
		if (inside && !strncmp(line, "VmFlags:", 8))
			nh = strstr(line, " nh") != NULL;
	}
	fclose(f);
	return nh;
}
