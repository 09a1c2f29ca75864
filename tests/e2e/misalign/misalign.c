// SPDX-License-Identifier: Apache-2.0
/*
 * LD_PRELOAD shim for QEMU (tests only): place the guest RAM's host mapping
 * at a chosen offset from a 2 MiB boundary.
 *
 * QEMU maps a memfd RAM backend (<memoryBacking><source type='memfd'/>)
 * aligned only to its page size, 4 KiB: it first reserves
 * "RAM size + 4 KiB" of PROT_NONE anonymous memory, then maps the memfd at
 * the start of that reservation (MAP_FIXED). This shim answers the first
 * such reservation of exactly TLBB_MISALIGN_LEN bytes (RAM size + 4096) with an address
 * that is exactly TLBB_MISALIGN_SHIFT bytes above a 2 MiB boundary
 * (0: aligned, 4096: off by 4 KiB), so a test gets the same guest twice,
 * aligned and misaligned, and nothing else changes. Every other mmap goes
 * straight to the kernel.
 *
 * Set through libvirt's <qemu:commandline><qemu:env>. Built by the e2e
 * tests: gcc -shared -fPIC -O2 -o misalign.so misalign.c
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PMD_SIZE (2UL << 20)

static int done;

static void *sys_mmap(void *addr, size_t len, int prot, int flags, int fd,
		      off_t off)
{
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static int is_ram_reservation(void *addr, size_t len, int prot, int flags,
			      int fd)
{
	const char *want = getenv("TLBB_MISALIGN_LEN");

	return !done && want && !addr && prot == PROT_NONE && fd == -1 &&
	       (flags & MAP_ANONYMOUS) && len == strtoull(want, NULL, 0);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	const char *s = getenv("TLBB_MISALIGN_SHIFT");
	uintptr_t shift = s ? strtoull(s, NULL, 0) % PMD_SIZE : 4096;
	uintptr_t raw, p;
	size_t total;

	if (!is_ram_reservation(addr, len, prot, flags, fd))
		return sys_mmap(addr, len, prot, flags, fd, off);
	done = 1;
	total = len + 2 * PMD_SIZE;
	raw = (uintptr_t)sys_mmap(NULL, total, prot, flags, fd, 0);
	if ((void *)raw == MAP_FAILED)
		return MAP_FAILED;
	p = ((raw + PMD_SIZE - 1) & ~(PMD_SIZE - 1)) + shift;
	if (p > raw)
		munmap((void *)raw, p - raw);
	if (raw + total > p + len)
		munmap((void *)(p + len), raw + total - (p + len));
	fprintf(stderr, "tlbb-misalign: guest RAM reservation of %zu bytes "
		"at %#lx (%#lx from a 2 MiB boundary)\n", len,
		(unsigned long)p, (unsigned long)shift);
	return (void *)p;
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
	__attribute__((alias("mmap")));
