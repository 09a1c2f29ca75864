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
 *      t_kvm_stage2, lib/kvm_limit.c): N_hl reaches the floor, the
 *      module's own PMD count N_hc and AnonHugePages follow it, the memory
 *      is unchanged; the split blocks left stage 2 (the MMU notifier), so
 *      the next run takes one exit per 4 KiB page of the split part and
 *      none per page of the still-huge part (fewer than half way to one
 *      per page of the whole slot), and writes every page;
 *   4. mode off and MADV_COLLAPSE: the collapsed blocks left stage 2 and
 *      fault back as blocks: at least one exit each, < pages/8 in all.
 * Every run prints its duration under nested TCG.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <glob.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25	/* Linux 6.1 */
#endif

#include "kvm_limit.h"
#include "kvm_util.h"
#include "tap.h"
#include "thp.h"
#include "util.h"

#define CODE_GPA	0x0ul
#define CODE_SIZE	0x10000ul
#define ENTRY_GPA	0x1000ul
#define MMIO_GPA	0x10000000ul	/* in no memslot: an MMIO exit */
#define SLOT_GPA	0x40000000ul	/* 1 GiB: 2 MiB aligned */
#define SLOT_SIZE	(64ul << 20)
#define PAGE		4096ul
#define PAGES		(SLOT_SIZE / PAGE)
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

struct stage2_vm {
	struct kvm_vm *vm;
	struct kvm_vcpu *vcpu;
	void *code;
	uint8_t *mem;
};

static void vm_setup(struct stage2_vm *s, uint8_t *mem)
{
	s->mem = mem;
	s->code = mmap(NULL, CODE_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	tap_require(s->code != MAP_FAILED, "mmap guest code");
	memcpy((uint8_t *)s->code + ENTRY_GPA, guest_code, sizeof(guest_code));
	s->vm = kvm_vm_create();
	kvm_vm_set_memslot(s->vm, 0, CODE_GPA, s->code, CODE_SIZE);
	kvm_vm_set_memslot(s->vm, 1, SLOT_GPA, mem, SLOT_SIZE);
	s->vcpu = kvm_vcpu_create(s->vm, 0);
	kvm_vcpu_init_arm64(s->vcpu);
	kvm_vcpu_set_core_reg(s->vcpu, KVM_ARM64_PC, ENTRY_GPA);
}

static void vm_free(struct stage2_vm *s)
{
	kvm_vcpu_free(s->vcpu);
	kvm_vm_free(s->vm);
	munmap(s->code, CODE_SIZE);
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
	size_t i, wrong = 0;
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
	for (i = 0; i < PAGES; i++) {
		memcpy(&word, s->mem + i * PAGE, sizeof(word));
		wrong += word != marker;
	}
	return tap_ok(!wrong, "%s: guest wrote all %lu pages (%zu wrong)",
		      what, PAGES, wrong);
}

static uint8_t *thp_memory(size_t misalign, const char *what)
{
	uint8_t *mem = thp_alloc(SLOT_SIZE, misalign, 1);

	thp_fill(mem, SLOT_SIZE, misalign + 1);
	tap_diag("%s: HVA %p, GPA %#lx, %ld host huge pages", what,
		 (void *)mem, SLOT_GPA, thp_huge_pages(0, mem, SLOT_SIZE));
	return mem;
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
	uint8_t *mem = thp_memory(PAGE, "misaligned");
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
	vm_free(&s);
	thp_free(mem, SLOT_SIZE);
}

static void test_aligned(struct stage2_vm *s)
{
	uint64_t want = SLOT_SIZE / thp_pmd_size(), exits;
	uint8_t *mem = thp_memory(0, "aligned");

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
	uint64_t exits, sum;
	struct kvm_limit l;
	long huge;

	sum = thp_checksum(s->mem, SLOT_SIZE);
	if (!kvm_limit_to_floor(&l, "kvm-stage2", s->mem, SLOT_SIZE,
				SLOT_GPA))
		return;
	tap_ok(l.limit == KVM_LIMIT_FLOOR,
	       "limit: controller lowered N_hl from %" PRIu64 " to the floor %d",
	       total, KVM_LIMIT_FLOOR);
	huge = thp_huge_pages(0, s->mem, SLOT_SIZE);
	tap_ok(l.hc == l.limit && huge == (long)l.limit,
	       "limit: huge pages follow N_hl (module's PMD count N_hc %"
	       PRIu64 ", AnonHugePages %ld, N_hl %" PRIu64 ")",
	       l.hc, huge, l.limit);
	tap_ok(thp_checksum(s->mem, SLOT_SIZE) == sum,
	       "limit: guest memory unchanged by the splits");

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
	if (kvm_limit_mode(&l, "off") &&
	    tap_ok(!madvise(s->mem, SLOT_SIZE, MADV_COLLAPSE),
		   "restored: MADV_COLLAPSE of the slot after mode off (%s)",
		   strerror(errno)) &&
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
	vm_free(&aligned);
	return tap_done();
}
