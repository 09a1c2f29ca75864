// SPDX-License-Identifier: GPL-2.0
/*
 * t_kvm_stage2: real KVM stage-2 (NPT) mappings of THP-backed guest memory.
 * tlbb-test-timeout: 300
 * tlbb-test-arch: x86_64 (a 32-bit x86 payload and the x86-only pages_2m statistic; arm64: t_kvm_stage2_arm64.c)
 *
 * Runs inside the TCG test guest where kvm-amd gives a real /dev/kvm with
 * nested paging.  A one-vCPU VM runs a few bytes of 32-bit code (paging
 * off, so guest-physical = linear) that writes a marker into every 4 KiB
 * page of a 64 MiB memslot and exits with an "out".  KVM's own per-VM
 * statistics pages_2m/pages_4k (binary stats fd) then say how the slot is
 * mapped at stage 2:
 *   1. HVA congruent with the GPA modulo 2 MiB, THP-backed: every 2 MiB of
 *      the slot is one stage-2 huge mapping;
 *   2. the same memory kind, HVA 4 KiB off a 2 MiB boundary: no stage-2
 *      huge mapping at all, although the host memory is still THP-backed
 *      (the alignment problem);
 *   3. tlbbalance.ko limits the aligned VM (this process's pid and the
 *      slot's range registered in balance mode, the controller driven by
 *      the injection backend with huge-dominant refill rates, the limit
 *      floor set): after the limiter acts and the guest runs again,
 *      pages_2m equals the limit N_hl and the memory is unchanged;
 *   4. mode off lifts the limit: MADV_COLLAPSE makes the slot huge again
 *      and after the next guest run every 2 MiB is mapped huge at stage 2.
 */
#define _GNU_SOURCE
#include <errno.h>
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

#define ENTRY_GPA	KVM_S2_ENTRY
#define SLOT_GPA	KVM_S2_SLOT_GPA
#define SLOT_SIZE	KVM_S2_SLOT_SIZE
#define PAGE		KVM_S2_PAGE
#define DONE_PORT	0x10

/*
 * eax = first page, ebx = marker, ecx = number of pages:
 *   1: mov  [eax], ebx        89 18
 *      add  eax, 0x1000       05 00 10 00 00
 *      dec  ecx               49
 *      jnz  1b                75 f6
 *      out  0x10, al          e6 10
 *      hlt                    f4
 */
static const uint8_t guest_code[] = {
	0x89, 0x18,
	0x05, 0x00, 0x10, 0x00, 0x00,
	0x49,
	0x75, 0xf6,
	0xe6, DONE_PORT,
	0xf4,
};

static void vm_setup(struct stage2_vm *s, uint8_t *mem)
{
	stage2_vm_setup(s, mem, guest_code, sizeof(guest_code));
	kvm_vcpu_setup_pm32(s->vcpu);
}

/* Run the guest loop once; true if it exited as planned and wrote all. */
static bool guest_touch(struct stage2_vm *s, const char *what,
			uint32_t marker)
{
	double t0 = tlbb_now_s();

	kvm_vcpu_set_regs32(s->vcpu, ENTRY_GPA, SLOT_GPA, marker,
			    KVM_S2_PAGES, 0);
	kvm_vcpu_run(s->vcpu);
	if (!tap_ok(s->vcpu->run->exit_reason == KVM_EXIT_IO &&
		    s->vcpu->run->io.port == DONE_PORT,
		    "%s: guest loop ran to its out 0x%x (%s, %.2f s)", what,
		    DONE_PORT, kvm_vcpu_exit_str(s->vcpu), tlbb_now_s() - t0))
		return false;
	return stage2_check_marker(s, what, marker);
}

/* KVM's pages_4k, or 0 on a kernel that does not count them (5.10). */
static uint64_t pages_4k(struct kvm_vm *vm)
{
	return kvm_vm_has_stat(vm, "pages_4k") ?
	       kvm_vm_stat(vm, "pages_4k") : 0;
}

static void test_aligned(struct stage2_vm *s)
{
	uint64_t want = SLOT_SIZE / thp_pmd_size(), p2m, p4k;
	uint8_t *mem = stage2_thp_memory(0, "aligned");

	tap_ok(thp_huge_pages(0, mem, SLOT_SIZE) == (long)want,
	       "aligned: host backs the slot with %" PRIu64 " huge pages",
	       want);
	vm_setup(s, mem);
	guest_touch(s, "aligned", 0xa11a0001);
	p2m = kvm_vm_stat(s->vm, "pages_2m");
	p4k = pages_4k(s->vm);
	tap_diag("aligned: pages_2m=%" PRIu64 " pages_4k=%" PRIu64, p2m, p4k);
	tap_ok(p2m == want,
	       "aligned: every 2 MiB of the slot mapped huge at stage 2 "
	       "(pages_2m %" PRIu64 " == %" PRIu64 ")", p2m, want);
}

static void test_misaligned(void)
{
	uint64_t p2m, p4k, pages = SLOT_SIZE / PAGE;
	uint8_t *mem = stage2_thp_memory(PAGE, "misaligned");
	struct stage2_vm s;
	long huge;

	huge = thp_huge_pages(0, mem, SLOT_SIZE);
	tap_ok(huge > 0,
	       "misaligned: host memory is still THP-backed (%ld huge pages)",
	       huge);
	vm_setup(&s, mem);
	guest_touch(&s, "misaligned", 0x5a5a0002);
	p2m = kvm_vm_stat(s.vm, "pages_2m");
	p4k = pages_4k(s.vm);
	tap_diag("misaligned: pages_2m=%" PRIu64 " pages_4k=%" PRIu64,
		 p2m, p4k);
	tap_ok(p2m == 0,
	       "misaligned by 4 KiB: no stage-2 huge mapping (pages_2m %"
	       PRIu64 ")", p2m);
	if (kvm_vm_has_stat(s.vm, "pages_4k"))
		tap_ok(p4k >= pages,
		       "misaligned: the slot is mapped with 4 KiB pages "
		       "(pages_4k %" PRIu64 " >= %" PRIu64 ")", p4k, pages);
	else
		tap_skip("this kernel counts no 4 KiB stage-2 mappings",
			 "misaligned: the slot is mapped with 4 KiB pages");
	stage2_vm_free(&s);
	thp_free(mem, SLOT_SIZE);
}

/*
 * Whether pages_2m is what stage 2 holds now. 5.10 has only debugfs's
 * "largepages", which counts the huge mappings made: a zap by the MMU
 * notifier does not lower it (seen: 32 still after the split to 16, 48
 * after the slot collapsed back to 32). Its first count in a fresh VM is
 * exact; a check after a split or a collapse is skipped there.
 */
static bool p2m_is_gauge(struct stage2_vm *s, const char *what)
{
	if (kvm_vm_stat_is_gauge(s->vm))
		return true;
	tap_skip("this kernel's largepages counts huge mappings made, not held",
		 "%s", what);
	return false;
}

/* Register the aligned VM, let the controller lower N_hl to the floor. */
static void test_limited(struct stage2_vm *s)
{
	uint64_t total = SLOT_SIZE / thp_pmd_size(), limit, p2m, p4k;
	struct kvm_limit l;

	if (!kvm_limit_to_floor(&l, "kvm-stage2", s->mem, SLOT_SIZE,
				SLOT_GPA))
		return;
	limit = l.limit;
	p2m = kvm_vm_stat(s->vm, "pages_2m");
	if (p2m_is_gauge(s, "limit: split huge pages left stage 2 at once"))
		tap_ok(p2m <= limit,
		       "limit: split huge pages left stage 2 at once "
		       "(pages_2m %" PRIu64 " <= N_hl %" PRIu64 ")",
		       p2m, limit);

	guest_touch(s, "limited", 0x1e5e0003);
	p2m = kvm_vm_stat(s->vm, "pages_2m");
	p4k = pages_4k(s->vm);
	tap_diag("limited: pages_2m=%" PRIu64 " pages_4k=%" PRIu64, p2m, p4k);
	if (p2m_is_gauge(s, "limited: stage-2 huge mappings match N_hl"))
		tap_ok(p2m == limit,
		       "limited: stage-2 huge mappings match N_hl after the "
		       "guest ran again (pages_2m %" PRIu64 " == %" PRIu64 ")",
		       p2m, limit);
	if (kvm_vm_has_stat(s->vm, "pages_4k"))
		tap_ok(p4k >= (total - limit) * (thp_pmd_size() / PAGE),
		       "limited: the split part is mapped with 4 KiB pages "
		       "(pages_4k %" PRIu64 ")", p4k);
	else
		tap_skip("this kernel counts no 4 KiB stage-2 mappings",
			 "limited: the split part is mapped with 4 KiB pages");

	/* Lifting the limit lets the memory be huge again, at stage 2 too. */
	if (kvm_limit_mode(&l, TLBB_MODE_OFF) &&
	    tap_ok(stage2_rehuge(s->mem, total),
		   "restored: the slot collapsed to %" PRIu64 " huge pages "
		   "after mode off", total)) {
		guest_touch(s, "restored", 0x2e5e0004);
		p2m = kvm_vm_stat(s->vm, "pages_2m");
		if (p2m_is_gauge(s, "restored: stage 2 is huge again"))
			tap_ok(p2m == total,
			       "restored: stage 2 is huge again once the "
			       "limit is lifted (pages_2m %" PRIu64 " == %"
			       PRIu64 ")", p2m, total);
	}
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
