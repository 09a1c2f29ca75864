// SPDX-License-Identifier: GPL-2.0
/* tlbb-test-arch: aarch64 (KVM_ARM_VCPU_INIT, AArch64 core registers) */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>

#include "kvm_util.h"
#include "tap.h"

void kvm_vcpu_init_arm64(struct kvm_vcpu *vcpu)
{
	struct kvm_vcpu_init init;

	memset(&init, 0, sizeof(init));
	kvm_ioctl(vcpu->vm->fd, KVM_ARM_PREFERRED_TARGET, &init,
		  "KVM_ARM_PREFERRED_TARGET");
	kvm_ioctl(vcpu->fd, KVM_ARM_VCPU_INIT, &init, "KVM_ARM_VCPU_INIT");
}

void kvm_vcpu_set_core_reg(struct kvm_vcpu *vcpu, unsigned int reg,
			   uint64_t val)
{
	size_t off = reg == KVM_ARM64_PC ?
		offsetof(struct kvm_regs, regs.pc) :
		offsetof(struct kvm_regs, regs.regs) + reg * sizeof(uint64_t);
	struct kvm_one_reg r = {
		.id = KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM_CORE |
		      off / sizeof(uint32_t),
		.addr = (uintptr_t)&val,
	};

	if (reg > 30 && reg != KVM_ARM64_PC)
		tap_bail("%s: no core register %u", __func__, reg);
	kvm_ioctl(vcpu->fd, KVM_SET_ONE_REG, &r, "KVM_SET_ONE_REG");
}
