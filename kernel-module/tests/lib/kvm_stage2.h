/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What t_kvm_stage2 (x86) and t_kvm_stage2_arm64 share: the guest memory
 * layout, the VM (code slot and THP-backed data slot), the check that the
 * guest wrote its marker into every page, and the registration with
 * tlbbalance.ko's limiter.
 *
 * Layout: slot 0 at GPA 0 holds the payload at KVM_S2_ENTRY; slot 1, the
 * memslot under test, is KVM_S2_SLOT_SIZE at KVM_S2_SLOT_GPA (2 MiB
 * aligned); the payload writes a marker into each of its 4 KiB pages.
 *
 * The limiter: this process's pid, the calling thread as
 * the only vCPU thread, one range (the memslot's HVA, size, GPA), balance
 * mode with a fast controller (a tick every 10 ms, no sustain, one sample)
 * stepping KVM_LIMIT_STEP huge pages down to the floor KVM_LIMIT_FLOOR,
 * driven by the test-only injection backend with the paper's mcf shape
 * (huge-dominant refills).  Every configfs write is one TAP check.
 */
#ifndef TLBB_TEST_KVM_STAGE2_H
#define TLBB_TEST_KVM_STAGE2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kvm_util.h"
#include "tlbb_defs.h"

#define KVM_S2_CODE_GPA		0x0ul
#define KVM_S2_CODE_SIZE	0x10000ul
#define KVM_S2_ENTRY		0x1000ul
#define KVM_S2_SLOT_GPA		0x40000000ul	/* 1 GiB: 2 MiB aligned */
#define KVM_S2_SLOT_SIZE	(64ul << 20)
#define KVM_S2_PAGE		4096ul
#define KVM_S2_PAGES		(KVM_S2_SLOT_SIZE / KVM_S2_PAGE)

struct stage2_vm {
	struct kvm_vm *vm;
	struct kvm_vcpu *vcpu;
	void *code;
	uint8_t *mem;
};

/*
 * KVM_S2_SLOT_SIZE of anonymous memory misalign bytes after a 2 MiB
 * boundary, MADV_HUGEPAGE, filled (so THP-backed where it can be); prints
 * its HVA and host huge pages.
 */
uint8_t *stage2_thp_memory(size_t misalign, const char *what);
/*
 * A VM with the payload (len bytes) at KVM_S2_ENTRY of slot 0, mem as
 * slot 1, one vCPU not yet set up (the caller's architecture does that).
 */
void stage2_vm_setup(struct stage2_vm *s, uint8_t *mem,
		     const void *payload, size_t len);
void stage2_vm_free(struct stage2_vm *s);
/* One TAP check: the first word of every page of the slot is marker. */
bool stage2_check_marker(struct stage2_vm *s, const char *what,
			 uint32_t marker);
/*
 * Make the slot (KVM_S2_SLOT_SIZE at mem) huge again after a limit is
 * lifted: MADV_COLLAPSE (Linux 6.1), else khugepaged scanning every 10 ms,
 * for 20 s at most. Whether want huge pages back it.
 */
bool stage2_rehuge(uint8_t *mem, uint64_t want);

#define KVM_LIMIT_FLOOR	16
#define KVM_LIMIT_STEP	4

struct kvm_limit {
	char vm[64];		/* the configfs VM directory's name */
	uint64_t limit;		/* N_hl when the wait ended */
	uint64_t hc;		/* N_hc (the module's PMD count) then */
	double secs;		/* how long the controller took */
};

/*
 * Register the VM (named "<prefix>-<pid>"), inject, wait up to 60 s for
 * N_hl == floor and N_hc <= N_hl, stop injecting; then check (TAP) that
 * N_hl is the floor, N_hc and AnonHugePages of the range equal it and the
 * memory's checksum did not change.  False when the module is not loaded
 * or a write failed (already reported; the VM directory is removed again
 * then).
 */
bool kvm_limit_to_floor(struct kvm_limit *l, const char *prefix,
			void *hva, size_t size, uint64_t gpa);
/* Write mode (e.g. TLBB_MODE_OFF); one TAP check; true on success. */
bool kvm_limit_mode(struct kvm_limit *l, enum tlbb_mode mode);
/* Mode off and rmdir the VM directory (one TAP check). */
void kvm_limit_remove(struct kvm_limit *l);

#endif
