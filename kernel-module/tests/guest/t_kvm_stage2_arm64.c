// SPDX-License-Identifier: GPL-2.0
/*
 * t_kvm_stage2_arm64: real arm64 KVM (nested in the TCG guest, VHE) over a
 * THP-backed memslot, limited by tlbbalance.ko.
 * tlbb-test-timeout: 300
 * tlbb-test-arch: aarch64 (AArch64 payload; x86: t_kvm_stage2.c)
 *
 * arm64 KVM has no pages_2m/pages_4k statistic, and neither Debian arm64
 * kernel here has a stage-2 page-table dump (CONFIG_PTDUMP_STAGE2_DEBUGFS
 * is absent in 6.1 and not set in 6.12), so the stage-2 page size cannot
 * be read directly.  What is checked instead is the number of stage-2
 * faults, counted by the vCPU's own "exits" statistic: a one-vCPU VM runs
 * a loop (AArch64, MMU off: addresses are guest-physical) that stores a
 * marker to every 4 KiB page of a 64 MiB memslot whose stage-2 entries
 * are all absent, then exits with an MMIO write.  KVM maps a whole 2 MiB
 * block on one fault when the host page is a PMD-mapped THP and the HVA is
 * congruent with the GPA, so such a run takes about one exit per 2 MiB
 * (32, plus a few timer exits); with 4 KiB stage-2 pages it takes one per
 * 4 KiB page (16384).  The cases:
 *   1. HVA 4 KiB off a 2 MiB boundary, THP-backed: >= one exit per page;
 *   2. HVA and GPA 2 MiB aligned, every 2 MiB a host THP: < pages/8 exits;
 *   3. tlbbalance.ko limits the aligned VM (the same registration as
 *      t_kvm_stage2, lib/kvm_stage2.c): N_hl reaches the floor, the
 *      module's own PMD count N_hc and AnonHugePages follow it, the memory
 *      is unchanged; the split blocks left stage 2 (the MMU notifier), so
 *      the next run takes one exit per 4 KiB page of the split part and
 *      none per page of the still-huge part (fewer than half way to one
 *      per page of the whole slot), and writes every page;
 *   4. mode off and MADV_COLLAPSE (before 6.1: khugepaged): the collapsed
 *      blocks left stage 2 and fault back as blocks: at least one exit
 *      each, < pages/8 in all.
 * 5.10 has no binary stats fd: "exits" is read from the VM's debugfs
 * directory, which sums it over the VM's vCPUs (here one).
 * Every run prints its duration under nested TCG.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kvm_stage2.h"
#include "kvm_util.h"
#include "tap.h"
#include "thp.h"
#include "util.h"

#define MMIO_GPA	0x10000000ul	/* in no memslot: an MMIO exit */
#define ENTRY_GPA	KVM_S2_ENTRY
#define SLOT_GPA	KVM_S2_SLOT_GPA
#define SLOT_SIZE	KVM_S2_SLOT_SIZE
#define PAGE		KVM_S2_PAGE
#define PAGES		KVM_S2_PAGES
/* Few exits: per 2 MiB block plus timer exits, far below one per page. */
#define FEW_EXITS	(PAGES / 8)

/*
 * x0 = first page, w1 = marker, x2 = number of pages, x3 = MMIO address:
 *   entry: str  w1, [x0]            b9000001
 *          add  x0, x0, #0x1000     91400400
 *          subs x2, x2, #1          f1000442
 *          b.ne entry               54ffffa1
 *          str  w1, [x3]            b9000061   (the MMIO exit)
 *          b    entry               17fffffb
 * KVM skips the MMIO store when the vCPU runs again, so the next run
 * starts at "b entry" with the registers the test set: no pc write needed.
 */
static const uint32_t guest_code[] = {
	0xb9000001, 0x91400400, 0xf1000442, 0x54ffffa1,
	0xb9000061, 0x17fffffb,
};

static void vm_setup(struct stage2_vm *s, uint8_t *mem)
{
	stage2_vm_setup(s, mem, guest_code, sizeof(guest_code));
	kvm_vcpu_init_arm64(s->vcpu);
	kvm_vcpu_set_core_reg(s->vcpu, KVM_ARM64_PC, ENTRY_GPA);
}

/*
 * Run the guest loop once; the vCPU's exits during the run (stage-2
 * faults and the rest) in *exits.  True if it exited as planned and
 * wrote every page.
 */
static bool guest_touch(struct stage2_vm *s, const char *what,
			uint32_t marker, uint64_t *exits)
{
	struct kvm_run *run = s->vcpu->run;
	uint64_t before = kvm_vcpu_stat(s->vcpu, "exits");
	double t0, secs;
	uint32_t word;

	kvm_vcpu_set_core_reg(s->vcpu, 0, SLOT_GPA);
	kvm_vcpu_set_core_reg(s->vcpu, 1, marker);
	kvm_vcpu_set_core_reg(s->vcpu, 2, PAGES);
	kvm_vcpu_set_core_reg(s->vcpu, 3, MMIO_GPA);
	t0 = tlbb_now_s();
	kvm_vcpu_run(s->vcpu);
	secs = tlbb_now_s() - t0;
	*exits = kvm_vcpu_stat(s->vcpu, "exits") - before;
	memcpy(&word, run->mmio.data, sizeof(word));
	tap_diag("%s: guest run %.3f s, %" PRIu64 " exits (%.1f us each)",
		 what, secs, *exits, *exits ? secs * 1e6 / *exits : 0.0);
	if (!tap_ok(run->exit_reason == KVM_EXIT_MMIO && run->mmio.is_write &&
		    run->mmio.phys_addr == MMIO_GPA && word == marker,
		    "%s: guest loop ran to its MMIO write at %#lx (%s)", what,
		    MMIO_GPA, kvm_vcpu_exit_str(s->vcpu)))
		return false;
	return stage2_check_marker(s, what, marker);
}

/*
 * Say whether this kernel has KVM's stage-2 page-table dump for the VM
 * (/sys/kernel/debug/kvm/<pid>-<fd>/stage2_page_tables, newer kernels
 * with CONFIG_PTDUMP_STAGE2_DEBUGFS); Debian's 6.1 and 6.12 do not.
 */
static void stage2_dump_diag(void)
{
	char pat[96];
	glob_t g;
	int found;

	snprintf(pat, sizeof(pat), "/sys/kernel/debug/kvm/%d-*/"
		 "stage2_page_tables", (int)getpid());
	found = !glob(pat, 0, NULL, &g);
	if (found)
		globfree(&g);
	tap_diag("stage-2 page-table dump: %s; arm64 KVM has no pages_2m "
		 "statistic either, so stage-2 block mappings are checked by "
		 "the number of stage-2 faults (vCPU stat exits)",
		 found ? "present (not read by this test)" : "absent");
}

static void test_misaligned(void)
{
	uint8_t *mem = stage2_thp_memory(PAGE, "misaligned");
	struct stage2_vm s;
	uint64_t exits;
	long huge;

	huge = thp_huge_pages(0, mem, SLOT_SIZE);
	tap_ok(huge > 0,
	       "misaligned: host memory is still THP-backed (%ld huge pages)",
	       huge);
	vm_setup(&s, mem);
	if (guest_touch(&s, "misaligned", 0x5a5a0002, &exits))
		tap_ok(exits >= PAGES,
		       "misaligned by 4 KiB: one stage-2 fault per 4 KiB page "
		       "(%" PRIu64 " exits >= %lu pages)", exits, PAGES);
	stage2_vm_free(&s);
	thp_free(mem, SLOT_SIZE);
}

static void test_aligned(struct stage2_vm *s)
{
	uint64_t want = SLOT_SIZE / thp_pmd_size(), exits;
	uint8_t *mem = stage2_thp_memory(0, "aligned");

	tap_ok(thp_huge_pages(0, mem, SLOT_SIZE) == (long)want,
	       "aligned: host backs the slot with %" PRIu64 " huge pages",
	       want);
	vm_setup(s, mem);
	stage2_dump_diag();
	if (guest_touch(s, "aligned", 0xa11a0001, &exits))
		tap_ok(exits >= want && exits < FEW_EXITS,
		       "aligned: stage 2 faulted per 2 MiB block, not per "
		       "page (%" PRIu64 " <= %" PRIu64 " exits < %lu)",
		       want, exits, FEW_EXITS);
}

/* Register the aligned VM, let the controller lower N_hl to the floor. */
static void test_limited(struct stage2_vm *s)
{
	uint64_t total = SLOT_SIZE / thp_pmd_size(), split_pages, most;
	struct kvm_limit l;
	uint64_t exits;

	if (!kvm_limit_to_floor(&l, "kvm-stage2", s->mem, SLOT_SIZE,
				SLOT_GPA))
		return;

	/*
	 * Per page for the split part; had the huge part been faulted per
	 * page too, the run would take PAGES exits: the bound is half way,
	 * which leaves thousands of exits for timer ticks of a slow run.
	 */
	split_pages = (total - l.limit) * (thp_pmd_size() / PAGE);
	most = split_pages + (PAGES - split_pages) / 2;
	if (guest_touch(s, "limited", 0x1e5e0003, &exits))
		tap_ok(exits >= split_pages && exits < most,
		       "limited: split blocks fault back per 4 KiB page, the "
		       "%" PRIu64 " huge ones stay blocks (%" PRIu64 " <= %"
		       PRIu64 " exits < %" PRIu64 ")", l.limit, split_pages,
		       exits, most);

	/* Lifting the limit lets the memory be huge again, at stage 2 too. */
	if (kvm_limit_mode(&l, TLBB_MODE_OFF) &&
	    tap_ok(stage2_rehuge(s->mem, total),
		   "restored: the slot collapsed to %" PRIu64 " huge pages "
		   "after mode off", total) &&
	    guest_touch(s, "restored", 0x2e5e0004, &exits))
		tap_ok(exits >= total - l.limit && exits < FEW_EXITS,
		       "restored: the collapsed blocks fault back as blocks "
		       "once the limit is lifted (%" PRIu64 " <= %" PRIu64
		       " exits < %lu)", total - l.limit, exits, FEW_EXITS);
	kvm_limit_remove(&l);
}

int main(void)
{
	struct stage2_vm aligned;

	setvbuf(stdout, NULL, _IOLBF, 0);
	tap_diag("THP enabled: %s", ({
		static char b[128];
		thp_sysfs_get("enabled", b, sizeof(b)) < 0 ? "?" : b; }));
	test_misaligned();
	test_aligned(&aligned);
	test_limited(&aligned);
	stage2_vm_free(&aligned);
	return tap_done();
}
