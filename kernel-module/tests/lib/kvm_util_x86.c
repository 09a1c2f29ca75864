// SPDX-License-Identifier: GPL-2.0
/* tlbb-test-arch: x86_64 (kvm_sregs, 32-bit protected-mode vCPU setup) */
#include <errno.h>
#include <string.h>
#include <sys/ioctl.h>

#include "kvm_util.h"
#include "tap.h"

static void flat_segment(struct kvm_segment *s, uint16_t sel, uint8_t type)
{
	memset(s, 0, sizeof(*s));
	s->base = 0;
	s->limit = 0xffffffff;
	s->selector = sel;
	s->type = type;
	s->present = 1;
	s->dpl = 0;
	s->db = 1;	/* 32-bit */
	s->s = 1;	/* code/data */
	s->g = 1;	/* 4 KiB granularity */
}

void kvm_vcpu_setup_pm32(struct kvm_vcpu *vcpu)
{
	struct kvm_sregs sregs;

	kvm_ioctl(vcpu->fd, KVM_GET_SREGS, &sregs, "KVM_GET_SREGS");
	flat_segment(&sregs.cs, 0x08, 11);	/* execute/read, accessed */
	flat_segment(&sregs.ds, 0x10, 3);	/* read/write, accessed */
	sregs.es = sregs.ds;
	sregs.fs = sregs.ds;
	sregs.gs = sregs.ds;
	sregs.ss = sregs.ds;
	sregs.cr0 = (sregs.cr0 | 1) & ~(1ul << 31);	/* PE on, PG off */
	sregs.cr4 = 0;
	sregs.efer = 0;
	kvm_ioctl(vcpu->fd, KVM_SET_SREGS, &sregs, "KVM_SET_SREGS");
}

void kvm_vcpu_set_regs32(struct kvm_vcpu *vcpu, uint32_t eip, uint32_t eax,
			 uint32_t ebx, uint32_t ecx, uint32_t edx)
{
	struct kvm_regs regs = {
		.rip = eip, .rax = eax, .rbx = ebx, .rcx = ecx, .rdx = edx,
		.rflags = 2,
	};

	kvm_ioctl(vcpu->fd, KVM_SET_REGS, &regs, "KVM_SET_REGS");
}
