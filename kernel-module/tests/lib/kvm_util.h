/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small KVM helper library in the style of the kernel's KVM selftests:
 * create a VM, add memslots, create a vCPU with the MMU off (so
 * guest-physical = virtual address): on x86 in 32-bit protected mode
 * (kvm_util_x86.c), on arm64 in AArch64 EL1 (kvm_util_arm64.c); run it,
 * and read the VM's and vCPU's binary statistics (KVM_GET_STATS_FD), e.g.
 * pages_2m (x86) or exits.
 *
 * Every helper aborts the test (tap_bail) when the ioctl fails: a test
 * cannot go on without its VM.
 */
#ifndef TLBB_TEST_KVM_UTIL_H
#define TLBB_TEST_KVM_UTIL_H

#include <linux/kvm.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ioctl.h>

/* ioctl() that aborts the test (tap_bail) on failure; the caller has tap.h. */
#define kvm_ioctl(fd, req, arg, what) ({				\
	int __r = ioctl(fd, req, arg);					\
	if (__r < 0)							\
		tap_bail("%s: %s", what, strerror(errno));		\
	__r; })

struct kvm_vm {
	int kvm_fd;
	int fd;
	int stats_fd;		/* -1: no binary stats (before 5.14): debugfs */
};

struct kvm_vcpu {
	struct kvm_vm *vm;
	int fd;
	int stats_fd;		/* -1 until kvm_vcpu_stat() opens it */
	struct kvm_run *run;
	size_t run_size;
};

struct kvm_vm *kvm_vm_create(void);
void kvm_vm_free(struct kvm_vm *vm);
/* KVM_SET_USER_MEMORY_REGION; size 0 deletes the slot. */
void kvm_vm_set_memslot(struct kvm_vm *vm, uint32_t slot, uint64_t gpa,
			void *hva, uint64_t size);
/*
 * Read one VM statistic by name ("pages_2m"); aborts if it is absent.
 * Kernels before 5.14 have no binary stats fd: the VM's debugfs directory
 * is read instead, where x86's pages_2m is "largepages" (2 MiB and 1 GiB
 * mappings: the tests map no 1 GiB page) and pages_4k does not exist.
 */
uint64_t kvm_vm_stat(struct kvm_vm *vm, const char *name);
/* Whether kvm_vm_stat(vm, name) has a value on this kernel. */
bool kvm_vm_has_stat(struct kvm_vm *vm, const char *name);
/*
 * Whether the VM statistics are gauges of what is mapped now (binary stats
 * fd); debugfs's largepages on 5.10 only ever counts up.
 */
bool kvm_vm_stat_is_gauge(struct kvm_vm *vm);

struct kvm_vcpu *kvm_vcpu_create(struct kvm_vm *vm, uint32_t id);
void kvm_vcpu_free(struct kvm_vcpu *vcpu);
/*
 * Read one vCPU statistic by name ("exits"); aborts if it is absent.
 * Before 5.14 (no binary stats fd) the VM's debugfs file of that name is
 * read: the sum over all vCPUs of the VM, the vCPU's own with one vCPU.
 */
uint64_t kvm_vcpu_stat(struct kvm_vcpu *vcpu, const char *name);

#if defined(__x86_64__)
/*
 * Flat 4 GiB code and data segments, CR0.PE=1, CR0.PG=0, EFER=0: the vCPU
 * runs 32-bit code at entry with guest-physical = linear addresses.
 */
void kvm_vcpu_setup_pm32(struct kvm_vcpu *vcpu);
/* Set eip (rip), eax, ebx, ecx, edx, clear the rest, rflags = 2. */
void kvm_vcpu_set_regs32(struct kvm_vcpu *vcpu, uint32_t eip, uint32_t eax,
			 uint32_t ebx, uint32_t ecx, uint32_t edx);
#elif defined(__aarch64__)
/*
 * KVM_ARM_VCPU_INIT with the host's preferred target (PSCI 0.2+ is on by
 * default): the vCPU starts in AArch64 EL1h with the MMU off, so its
 * addresses are guest-physical.
 */
void kvm_vcpu_init_arm64(struct kvm_vcpu *vcpu);
/* Set a core register: x0..x30 as 0..30, KVM_ARM64_PC for the pc. */
#define KVM_ARM64_PC	32
void kvm_vcpu_set_core_reg(struct kvm_vcpu *vcpu, unsigned int reg,
			   uint64_t val);
#endif
/* KVM_RUN once; returns run->exit_reason (aborts on ioctl failure). */
uint32_t kvm_vcpu_run(struct kvm_vcpu *vcpu);
/* A human-readable description of the last exit, for diagnostics. */
const char *kvm_vcpu_exit_str(struct kvm_vcpu *vcpu);

#endif
