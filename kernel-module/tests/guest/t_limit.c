// SPDX-License-Identifier: GPL-2.0
/*
 * t_limit: limit and restore on real memory.
 *
 * This process holds 128 MiB of THP memory (64 huge pages on x86), filled
 * with a pattern, and registers itself as a VM in balance mode. Refill
 * counts shaped like the paper's mcf case (huge group 2.18 M/s, small group
 * 400/s: per-entry ratio ~ 155 000, far above 20) are injected through the
 * debugfs backend. Expected:
 *  - nothing happens before the sustain time; then N_hl steps down one
 *    huge page per decision to the floor (32);
 *  - AnonHugePages of the range (smaps) follows N_hl within one step and
 *    equals it at the end; the module's own count agrees with smaps;
 *  - the checksum of the whole range never changes;
 *  - with khugepaged scanning every 10 ms, no huge page comes back in 10 s;
 *  - the load moves to the small group: N_hl rises back to 64, four pages
 *    per decision (step_pages = 4, to keep the test short), and the huge
 *    pages return (khugepaged re-forms them once the hold is lifted);
 *  - monitor mode never limits; mode off lifts a limit at once; rmdir of a
 *    balanced VM is refused (EBUSY) until it is off.
 *
 * Shortened for test speed (the paper's defaults are 100 ms and 10 s):
 * interval_ms = 50, sustain_ms = 500. samples = 3 and the imbalance
 * threshold 20 are the defaults; floor_pages = 32 stops the descent halfway.
 *
 * tlbb-test-timeout: 240
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfs.h"
#include "tap.h"
#include "thp.h"
#include "tlbb_defs.h"
#include "util.h"

#define VM		"mcf"
#define PAGES		64
#define FLOOR		32
#define INTERVAL_MS	50
#define SUSTAIN_MS	500
#define RAISE_STEP	4
#define MCF_HUGE	2180000		/* refills/s, huge group (paper) */
#define MCF_SMALL	400		/* refills/s, small group (< 450) */

static char *region;
static size_t len;

static long smaps_huge(void)
{
	return thp_huge_pages(0, region, len);
}

static uint64_t khugepaged_full_scans(void)
{
	uint64_t v = 0;

	file_read_u64(THP_SYSFS "/khugepaged/full_scans", &v);
	return v;
}

/* smaps huge pages of the region, polled until @want or @ms pass */
static long wait_huge(long want, unsigned int ms)
{
	return thp_wait_huge(region, len, want, ms);
}

static void setup(void)
{
	long huge;
	int err;

	tap_require(!thp_sysfs_set("khugepaged/scan_sleep_millisecs", "10") &&
		    !thp_sysfs_set("khugepaged/alloc_sleep_millisecs", "10"),
		    "khugepaged scans every 10 ms");
	len = PAGES * thp_pmd_size();
	region = thp_alloc(len, 0, 1);
	thp_fill(region, len, 42);
	huge = wait_huge(PAGES, 10000);
	tap_require(huge == PAGES, "setup: %d huge pages back the region (%ld)",
		    PAGES, huge);
	tap_diag("setup: %zu MiB of THP memory, %d huge pages", len >> 20,
		 PAGES);

	tap_require(!tlbb_vm_create(VM), "mkdir vms/" VM);
	err = tlbb_set(VM, "pid", "%d\n", getpid());
	err = err ?: tlbb_set(VM, "vcpu_tids", "%d\n", gettid());
	err = err ?: tlbb_set(VM, "ranges", "%p 0x%zx 0x40000000\n", region,
			      len);
	err = err ?: tlbb_set(VM, "interval_ms", "%d\n", INTERVAL_MS);
	err = err ?: tlbb_set(VM, "sustain_ms", "%d\n", SUSTAIN_MS);
	err = err ?: tlbb_set(VM, "floor_pages", "%d\n", FLOOR);
	err = err ?: tlbb_set_mode(VM, TLBB_MODE_BALANCE);
	tap_require(!err, "register this process in balance mode: %s",
		    strerror(-err));
	tlbb_msleep(3 * INTERVAL_MS);
	tap_ok(tlbb_get_u64(VM, "total_pages") == PAGES &&
	       tlbb_get_u64(VM, "huge_limit") == PAGES &&
	       tlbb_get_u64(VM, "huge_pages") == PAGES,
	       "registered: total_pages = huge_limit = huge_pages = %d", PAGES);
}

/* Phase 1: mcf-shaped load, N_hl down to the floor. */
static void lower(uint64_t sum0)
{
	uint64_t limit, last = PAGES, steps = 0, dev_max = 0;
	double t0, t_first = -1, t_end;
	long huge = -1;
	int up = 0, disagree = 0;

	tap_require(!tlbb_inject(VM, MCF_HUGE, MCF_SMALL), "inject mcf load");
	t0 = tlbb_now_s();
	while (tlbb_now_s() - t0 < 60) {
		limit = tlbb_get_u64(VM, "huge_limit");
		huge = smaps_huge();
		if (limit > last)
			up++;
		if (limit < last) {
			steps++;
			if (t_first < 0)
				t_first = tlbb_now_s() - t0;
		}
		last = limit;
		if (huge > (long)limit && (uint64_t)huge - limit > dev_max)
			dev_max = huge - limit;
		if (limit == FLOOR && huge == FLOOR)
			break;
		tlbb_msleep(10);
	}
	t_end = tlbb_now_s() - t0;
	tap_diag("first lower after %.2f s, floor reached after %.2f s, %llu limit changes seen",
		 t_first, t_end, (unsigned long long)steps);
	tap_ok(t_first >= SUSTAIN_MS / 1000.0,
	       "no lowering before the sustain time (%.2f s >= %.1f s)",
	       t_first, SUSTAIN_MS / 1000.0);
	tap_ok(last == FLOOR && !up,
	       "N_hl went down monotonically from %d to the floor %d (%llu)",
	       PAGES, FLOOR, (unsigned long long)last);
	tap_ok(steps >= (PAGES - FLOOR) / 2,
	       "step by step: %llu separate decreases seen (one page each)",
	       (unsigned long long)steps);
	tap_ok(huge == FLOOR, "AnonHugePages of the range = N_hl = %d (%ld)",
	       FLOOR, huge);
	tap_ok(dev_max <= 1,
	       "AnonHugePages followed N_hl within one step all along (max excess %llu)",
	       (unsigned long long)dev_max);
	disagree = tlbb_get_u64(VM, "huge_pages") != (uint64_t)huge;
	tap_ok(!disagree, "module's huge_pages agrees with smaps");
	tap_ok(tlbb_get_u64(VM, "splits") >= PAGES - FLOOR,
	       "splits stat counts the %d splits (%llu)", PAGES - FLOOR,
	       (unsigned long long)tlbb_get_u64(VM, "splits"));
	tap_ok(thp_vma_nohuge(region) == 1, "the region's VMA is held VM_NOHUGEPAGE");
	tap_ok(thp_checksum(region, len) == sum0,
	       "checksum of the range unchanged after splitting");
}

/* Phase 2: khugepaged at 10 ms brings nothing back while the limit holds. */
static void hold(uint64_t sum0)
{
	uint64_t scans0 = khugepaged_full_scans(), scans1;
	long huge, max = 0;
	double t0 = tlbb_now_s();

	while (tlbb_now_s() - t0 < 10) {
		huge = smaps_huge();
		if (huge > max)
			max = huge;
		tlbb_msleep(50);
	}
	scans1 = khugepaged_full_scans();
	tap_diag("khugepaged full scans during the 10 s: %llu",
		 (unsigned long long)(scans1 - scans0));
	tap_ok(scans1 > scans0, "khugepaged was scanning (full_scans rose)");
	tap_ok(max <= FLOOR,
	       "no huge page came back in 10 s (max %ld, limit %d)", max,
	       FLOOR);
	tap_ok(tlbb_get_u64(VM, "huge_limit") == FLOOR,
	       "N_hl held at %d", FLOOR);
	tap_ok(thp_checksum(region, len) == sum0, "checksum unchanged");
}

/* Phase 3: the load moves to the small group: N_hl and huge pages rise. */
static void raise_back(uint64_t sum0)
{
	uint64_t limit = FLOOR, max_limit = FLOOR;
	long huge = -1;
	double t0;

	/* four pages per raise: each waits for khugepaged to re-form them */
	tap_require(!tlbb_set(VM, "step_pages", "%d\n", RAISE_STEP),
		    "step_pages %d", RAISE_STEP);
	tap_require(!tlbb_inject(VM, MCF_SMALL, MCF_HUGE),
		    "inject small-group load");
	t0 = tlbb_now_s();
	while (tlbb_now_s() - t0 < 90) {
		limit = tlbb_get_u64(VM, "huge_limit");
		huge = smaps_huge();
		if (limit > max_limit)
			max_limit = limit;
		if (limit == PAGES && huge == PAGES)
			break;
		tlbb_msleep(20);
	}
	tap_diag("N_hl %llu, AnonHugePages %ld pages after %.2f s",
		 (unsigned long long)limit, huge, tlbb_now_s() - t0);
	tap_ok(max_limit == PAGES, "N_hl rose from %d back to %d", FLOOR,
	       PAGES);
	tap_ok(huge == PAGES, "huge pages returned: AnonHugePages %ld of %d",
	       huge, PAGES);
	tap_ok(tlbb_get_u64(VM, "restores") >= (PAGES - FLOOR) / RAISE_STEP,
	       "restores stat counts the raises (%llu)",
	       (unsigned long long)tlbb_get_u64(VM, "restores"));
	tap_ok(thp_vma_nohuge(region) == 0, "VM_NOHUGEPAGE lifted from the region");
	tap_ok(thp_checksum(region, len) == sum0,
	       "checksum unchanged after the huge pages returned");
}

/*
 * Phase 4: monitor mode never limits; leaving balance (mode off) lifts the
 * limit at once; rmdir of a balanced VM is EBUSY until it is off. Fast
 * settings: no sustain, one sample per decision, the whole VM in one step,
 * floor 0.
 */
static void leave(uint64_t sum0)
{
	int err;
	long huge;

	err = tlbb_set_mode(VM, TLBB_MODE_OFF);
	err = err ?: tlbb_set_fast(VM, PAGES);
	err = err ?: tlbb_inject(VM, MCF_HUGE, MCF_SMALL);
	err = err ?: tlbb_set_mode(VM, TLBB_MODE_MONITOR);
	tap_require(!err, "fast settings, monitor mode: %s", strerror(-err));
	tlbb_msleep(1000);
	tap_ok(tlbb_get_u64(VM, "huge_limit") == PAGES &&
	       smaps_huge() == PAGES && thp_vma_nohuge(region) == 0,
	       "monitor mode under mcf load: limit, huge pages and flags untouched");

	tap_require(!tlbb_set_mode(VM, TLBB_MODE_BALANCE), "mode balance");
	huge = wait_huge(0, 5000);
	tap_ok(huge == 0 && thp_vma_nohuge(region) == 1,
	       "balance, floor 0: every huge page split, VMA held (%ld)", huge);
	tap_require(!tlbb_set_mode(VM, TLBB_MODE_OFF), "mode off");
	tap_ok(thp_vma_nohuge(region) == 0, "mode off lifts VM_NOHUGEPAGE at once");
	huge = wait_huge(PAGES, 20000);
	tap_ok(huge == PAGES, "huge pages return after mode off (%ld)", huge);

	tap_require(!tlbb_set_mode(VM, TLBB_MODE_BALANCE), "mode balance again");
	huge = wait_huge(0, 5000);
	tap_ok(huge == 0 && thp_vma_nohuge(region) == 1,
	       "balance again: all split, held (%ld)", huge);
	tap_ok(!tlbb_inject_off(VM) && tlbb_vm_remove(VM) == -EBUSY &&
	       thp_vma_nohuge(region) == 1,
	       "rmdir while the limit holds: EBUSY, the hold stays");
	tap_ok(!tlbb_set_mode(VM, TLBB_MODE_OFF) && !tlbb_vm_remove(VM),
	       "mode off, then rmdir");
	tap_ok(thp_vma_nohuge(region) == 0, "no VM_NOHUGEPAGE left after off + rmdir");
	huge = wait_huge(PAGES, 20000);
	tap_ok(huge == PAGES, "huge pages return after rmdir (%ld)", huge);
	tap_ok(thp_checksum(region, len) == sum0,
	       "checksum unchanged after all of it");
}

int main(void)
{
	uint64_t sum0;
	char st[64];

	setvbuf(stdout, NULL, _IOLBF, 0);
	setup();
	sum0 = thp_checksum(region, len);
	lower(sum0);
	hold(sum0);
	raise_back(sum0);

	tlbb_get(VM, "state", st, sizeof(st));
	tap_diag("final state %s, splits %llu, restores %llu", st,
		 (unsigned long long)tlbb_get_u64(VM, "splits"),
		 (unsigned long long)tlbb_get_u64(VM, "restores"));
	leave(sum0);
	thp_sysfs_set("khugepaged/scan_sleep_millisecs", "10000");
	thp_sysfs_set("khugepaged/alloc_sleep_millisecs", "60000");
	return tap_done();
}
