/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Put one test KVM VM under tlbbalance.ko's limiter, the same way on x86
 * and arm64 (t_kvm_stage2*.c): this process's pid, the calling thread as
 * the only vCPU thread, one range (the memslot's HVA, size, GPA), balance
 * mode with a fast controller (a tick every 10 ms, no sustain, one sample)
 * stepping KVM_LIMIT_STEP huge pages down to the floor KVM_LIMIT_FLOOR,
 * driven by the test-only injection backend with the paper's mcf shape
 * (huge-dominant refills).  Every configfs write is one TAP check.
 */
#ifndef TLBB_TEST_KVM_LIMIT_H
#define TLBB_TEST_KVM_LIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
 * N_hl == floor and N_hc <= N_hl, stop injecting.  False when the module
 * is not loaded or a write failed (already reported; the VM directory is
 * removed again then).
 */
bool kvm_limit_to_floor(struct kvm_limit *l, const char *prefix,
			void *hva, size_t size, uint64_t gpa);
/* Write mode (e.g. "off"); one TAP check; true on success. */
bool kvm_limit_mode(struct kvm_limit *l, const char *mode);
/* Mode off and rmdir the VM directory (one TAP check). */
void kvm_limit_remove(struct kvm_limit *l);

#endif
