// SPDX-License-Identifier: GPL-2.0
/*
 * t_kvm_heat: the heat order (split_order 2) for a real KVM guest, whose
 * accesses go through stage 2 (NPT), not through the host's page table.
 * tlbb-test-timeout: 400
 * tlbb-test-arch: x86_64 (a 32-bit x86 payload; the arm64 guest of t_kvm_stage2_arm64 writes its whole slot)
 *
 * A one-vCPU VM (nested KVM in the TCG test guest) has a 128 MiB memslot,
 * 64 huge pages, THP-backed and aligned (each huge page its own VMA, so
 * smaps tells which are huge). Its payload keeps writing every 4 KiB page
 * of 8 of them, the hot set, scattered with six in the upper half (the
 * address order splits from the top); it exits with an "out" after each
 * pass (each exit also ends QEMU's cached translations, as a busy guest's
 * would) and a thread of this process runs it again until told to stop.
 * The other 56 are never touched after the fill.
 *
 * 1. sampled: the module's own accessed-bit sampling (split_order 2),
 *    sampled ten times over, then the paper's mcf load injected with the
 *    floor 8 and one step from 64: N_hl = 8. The guest's writes set
 *    accessed bits in the NPT, not in the host's PMDs: every slot looks
 *    cold, the order is the address order's, and few hot pages stay huge
 *    (the control: fewer than 7 of 8).
 * 2. fed from DAMON (Linux 6.12: CONFIG_DAMON_VADDR, CONFIG_DAMON_SYSFS):
 *    a kdamond watches this process's memslot with the fixed-range
 *    virtual-address operations, one region per huge page; its aging
 *    clears and tests young through the MMU notifier, so KVM's stage-2
 *    accessed bits. A "stat" scheme reports every region; the test sums
 *    each region's accesses over a few aggregation windows and writes them
 *    to the VM's heat attribute. Then the same limit: at least 7 of the 8
 *    hot pages stay huge. Without DAMON (6.1, 5.10) this part is skipped
 *    with that reason: such a host keeps the blind order of part 1.
 *
 * Cost: the kdamond's CPU time (/proc/<pid>/stat) while it watched the
 * 128 MiB, per GiB per second, as a "# BENCH kvmheat" line (TCG:
 * emulated, far above a native host's).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25	/* Linux 6.1 */
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434	/* Linux 5.3 */
#endif
#ifndef SYS_process_madvise
#define SYS_process_madvise 440	/* Linux 5.10 */
#endif

#include "cfs.h"
#include "kvm_util.h"
#include "tap.h"
#include "thp.h"
#include "tlbb_defs.h"
#include "util.h"

#define VM		"kvmheat"
#define CODE_GPA	0x0ul
#define CODE_SIZE	0x10000ul
#define ENTRY		0x1000ul
#define TABLE		0x2000ul	/* the hot pages' GPAs, for the payload */
#define SLOT_GPA	0x40000000ul
#define NPAGES		64
#define NHOT		8
#define LIMIT		8
#define DONE_PORT	0x10
#define MCF_HUGE	2180000
#define MCF_SMALL	400
#define COST		"/sys/kernel/debug/tlbbalance/tick_cost"
#define DAMON		"/sys/kernel/mm/damon/admin/kdamonds"
#define KD		DAMON "/0"
#define CTX		KD "/contexts/0"
#define SCHEME		CTX "/schemes/0"
#define DAMON_STAT	"/sys/module/damon_stat/parameters/enabled"
#define SAMPLE_US	5000
#define AGGR_US		100000

/* scattered; address order (highest first) would keep only page 3 */
static const int hot[NHOT] = { 3, 13, 22, 30, 38, 47, 55, 62 };

/*
 * esi = table of hot-page GPAs, edx = their number, ebx = marker:
 *   0: mov  eax, [esi]        8b 06
 *      mov  ecx, 512          b9 00 02 00 00
 *   7: mov  [eax], ebx        89 18
 *      add  eax, 0x1000       05 00 10 00 00
 *      dec  ecx               49
 *      jnz  7                 75 f6
 *      add  esi, 4            83 c6 04
 *      dec  edx               4a
 *      jnz  0                 75 e9
 *      out  0x10, al          e6 10
 *      hlt                    f4
 */
static const uint8_t guest_code[] = {
	0x8b, 0x06,
	0xb9, 0x00, 0x02, 0x00, 0x00,
	0x89, 0x18,
	0x05, 0x00, 0x10, 0x00, 0x00,
	0x49,
	0x75, 0xf6,
	0x83, 0xc6, 0x04,
	0x4a,
	0x75, 0xe9,
	0xe6, DONE_PORT,
	0xf4,
};

static size_t pmd, len;
static uint8_t *mem;
static void *code;
static struct kvm_vm *kvm;
static struct kvm_vcpu *vcpu;
static int running = 1, vcpu_tid;
static unsigned long passes, bad_exits;

static int is_hot(int i)
{
	int k;

	for (k = 0; k < NHOT; k++)
		if (hot[k] == i)
			return 1;
	return 0;
}

static void *vcpu_loop(void *arg)
{
	struct kvm_regs regs;

	(void)arg;
	__atomic_store_n(&vcpu_tid, gettid(), __ATOMIC_RELEASE);
	while (__atomic_load_n(&running, __ATOMIC_RELAXED)) {
		memset(&regs, 0, sizeof(regs));
		regs.rip = ENTRY;
		regs.rsi = TABLE;
		regs.rdx = NHOT;
		regs.rbx = 0x4ea70000u + (passes & 0xffff);
		regs.rflags = 2;
		kvm_ioctl(vcpu->fd, KVM_SET_REGS, &regs, "KVM_SET_REGS");
		kvm_vcpu_run(vcpu);
		if (vcpu->run->exit_reason == KVM_EXIT_IO &&
		    vcpu->run->io.port == DONE_PORT)
			__atomic_add_fetch(&passes, 1, __ATOMIC_RELAXED);
		else if (__atomic_add_fetch(&bad_exits, 1,
					    __ATOMIC_RELAXED) > 100)
			break;
	}
	return NULL;
}

static void setup(void)
{
	uint32_t *table;
	int i;

	pmd = thp_pmd_size();
	tap_require(pmd == 2ul << 20, "2 MiB huge pages (%zu)", pmd);
	len = NPAGES * pmd;
	mem = thp_alloc(len, 0, 1);
	for (i = 1; i < NPAGES; i += 2)
		tap_require(!madvise(mem + i * pmd, pmd, MADV_DONTFORK),
			    "MADV_DONTFORK page %d: %s", i, strerror(errno));
	thp_fill(mem, len, 26);
	tap_require(thp_wait_huge(mem, len, NPAGES, 10000) == NPAGES,
		    "setup: %d huge pages back the slot", NPAGES);
	code = mmap(NULL, CODE_SIZE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	tap_require(code != MAP_FAILED, "mmap guest code");
	memcpy((uint8_t *)code + ENTRY, guest_code, sizeof(guest_code));
	table = (uint32_t *)((uint8_t *)code + TABLE);
	for (i = 0; i < NHOT; i++)
		table[i] = SLOT_GPA + hot[i] * pmd;
	kvm = kvm_vm_create();
	kvm_vm_set_memslot(kvm, 0, CODE_GPA, code, CODE_SIZE);
	kvm_vm_set_memslot(kvm, 1, SLOT_GPA, mem, len);
	vcpu = kvm_vcpu_create(kvm, 0);
	kvm_vcpu_setup_pm32(vcpu);
	tap_diag("slot: HVA %p, GPA %#lx, %d huge pages, hot", (void *)mem,
		 SLOT_GPA, NPAGES);
}

static uint64_t cost_field(const char *key)
{
	char buf[512], *p;
	size_t klen = strlen(key);

	if (file_read(COST, buf, sizeof(buf)) <= 0)
		return 0;
	for (p = buf; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
		if (!strncmp(p, key, klen) && p[klen] == ' ')
			return strtoull(p + klen + 1, NULL, 10);
	return 0;
}

/* Register the slot in balance mode, heat order, not yet loaded. */
static void vm_register(const char *what)
{
	int err;

	err = tlbb_vm_create(VM);
	err = err ?: tlbb_set(VM, "pid", "%d\n", getpid());
	err = err ?: tlbb_set(VM, "vcpu_tids", "%d\n", vcpu_tid);
	err = err ?: tlbb_set(VM, "ranges", "%p 0x%zx 0x%lx\n", mem, len,
			      SLOT_GPA);
	err = err ?: tlbb_set_fast(VM, NPAGES - LIMIT);
	err = err ?: tlbb_set(VM, "floor_pages", "%d\n", LIMIT);
	err = err ?: tlbb_set(VM, "split_order", "2\n");
	err = err ?: tlbb_set(VM, "heat_window_ms", "10\n");
	err = err ?: tlbb_set_mode(VM, TLBB_MODE_BALANCE);
	tap_require(!err, "%s: register in balance mode, split_order 2: %s",
		    what, strerror(-err));
}

/* Inject the mcf load, wait for N_hl = LIMIT; hot pages left huge. */
static int limit_and_count(const char *what)
{
	int i, hot_huge = 0, cold_huge = 0;
	double t0;
	long huge;

	tap_require(!tlbb_inject(VM, MCF_HUGE, MCF_SMALL), "inject mcf load");
	t0 = tlbb_now_s();
	while (tlbb_get_u64(VM, "huge_limit") != LIMIT &&
	       tlbb_now_s() - t0 < 30)
		tlbb_msleep(20);
	huge = thp_wait_huge(mem, len, LIMIT, 20000);
	tlbb_inject_off(VM);
	tap_ok(tlbb_get_u64(VM, "huge_limit") == LIMIT && huge == LIMIT,
	       "%s: N_hl = %d and %ld huge pages in smaps", what, LIMIT,
	       huge);
	for (i = 0; i < NPAGES; i++) {
		if (thp_huge_pages(0, mem + i * pmd, pmd) != 1)
			continue;
		if (is_hot(i))
			hot_huge++;
		else
			cold_huge++;
	}
	tap_diag("%s: hot pages still huge %d of %d, cold %d of %d (guest passes %lu)",
		 what, hot_huge, NHOT, cold_huge, NPAGES - NHOT,
		 __atomic_load_n(&passes, __ATOMIC_RELAXED));
	return hot_huge;
}

static void vm_unregister(const char *what)
{
	tap_ok(!tlbb_set_mode(VM, TLBB_MODE_OFF) && !tlbb_vm_remove(VM),
	       "%s: mode off, rmdir", what);
}

/*
 * MADV_COLLAPSE as tlbbalance collapse (nova_tlbbalance/collapse.py) asks
 * for it: process_madvise(2) through a pidfd, one huge page a call; the
 * first error, or 0.
 */
static int process_collapse(void)
{
	int pidfd = syscall(SYS_pidfd_open, getpid(), 0), err = 0;
	struct iovec iov;
	size_t off;

	if (pidfd < 0)
		return errno;
	for (off = 0; off < len && !err; off += pmd) {
		iov.iov_base = mem + off;
		iov.iov_len = pmd;
		if (syscall(SYS_process_madvise, pidfd, &iov, 1, MADV_COLLAPSE,
			    0) < 0)
			err = errno;
	}
	close(pidfd);
	return err;
}

/* Limit lifted: collapse the slot again (6.1+), or wait for khugepaged. */
static void rehuge(const char *what)
{
	long huge, split = NPAGES - thp_huge_pages(0, mem, len);
	double t0 = tlbb_now_s(), secs;
	int ret = process_collapse();

	secs = tlbb_now_s() - t0;
	if (!ret && split > 0)
		tap_diag("BENCH collapse pages %ld seconds %.3f s_per_gib %.2f (process_madvise MADV_COLLAPSE over the slot after the limit, one huge page a call; khugepaged's defaults, 4096 pages every 10 s: %.0f s per GiB; TCG guest)",
			 split, secs, secs * 512 / split,
			 (1ul << 30) / 4096.0 / sysconf(_SC_PAGESIZE) * 10);
	if (ret)
		tap_diag("process_madvise(MADV_COLLAPSE): %s%s", strerror(ret),
			 ret == EINVAL ? " (before 6.1): khugepaged" : "");
	if (ret) {
		thp_sysfs_set("khugepaged/scan_sleep_millisecs", "10");
		thp_sysfs_set("khugepaged/alloc_sleep_millisecs", "10");
	}
	huge = thp_wait_huge(mem, len, NPAGES, 30000);
	thp_sysfs_set("khugepaged/scan_sleep_millisecs", "10000");
	thp_sysfs_set("khugepaged/alloc_sleep_millisecs", "60000");
	tap_ok(huge == NPAGES, "%s: all %d pages huge again (%ld)", what,
	       NPAGES, huge);
}

/* Part 1: the module's own sampling. Returns the hot pages kept. */
static int sampled(void)
{
	uint64_t v0 = cost_field("heat_pmds"), v = v0;
	double t0;
	int kept;

	vm_register("sampled");
	/* ten samples of each slot, each with its arm: 20 visits a slot */
	t0 = tlbb_now_s();
	while (v - v0 < 20 * NPAGES && tlbb_now_s() - t0 < 30) {
		tlbb_msleep(20);
		v = cost_field("heat_pmds");
	}
	tap_ok(v - v0 >= 20 * NPAGES,
	       "sampled: ten samples of each of the %d slots (%" PRIu64
	       " visits)", NPAGES, v - v0);
	kept = limit_and_count("sampled");
	tap_ok(kept < NHOT - 1,
	       "sampled: the host's accessed bits do not see the guest's writes through stage 2 (%d of %d hot pages kept, the address order's %d)",
	       kept, NHOT, 1);
	vm_unregister("sampled");
	rehuge("sampled");
	return kept;
}

/* ---- DAMON through its sysfs interface ---- */

static int dset(const char *path, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int dset(const char *path, const char *fmt, ...)
{
	char buf[128];
	va_list ap;
	int err;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	err = file_printf(path, "%s", buf);
	if (err)
		tap_diag("write %s to %s: %s", buf, path, strerror(-err));
	return err;
}

static int damon_start(unsigned int sample_us, unsigned int aggr_us)
{
	char path[256];
	int err, i;

	err = dset(DAMON "/nr_kdamonds", "1\n");
	err = err ?: dset(KD "/contexts/nr_contexts", "1\n");
	err = err ?: dset(CTX "/operations", "fvaddr\n");
	err = err ?: dset(CTX "/monitoring_attrs/intervals/sample_us", "%u\n",
			  sample_us);
	err = err ?: dset(CTX "/monitoring_attrs/intervals/aggr_us", "%u\n",
			  aggr_us);
	err = err ?: dset(CTX "/monitoring_attrs/nr_regions/min", "%d\n",
			  NPAGES);
	err = err ?: dset(CTX "/monitoring_attrs/nr_regions/max", "%d\n",
			  NPAGES);
	err = err ?: dset(CTX "/targets/nr_targets", "1\n");
	err = err ?: dset(CTX "/targets/0/pid_target", "%d\n", getpid());
	err = err ?: dset(CTX "/targets/0/regions/nr_regions", "%d\n",
			  NPAGES);
	for (i = 0; !err && i < NPAGES; i++) {
		snprintf(path, sizeof(path), CTX "/targets/0/regions/%d/start",
			 i);
		err = dset(path, "%lu\n", (unsigned long)(mem + i * pmd));
		snprintf(path, sizeof(path), CTX "/targets/0/regions/%d/end",
			 i);
		err = err ?: dset(path, "%lu\n",
				  (unsigned long)(mem + (i + 1) * pmd));
	}
	/* a "stat" scheme over every region: its tried regions report all */
	err = err ?: dset(CTX "/schemes/nr_schemes", "1\n");
	err = err ?: dset(SCHEME "/action", "stat\n");
	err = err ?: dset(SCHEME "/access_pattern/sz/max", "%lu\n", -1ul);
	err = err ?: dset(SCHEME "/access_pattern/nr_accesses/max", "%u\n",
			  -1u);
	err = err ?: dset(SCHEME "/access_pattern/age/max", "%u\n", -1u);
	/* EBUSY while an exclusive kdamond (DAMON_STAT) still stops */
	if (err)
		return err;
	for (i = 0; i < 100; i++) {
		err = file_printf(KD "/state", "on\n");
		if (err != -EBUSY)
			break;
		tlbb_msleep(20);
	}
	if (err)
		tap_diag("write on to " KD "/state: %s", strerror(-err));
	return err;
}

/*
 * DAMON_STAT (7.x, on by default in Debian's 7.2) runs its kdamond
 * exclusive: no other DAMON context starts beside it, so a feeder must
 * turn it off (damon_stat.enabled). Whether it was on.
 */
static bool damon_stat_off(void)
{
	char buf[8] = "";

	if (file_read(DAMON_STAT, buf, sizeof(buf)) <= 0 || buf[0] != 'Y')
		return false;
	tap_diag("DAMON_STAT's kdamond runs exclusive: damon_stat.enabled=N for the test");
	return !file_printf(DAMON_STAT, "N\n");
}

static void damon_stop(void)
{
	dset(KD "/state", "off\n");
	dset(DAMON "/nr_kdamonds", "0\n");
}

/* The kdamond's CPU time so far, in seconds (utime + stime). */
static double kdamond_cpu_s(void)
{
	char path[64], buf[1024], *p;
	unsigned long ut, st;
	uint64_t pid;

	if (file_read_u64(KD "/pid", &pid) || !pid)
		return -1;
	snprintf(path, sizeof(path), "/proc/%" PRIu64 "/stat", pid);
	if (file_read(path, buf, sizeof(buf)) <= 0)
		return -1;
	p = strrchr(buf, ')');
	/* after ")": state ppid pgrp session tty tpgid flags minflt cminflt
	 * majflt cmajflt utime stime */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			 &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / sysconf(_SC_CLK_TCK);
}

/*
 * One snapshot of the regions: add each region's accesses (of the last
 * aggregation window) to the huge page it lies in (the hottest part of a
 * page counts, should DAMON have split a region). Regions read.
 */
static int damon_snapshot(unsigned int acc[NPAGES])
{
	unsigned int snap[NPAGES] = { 0 };
	char path[512];
	uint64_t start, n;
	unsigned int i, nr = 0;
	DIR *d;
	struct dirent *e;

	if (dset(KD "/state", "update_schemes_tried_regions\n"))
		return -1;
	d = opendir(SCHEME "/tried_regions");
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), SCHEME "/tried_regions/%s/start",
			 e->d_name);
		if (file_read_u64(path, &start))
			continue;
		snprintf(path, sizeof(path),
			 SCHEME "/tried_regions/%s/nr_accesses", e->d_name);
		if (file_read_u64(path, &n))
			continue;
		if (start < (uintptr_t)mem || start >= (uintptr_t)mem + len)
			continue;
		i = (start - (uintptr_t)mem) / pmd;
		if (n > snap[i])
			snap[i] = n;
		nr++;
	}
	closedir(d);
	for (i = 0; i < NPAGES; i++)
		acc[i] += snap[i];
	return nr;
}

/* Write the accumulated accesses as heat (0..255), one line a page. */
static int feed(const unsigned int acc[NPAGES])
{
	char buf[NPAGES * 48];
	size_t n = 0;
	int i;

	for (i = 0; i < NPAGES; i++)
		n += snprintf(buf + n, sizeof(buf) - n, "%p 0x%zx %u\n",
			      mem + i * pmd, pmd,
			      acc[i] > 255 ? 255 : acc[i]);
	return file_write_buf(tlbb_path(VM, "heat"), buf, n);
}

#ifdef TLBB_BENCH
/*
 * kernel-module/bench/heat-damon.sh: the kdamond's CPU time over the
 * slot at three sampling intervals (20 samples per aggregation window),
 * 5 s each, and whether the hot pages still stand out.
 */
static void bench_damon(void)
{
	static const unsigned int us[] = { 5000, 20000, 100000 };
	unsigned int acc[NPAGES], k;
	int i, hot_seen, cold_seen;
	double t0, c0, c1, secs;

	for (k = 0; k < sizeof(us) / sizeof(us[0]); k++) {
		memset(acc, 0, sizeof(acc));
		if (damon_start(us[k], 20 * us[k])) {
			damon_stop();
			tap_ok(0, "bench: kdamond with %u us samples", us[k]);
			continue;
		}
		tlbb_msleep(1000);
		t0 = tlbb_now_s();
		c0 = kdamond_cpu_s();
		while (tlbb_now_s() - t0 < 5) {
			tlbb_msleep(20 * us[k] / 1000);
			damon_snapshot(acc);
		}
		c1 = kdamond_cpu_s();
		secs = tlbb_now_s() - t0;
		damon_stop();
		hot_seen = cold_seen = 0;
		for (i = 0; i < NPAGES; i++) {
			if (is_hot(i))
				hot_seen += acc[i] > 0;
			else
				cold_seen += acc[i] > 0;
		}
		tap_diag("BENCH damon sample_us %u aggr_us %u cpu_s %.3f wall_s %.2f cpu_per_gib_per_s %.4f hot_seen %d/%d cold_seen %d/%d",
			 us[k], 20 * us[k], c1 - c0, secs,
			 (c1 - c0) / secs / ((double)len / (1ul << 30)),
			 hot_seen, NHOT, cold_seen, NPAGES - NHOT);
		tap_ok(c0 >= 0 && c1 >= 0, "bench: kdamond with %u us samples",
		       us[k]);
	}
}
#endif

/* Part 2: heat from DAMON. */
static void damon(int before)
{
	unsigned int acc[NPAGES] = { 0 };
	double t0, c0, c1, secs;
	int i, rounds, nr, good = 0, most = 0, err, kept, hot_seen = 0;
	int cold_seen = 0;
	struct stat st;
	char buf[64];
	bool stat_was_on;

	if (stat(DAMON, &st)) {
		tap_skip("no DAMON sysfs interface in this kernel (CONFIG_DAMON_SYSFS, CONFIG_DAMON_VADDR: Debian's 6.12 has both, 6.1 neither): a guest's heat stays as blind as in part 1",
			 "fed from DAMON: at least %d of %d hot pages stay huge",
			 NHOT - 1, NHOT);
		return;
	}
	stat_was_on = damon_stat_off();
	if (!tap_ok(!damon_start(SAMPLE_US, AGGR_US), "damon: a kdamond watches the slot, fvaddr, %d regions of one huge page, %d us samples, %d us windows",
		    NPAGES, SAMPLE_US, AGGR_US)) {
		damon_stop();
		if (stat_was_on)
			file_printf(DAMON_STAT, "Y\n");
		return;
	}
	vm_register("damon");
	t0 = tlbb_now_s();
	c0 = kdamond_cpu_s();
	/* ten aggregation windows or so, summed */
	for (rounds = 0; rounds < 10 && tlbb_now_s() - t0 < 60; rounds++) {
		tlbb_msleep(AGGR_US / 1000);
		nr = damon_snapshot(acc);
		if (nr < 0)
			break;
		good += nr > 0;
		if (nr > most)
			most = nr;
	}
	c1 = kdamond_cpu_s();
	secs = tlbb_now_s() - t0;
	for (i = 0; i < NPAGES; i++) {
		if (is_hot(i))
			hot_seen += acc[i] > 0;
		else
			cold_seen += acc[i] > 0;
	}
	tap_diag("damon: %d snapshots, %d with regions (%d at most), accesses summed per hot page: %u %u %u %u %u %u %u %u; cold pages seen used %d",
		 rounds, good, most, acc[hot[0]], acc[hot[1]], acc[hot[2]],
		 acc[hot[3]], acc[hot[4]], acc[hot[5]], acc[hot[6]],
		 acc[hot[7]], cold_seen);
	tap_ok(good * 2 >= rounds && hot_seen >= NHOT - 1,
	       "damon: sees the guest's writes through stage 2 (%d of %d hot pages used, %d of %d cold)",
	       hot_seen, NHOT, cold_seen, NPAGES - NHOT);
	err = feed(acc);
	tap_ok(!err, "damon: the heat written to the VM's heat attribute (%s)",
	       err ? strerror(-err) : "ok");
	tlbb_get(VM, "heat", buf, sizeof(buf));
	tap_ok(!strncmp(buf, "fed", 3), "damon: heat attribute says fed (%s)",
	       strtok(buf, "\n"));
	if (c0 >= 0 && c1 >= 0)
		tap_diag("BENCH kvmheat damon_cpu_s %.3f wall_s %.2f gib %.3f cpu_per_gib_per_s %.4f (kdamond, %d us samples, one region per huge page; TCG guest: emulated, not native speed)",
			 c1 - c0, secs, (double)len / (1ul << 30),
			 (c1 - c0) / secs / ((double)len / (1ul << 30)),
			 SAMPLE_US);
	damon_stop();
	if (stat_was_on)
		file_printf(DAMON_STAT, "Y\n");
	kept = limit_and_count("damon");
	tap_ok(kept >= NHOT - 1,
	       "damon: at least %d of %d hot pages stay huge with heat fed from DAMON (%d; sampled alone: %d)",
	       NHOT - 1, NHOT, kept, before);
	vm_unregister("damon");
}

int main(void)
{
	pthread_t th;
	int before;
	double t0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	setup();
	tap_require(!pthread_create(&th, NULL, vcpu_loop, NULL),
		    "start the vCPU thread");
	t0 = tlbb_now_s();
	while (__atomic_load_n(&passes, __ATOMIC_RELAXED) < 10 &&
	       tlbb_now_s() - t0 < 30)
		tlbb_msleep(20);
	tap_ok(__atomic_load_n(&passes, __ATOMIC_RELAXED) >= 10,
	       "the guest writes its hot pages (%lu passes in %.1f s)",
	       __atomic_load_n(&passes, __ATOMIC_RELAXED), tlbb_now_s() - t0);
	tap_diag("stage 2: pages_2m=%" PRIu64,
		 kvm_vm_has_stat(kvm, "pages_2m") ?
		 kvm_vm_stat(kvm, "pages_2m") : 0);
	before = sampled();
	damon(before);
#ifdef TLBB_BENCH
	if (!access(DAMON, F_OK)) {
		bool stat_was_on = damon_stat_off();

		bench_damon();
		if (stat_was_on)
			file_printf(DAMON_STAT, "Y\n");
	}
#endif
	__atomic_store_n(&running, 0, __ATOMIC_RELAXED);
	pthread_join(th, NULL);
	tap_ok(!bad_exits, "every guest run ended at its out (%lu other exits)",
	       bad_exits);
	kvm_vcpu_free(vcpu);
	kvm_vm_free(kvm);
	return tap_done();
}
