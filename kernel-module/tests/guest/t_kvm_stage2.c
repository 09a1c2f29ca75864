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
#define SLOT_GPA	0x40000000ul	/* 1 GiB: 2 MiB aligned */
#define SLOT_SIZE	(64ul << 20)
#define PAGE		4096ul
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
	kvm_vcpu_setup_pm32(s->vcpu);
}

static void vm_free(struct stage2_vm *s)
{
	kvm_vcpu_free(s->vcpu);
	kvm_vm_free(s->vm);
	munmap(s->code, CODE_SIZE);
}

/* Run the guest loop once; true if it exited as planned and wrote all. */
static bool guest_touch(struct stage2_vm *s, const char *what,
			uint32_t marker)
{
	size_t pages = SLOT_SIZE / PAGE, i, wrong = 0;
	double t0 = tlbb_now_s();
	uint32_t word;

	kvm_vcpu_set_regs32(s->vcpu, ENTRY_GPA, SLOT_GPA, marker, pages, 0);
	kvm_vcpu_run(s->vcpu);
	if (!tap_ok(s->vcpu->run->exit_reason == KVM_EXIT_IO &&
		    s->vcpu->run->io.port == DONE_PORT,
		    "%s: guest loop ran to its out 0x%x (%s, %.2f s)", what,
		    DONE_PORT, kvm_vcpu_exit_str(s->vcpu), tlbb_now_s() - t0))
		return false;
	for (i = 0; i < pages; i++) {
		memcpy(&word, s->mem + i * PAGE, sizeof(word));
		wrong += word != marker;
	}
	return tap_ok(!wrong, "%s: guest wrote all %zu pages (%zu wrong)",
		      what, pages, wrong);
}

static uint8_t *thp_memory(size_t misalign, const char *what)
{
	uint8_t *mem = thp_alloc(SLOT_SIZE, misalign, 1);
	long huge;

	thp_fill(mem, SLOT_SIZE, misalign + 1);
	huge = thp_huge_pages(0, mem, SLOT_SIZE);
	tap_diag("%s: HVA %p, GPA %#lx, %ld host huge pages", what,
		 (void *)mem, SLOT_GPA, huge);
	return mem;
}

static void test_aligned(struct stage2_vm *s)
{
	uint64_t want = SLOT_SIZE / thp_pmd_size(), p2m, p4k;
	uint8_t *mem = thp_memory(0, "aligned");

	tap_ok(thp_huge_pages(0, mem, SLOT_SIZE) == (long)want,
	       "aligned: host backs the slot with %" PRIu64 " huge pages",
	       want);
	vm_setup(s, mem);
	guest_touch(s, "aligned", 0xa11a0001);
	p2m = kvm_vm_stat(s->vm, "pages_2m");
	p4k = kvm_vm_stat(s->vm, "pages_4k");
	tap_diag("aligned: pages_2m=%" PRIu64 " pages_4k=%" PRIu64, p2m, p4k);
	tap_ok(p2m == want,
	       "aligned: every 2 MiB of the slot mapped huge at stage 2 "
	       "(pages_2m %" PRIu64 " == %" PRIu64 ")", p2m, want);
}

static void test_misaligned(void)
{
	uint64_t p2m, p4k, pages = SLOT_SIZE / PAGE;
	uint8_t *mem = thp_memory(PAGE, "misaligned");
	struct stage2_vm s;
	long huge;

	huge = thp_huge_pages(0, mem, SLOT_SIZE);
	tap_ok(huge > 0,
	       "misaligned: host memory is still THP-backed (%ld huge pages)",
	       huge);
	vm_setup(&s, mem);
	guest_touch(&s, "misaligned", 0x5a5a0002);
	p2m = kvm_vm_stat(s.vm, "pages_2m");
	p4k = kvm_vm_stat(s.vm, "pages_4k");
	tap_diag("misaligned: pages_2m=%" PRIu64 " pages_4k=%" PRIu64,
		 p2m, p4k);
	tap_ok(p2m == 0,
	       "misaligned by 4 KiB: no stage-2 huge mapping (pages_2m %"
	       PRIu64 ")", p2m);
	tap_ok(p4k >= pages,
	       "misaligned: the slot is mapped with 4 KiB pages (pages_4k %"
	       PRIu64 " >= %" PRIu64 ")", p4k, pages);
	vm_free(&s);
	thp_free(mem, SLOT_SIZE);
}

/* Register the aligned VM, let the controller lower N_hl to the floor. */
static void test_limited(struct stage2_vm *s)
{
	uint64_t total = SLOT_SIZE / thp_pmd_size(), limit, hc;
	uint64_t sum, p2m, p4k;
	struct kvm_limit l;
	long huge;

	sum = thp_checksum(s->mem, SLOT_SIZE);
	if (!kvm_limit_to_floor(&l, "kvm-stage2", s->mem, SLOT_SIZE,
				SLOT_GPA))
		return;
	limit = l.limit;
	hc = l.hc;
	tap_ok(limit == KVM_LIMIT_FLOOR,
	       "limit: controller lowered N_hl from %" PRIu64 " to the floor %d",
	       total, KVM_LIMIT_FLOOR);
	huge = thp_huge_pages(0, s->mem, SLOT_SIZE);
	tap_ok(hc == limit && huge == (long)limit,
	       "limit: huge pages follow N_hl (N_hc %" PRIu64
	       ", AnonHugePages %ld, N_hl %" PRIu64 ")", hc, huge, limit);
	tap_ok(thp_checksum(s->mem, SLOT_SIZE) == sum,
	       "limit: guest memory unchanged by the splits");
	p2m = kvm_vm_stat(s->vm, "pages_2m");
	tap_ok(p2m <= limit,
	       "limit: split huge pages left stage 2 at once (pages_2m %"
	       PRIu64 " <= N_hl %" PRIu64 ")", p2m, limit);

	guest_touch(s, "limited", 0x1e5e0003);
	p2m = kvm_vm_stat(s->vm, "pages_2m");
	p4k = kvm_vm_stat(s->vm, "pages_4k");
	tap_diag("limited: pages_2m=%" PRIu64 " pages_4k=%" PRIu64, p2m, p4k);
	tap_ok(p2m == limit,
	       "limited: stage-2 huge mappings match N_hl after the guest "
	       "ran again (pages_2m %" PRIu64 " == %" PRIu64 ")", p2m, limit);
	tap_ok(p4k >= (total - limit) * (thp_pmd_size() / PAGE),
	       "limited: the split part is mapped with 4 KiB pages "
	       "(pages_4k %" PRIu64 ")", p4k);

	/* Lifting the limit lets the memory be huge again, at stage 2 too. */
	if (kvm_limit_mode(&l, "off") &&
	    tap_ok(!madvise(s->mem, SLOT_SIZE, MADV_COLLAPSE),
		   "restored: MADV_COLLAPSE of the slot after mode off (%s)",
		   strerror(errno))) {
		guest_touch(s, "restored", 0x2e5e0004);
		p2m = kvm_vm_stat(s->vm, "pages_2m");
		tap_ok(p2m == total,
		       "restored: stage 2 is huge again once the limit is "
		       "lifted (pages_2m %" PRIu64 " == %" PRIu64 ")",
		       p2m, total);
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
	vm_free(&aligned);
	return tap_done();
}
