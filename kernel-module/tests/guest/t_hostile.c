// SPDX-License-Identifier: GPL-2.0
/*
 * t_hostile: the module against a hostile local user and a process that
 * moves or protects its own memory (docs/kernel-module.md).
 *
 *  - per-VM files are root's only: modes 0600 / 0400, and user
 *    nobody can open none of them (pid, ranges, vcpu_tids, status, stats).
 *  - a monitored or balanced VM cannot be removed: rmdir fails
 *    with EBUSY as uid 0 without CAP_SYS_ADMIN (configfs cannot check
 *    capabilities on rmdir: the directory is pinned while the module acts)
 *    and EACCES as nobody; the VM and its hold stay. root too gets EBUSY;
 *    after "off" (CAP_SYS_ADMIN) rmdir works.
 *  - the limiter flags the region VM_NOHUGEPAGE, the process
 *    mremaps it elsewhere; mode off (and off + rmdir) must clear the flag
 *    at the new address, and the memory must get huge pages again
 *    (MADV_COLLAPSE, else khugepaged).
 *  - a balanced range made PROT_NONE cannot be split (EFAULT):
 *    status reports the huge pages over the limit (limiter_stuck), and
 *    that clears once the range is accessible again and gets split.
 *
 * tlbb-test-timeout: 240
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cfs.h"
#include "priv.h"
#include "tap.h"
#include "thp.h"
#include "tlbb_defs.h"
#include "util.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE	25
#endif

#define VM		"hostile"
#define PAGES		4
#define MCF_HUGE	2180000
#define MCF_SMALL	400

static size_t len;

static long wait_huge(const void *addr, long want, unsigned int ms)
{
	return thp_wait_huge(addr, len, want, ms);
}

/*
 * Make @p's split memory huge again as the module's docs promise once the
 * hold is lifted: MADV_COLLAPSE, else khugepaged (scanning every 10 ms
 * here) within 20 s. Neither works on a VMA with VM_NOHUGEPAGE. Huge pages.
 */
static long rehuge(char *p)
{
	long huge;
	size_t i;
	int err;

	/*
	 * After a fork every PTE is write-protected (COW) and a range without
	 * a writable PTE is never collapsed (SCAN_PAGE_RO): write each page
	 * back to itself first.
	 */
	for (i = 0; i < len; i += 4096)
		((volatile char *)p)[i] = ((volatile char *)p)[i];
	err = madvise(p, len, MADV_COLLAPSE);
	huge = thp_huge_pages(0, p, len);

	if (huge != PAGES) {
		tap_diag("MADV_COLLAPSE: %s, %ld huge, nh %d; waiting for khugepaged",
			 err ? strerror(errno) : "ok", huge, thp_vma_nohuge(p));
		huge = wait_huge(p, PAGES, 20000);
	}
	return huge;
}

/* A region of PAGES huge pages, filled; bails out if THP does not back it. */
static char *huge_region(uint64_t seed)
{
	char *p = thp_alloc(len, 0, 1);
	long huge;

	thp_fill(p, len, seed);
	huge = wait_huge(p, PAGES, 10000);
	tap_require(huge == PAGES, "%d huge pages back a fresh region (%ld)",
		    PAGES, huge);
	return p;
}

/* Register this process with @p, fast settings, limit 0 once balanced. */
static void register_region(const char *p)
{
	int err;

	err = tlbb_set(VM, "pid", "%d\n", getpid());
	err = err ?: tlbb_set(VM, "vcpu_tids", "%d\n", gettid());
	err = err ?: tlbb_set(VM, "ranges", "%p 0x%zx 0x40000000\n", p, len);
	err = err ?: tlbb_set_fast(VM, PAGES);
	err = err ?: tlbb_inject(VM, MCF_HUGE, MCF_SMALL);
	tap_require(!err, "register this process: %s", strerror(-err));
}

/* Run @fn in a child with less privilege; its exit status, -1 if killed. */
static int as_child(int (*drop)(void), int (*fn)(void))
{
	pid_t p = fork();
	int status;

	if (!p)
		_exit(drop() ? 99 : fn());
	waitpid(p, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static const char *const vm_files[] = {
	"pid", "vcpu_tids", "ranges", "mode", "commit", "status",
	"huge_pages", "huge_limit", "cpus_allowed", "samples",
};

static int nobody_reads(void)
{
	unsigned int i;
	int n = 0;

	for (i = 0; i < sizeof(vm_files) / sizeof(vm_files[0]); i++) {
		int fd = open(tlbb_path(VM, vm_files[i]), O_RDONLY);

		if (fd >= 0 || errno != EACCES) {
			printf("# nobody: open %s: %s\n", vm_files[i],
			       fd >= 0 ? "opened" : strerror(errno));
			n++;
		}
		if (fd >= 0)
			close(fd);
	}
	return n;
}

static void test_modes(void)
{
	unsigned int i;
	struct stat st;
	int n = 0;

	for (i = 0; i < sizeof(vm_files) / sizeof(vm_files[0]); i++) {
		const char *f = vm_files[i];
		/* the writable ones: 0600; statistics and status: 0400 */
		int rw = !strcmp(f, "pid") || !strcmp(f, "vcpu_tids") ||
			 !strcmp(f, "ranges") || !strcmp(f, "mode") ||
			 !strcmp(f, "samples") || !strcmp(f, "commit");
		mode_t want = rw ? 0600 : 0400;

		if (stat(tlbb_path(VM, f), &st) || (st.st_mode & 07777) != want ||
		    st.st_uid != 0) {
			tap_diag("%s: mode %o uid %d, want %o uid 0", f,
				 st.st_mode & 07777, st.st_uid, want);
			n++;
		}
	}
	tap_ok(!n, "per-VM files are 0600 (writable) / 0400 (read-only), owned by root");
	tap_ok(as_child(priv_become_nobody, nobody_reads) == 0,
	       "user nobody cannot open pid, vcpu_tids, ranges, status or any statistic (EACCES)");
}

static int rmdir_vm(void)
{
	return -tlbb_vm_remove(VM);
}

static void test_rmdir(void)
{
	char mode[32], *p = huge_region(11);
	int err;

	err = tlbb_set(VM, "ranges", "%p 0x%zx 0x40000000\n", p, len);
	err = err ?: tlbb_set_mode(VM, TLBB_MODE_BALANCE);
	tap_require(!err, "a fresh region, mode balance: %s", strerror(-err));
	tap_ok(wait_huge(p, 0, 5000) == 0 && thp_vma_nohuge(p) == 1,
	       "balance, floor 0: every huge page split, VMA held");

	err = as_child(priv_drop_sys_admin, rmdir_vm);
	tap_ok(err == EBUSY, "uid 0 without CAP_SYS_ADMIN: rmdir of a balanced VM refused (%s)",
	       err > 0 ? strerror(err) : err ? "killed" : "removed");
	err = as_child(priv_become_nobody, rmdir_vm);
	tap_ok(err == EACCES, "nobody: rmdir refused (%s)",
	       err > 0 ? strerror(err) : err ? "killed" : "removed");
	tlbb_get(VM, "mode", mode, sizeof(mode));
	tap_ok(!strcmp(mode, tlbb_mode_names[TLBB_MODE_BALANCE]) &&
	       thp_vma_nohuge(p) == 1 &&
	       thp_huge_pages(0, p, len) == 0,
	       "the VM is still balanced and its hold in force (mode %s)",
	       mode);
	tap_ok(tlbb_vm_remove(VM) == -EBUSY,
	       "root too: rmdir of an active VM is EBUSY (switch it off first)");
	tap_ok(!tlbb_set_mode(VM, TLBB_MODE_MONITOR) &&
	       tlbb_vm_remove(VM) == -EBUSY &&
	       !tlbb_set_mode(VM, TLBB_MODE_BALANCE),
	       "balance -> monitor -> balance: pinned throughout");
	tap_require(!tlbb_set_mode(VM, TLBB_MODE_OFF), "mode off");
}

/* mremap the held region, then mode off / rmdir. */
static char *test_mremap(char *p)
{
	char *dst, *q;
	uint64_t sum;
	long huge;
	int err;

	sum = thp_checksum(p, len);
	tap_require(!tlbb_set_mode(VM, TLBB_MODE_BALANCE), "mode balance");
	huge = wait_huge(p, 0, 5000);
	tap_ok(huge == 0 && thp_vma_nohuge(p) == 1,
	       "limit 0: split and held (%ld huge, nh %d)", huge, thp_vma_nohuge(p));
	dst = thp_alloc(len, 0, 1);
	q = mremap(p, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	tap_require(q == dst, "mremap the held region elsewhere: %s",
		    strerror(errno));
	tap_ok(thp_vma_nohuge(q) == 1, "the moved VMA carries the limiter's VM_NOHUGEPAGE");
	tap_ok(thp_checksum(q, len) == sum, "contents unchanged by the move");
	tlbb_msleep(100);	/* a few ticks on the stale range */
	tap_require(!tlbb_set_mode(VM, TLBB_MODE_OFF), "mode off");
	tap_ok(thp_vma_nohuge(q) == 0,
	       "mode off clears VM_NOHUGEPAGE at the new address (nh %d)",
	       thp_vma_nohuge(q));
	huge = rehuge(q);
	tap_ok(huge == PAGES,
	       "the moved memory gets huge pages again (%ld of %d)", huge,
	       PAGES);

	/* once more, ended by rmdir (allowed after off) */
	err = tlbb_set(VM, "ranges", "%p 0x%zx 0x40000000\n", q, len);
	err = err ?: tlbb_set_mode(VM, TLBB_MODE_BALANCE);
	tap_require(!err, "register the moved region: %s", strerror(-err));
	huge = wait_huge(q, 0, 5000);
	dst = thp_alloc(len, 0, 1);
	p = mremap(q, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	tap_require(p == dst, "mremap again: %s", strerror(errno));
	tap_ok(huge == 0 && thp_vma_nohuge(p) == 1, "held and moved again");
	err = tlbb_set_mode(VM, TLBB_MODE_OFF);
	err = err ?: tlbb_vm_remove(VM);
	tap_ok(!err && thp_vma_nohuge(p) == 0,
	       "off + rmdir: no VM_NOHUGEPAGE left (nh %d)", thp_vma_nohuge(p));
	huge = rehuge(p);
	tap_ok(huge == PAGES, "and it gets huge pages again (%ld)", huge);
	tap_require(!tlbb_vm_create(VM), "mkdir vms/" VM " again");
	register_region(p);
	return p;
}

static int status_num(const char *key, long long *v)
{
	char buf[64];
	int err = tlbb_status(VM, key, buf, sizeof(buf));

	if (!err)
		*v = strtoll(buf, NULL, 10);
	return err;
}

/* PROT_NONE, the splits fail, status says so. */
static void test_protnone(void)
{
	long long stuck = -1, lerr = 0;
	char *p = huge_region(16);
	unsigned int t;
	long huge;

	tap_require(!tlbb_set(VM, "ranges", "%p 0x%zx 0x40000000\n", p, len),
		    "ranges: a fresh region");
	tap_require(!mprotect(p, len, PROT_NONE), "mprotect PROT_NONE");
	tap_require(!tlbb_set_mode(VM, TLBB_MODE_BALANCE), "mode balance");
	for (t = 0; t < 5000; t += 20) {
		if (!status_num("limiter_stuck", &stuck) && stuck == PAGES)
			break;
		tlbb_msleep(20);
	}
	status_num("limiter_error", &lerr);
	/* smaps leaves PROT_NONE huge pages out of AnonHugePages */
	huge = tlbb_get_u64(VM, "huge_pages");
	tap_ok(stuck == PAGES && lerr == -EFAULT && huge == PAGES &&
	       tlbb_get_u64(VM, "huge_limit") == 0,
	       "PROT_NONE range: status limiter_stuck %lld (want %d), limiter_error %lld (EFAULT), huge_pages %ld over limit 0",
	       stuck, PAGES, lerr, huge);
	tap_require(!mprotect(p, len, PROT_READ | PROT_WRITE), "mprotect RW");
	huge = wait_huge(p, 0, 5000);
	status_num("limiter_stuck", &stuck);
	tap_ok(huge == 0 && stuck == 0,
	       "accessible again: split, limiter_stuck %lld", stuck);
	tap_require(!tlbb_set_mode(VM, TLBB_MODE_OFF), "mode off");
}

int main(void)
{
	struct stat root;
	char *p;

	setvbuf(stdout, NULL, _IOLBF, 0);
	tap_require(!thp_sysfs_set("khugepaged/scan_sleep_millisecs", "10") &&
		    !thp_sysfs_set("khugepaged/alloc_sleep_millisecs", "10"),
		    "khugepaged scans every 10 ms");
	/*
	 * The initramfs's "/" is 0700 (a mktemp directory packed by cpio): no
	 * other user could even reach configfs. Open it up as a real host's
	 * root is while nobody is tested, so only the module's own modes
	 * stand between nobody and the files.
	 */
	tap_require(!stat("/", &root) && !chmod("/", 0755), "chmod 0755 /");
	len = PAGES * thp_pmd_size();
	p = huge_region(7);
	tap_require(!tlbb_vm_create(VM), "mkdir vms/" VM);
	register_region(p);

	/* the forks of test_rmdir() come last: they write-protect the PTEs */
	test_modes();
	test_mremap(p);
	test_protnone();
	test_rmdir();

	tlbb_inject_off(VM);
	tap_ok(!tlbb_vm_remove(VM), "rmdir vms/" VM " after mode off");
	chmod("/", root.st_mode & 07777);
	thp_sysfs_set("khugepaged/scan_sleep_millisecs", "10000");
	thp_sysfs_set("khugepaged/alloc_sleep_millisecs", "60000");
	return tap_done();
}
