// SPDX-License-Identifier: GPL-2.0
/*
 * The architecture-neutral part of kvm_util.h: VM, memslots, statistics,
 * vCPU creation, KVM_RUN.  The vCPU setup is in kvm_util_x86.c and
 * kvm_util_arm64.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kvm_util.h"
#include "tap.h"

struct kvm_vm *kvm_vm_create(void)
{
	struct kvm_vm *vm = calloc(1, sizeof(*vm));

	if (!vm)
		tap_bail("calloc");
	vm->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm->kvm_fd < 0 && errno == ENOENT) {
		/* No KVM in this guest: the rest cannot run, which is no pass. */
		tap_skip("no /dev/kvm", "KVM VM for the rest of this test");
		exit(tap_done());
	}
	if (vm->kvm_fd < 0)
		tap_bail("open /dev/kvm: %s", strerror(errno));
	vm->fd = kvm_ioctl(vm->kvm_fd, KVM_CREATE_VM, 0, "KVM_CREATE_VM");
	vm->stats_fd = ioctl(vm->fd, KVM_GET_STATS_FD, NULL);
	if (vm->stats_fd < 0 && errno != ENOTTY && errno != EINVAL)
		tap_bail("KVM_GET_STATS_FD (vm): %s", strerror(errno));
	return vm;
}

void kvm_vm_free(struct kvm_vm *vm)
{
	if (vm->stats_fd >= 0)
		close(vm->stats_fd);
	close(vm->fd);
	close(vm->kvm_fd);
	free(vm);
}

void kvm_vm_set_memslot(struct kvm_vm *vm, uint32_t slot, uint64_t gpa,
			void *hva, uint64_t size)
{
	struct kvm_userspace_memory_region r = {
		.slot = slot,
		.guest_phys_addr = gpa,
		.memory_size = size,
		.userspace_addr = (uintptr_t)hva,
	};

	kvm_ioctl(vm->fd, KVM_SET_USER_MEMORY_REGION, &r,
		  "KVM_SET_USER_MEMORY_REGION");
}

static void pread_all(int fd, void *buf, size_t len, off_t off)
{
	ssize_t n = pread(fd, buf, len, off);

	if (n < 0 || (size_t)n != len)
		tap_bail("read KVM stats fd at %lld: %s", (long long)off,
			 n < 0 ? strerror(errno) : "short read");
}

static uint64_t stats_fd_read(int fd, const char *name, const char *whose)
{
	struct kvm_stats_header h;
	struct kvm_stats_desc *d;
	size_t dsize;
	uint64_t val;
	uint32_t i;

	pread_all(fd, &h, sizeof(h), 0);
	dsize = sizeof(*d) + h.name_size;
	d = malloc(dsize);
	if (!d)
		tap_bail("malloc");
	for (i = 0; i < h.num_desc; i++) {
		pread_all(fd, d, dsize, h.desc_offset + i * dsize);
		if (strncmp(d->name, name, h.name_size))
			continue;
		if (d->size != 1)
			tap_bail("KVM stat %s has %u values", name, d->size);
		pread_all(fd, &val, sizeof(val),
			  h.data_offset + d->offset);
		free(d);
		return val;
	}
	free(d);
	tap_bail("KVM has no %s statistic named %s", whose, name);
}

/* The VM's debugfs file of statistic @name (kernels without stats fd). */
static const char *debugfs_stat_path(struct kvm_vm *vm, const char *name)
{
	static char path[128];

	if (!strcmp(name, "pages_2m"))
		name = "largepages";
	snprintf(path, sizeof(path), "/sys/kernel/debug/kvm/%d-%d/%s",
		 (int)getpid(), vm->fd, name);
	return path;
}

bool kvm_vm_stat_is_gauge(struct kvm_vm *vm)
{
	return vm->stats_fd >= 0;
}

bool kvm_vm_has_stat(struct kvm_vm *vm, const char *name)
{
	if (vm->stats_fd >= 0)
		return true;	/* stats_fd_read() aborts on a missing name */
	return !access(debugfs_stat_path(vm, name), R_OK);
}

uint64_t kvm_vm_stat(struct kvm_vm *vm, const char *name)
{
	const char *path;
	unsigned long long val;
	FILE *f;
	int n;

	if (vm->stats_fd >= 0)
		return stats_fd_read(vm->stats_fd, name, "VM");
	path = debugfs_stat_path(vm, name);
	f = fopen(path, "r");
	if (!f)
		tap_bail("KVM has no VM statistic %s (%s: %s)", name, path,
			 strerror(errno));
	n = fscanf(f, "%llu", &val);
	fclose(f);
	if (n != 1)
		tap_bail("%s: not a number", path);
	return val;
}

uint64_t kvm_vcpu_stat(struct kvm_vcpu *vcpu, const char *name)
{
	/* before 5.14: the VM's debugfs file sums the stat of its vCPUs */
	if (vcpu->vm->stats_fd < 0)
		return kvm_vm_stat(vcpu->vm, name);
	if (vcpu->stats_fd < 0)
		vcpu->stats_fd = kvm_ioctl(vcpu->fd, KVM_GET_STATS_FD, NULL,
					   "KVM_GET_STATS_FD (vcpu)");
	return stats_fd_read(vcpu->stats_fd, name, "vCPU");
}

struct kvm_vcpu *kvm_vcpu_create(struct kvm_vm *vm, uint32_t id)
{
	struct kvm_vcpu *vcpu = calloc(1, sizeof(*vcpu));
	int size;

	if (!vcpu)
		tap_bail("calloc");
	vcpu->vm = vm;
	vcpu->stats_fd = -1;
	vcpu->fd = kvm_ioctl(vm->fd, KVM_CREATE_VCPU, (unsigned long)id,
			     "KVM_CREATE_VCPU");
	size = kvm_ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0,
			 "KVM_GET_VCPU_MMAP_SIZE");
	vcpu->run_size = size;
	vcpu->run = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 vcpu->fd, 0);
	if (vcpu->run == MAP_FAILED)
		tap_bail("mmap kvm_run: %s", strerror(errno));
	return vcpu;
}

void kvm_vcpu_free(struct kvm_vcpu *vcpu)
{
	munmap(vcpu->run, vcpu->run_size);
	if (vcpu->stats_fd >= 0)
		close(vcpu->stats_fd);
	close(vcpu->fd);
	free(vcpu);
}

uint32_t kvm_vcpu_run(struct kvm_vcpu *vcpu)
{
	int r;

	do {
		r = ioctl(vcpu->fd, KVM_RUN, NULL);
	} while (r < 0 && errno == EINTR);
	if (r < 0)
		tap_bail("KVM_RUN: %s", strerror(errno));
	return vcpu->run->exit_reason;
}

const char *kvm_vcpu_exit_str(struct kvm_vcpu *vcpu)
{
	static char buf[160];
	struct kvm_run *run = vcpu->run;

	switch (run->exit_reason) {
	case KVM_EXIT_IO:
		snprintf(buf, sizeof(buf), "KVM_EXIT_IO %s port %#x size %u",
			 run->io.direction == KVM_EXIT_IO_OUT ? "out" : "in",
			 run->io.port, run->io.size);
		break;
	case KVM_EXIT_MMIO:
		snprintf(buf, sizeof(buf), "KVM_EXIT_MMIO %s %#llx len %u",
			 run->mmio.is_write ? "write" : "read",
			 (unsigned long long)run->mmio.phys_addr, run->mmio.len);
		break;
	case KVM_EXIT_SYSTEM_EVENT:
		snprintf(buf, sizeof(buf), "KVM_EXIT_SYSTEM_EVENT type %u",
			 run->system_event.type);
		break;
	case KVM_EXIT_FAIL_ENTRY:
		snprintf(buf, sizeof(buf), "KVM_EXIT_FAIL_ENTRY reason %#llx",
			 (unsigned long long)
			 run->fail_entry.hardware_entry_failure_reason);
		break;
	case KVM_EXIT_INTERNAL_ERROR:
		snprintf(buf, sizeof(buf), "KVM_EXIT_INTERNAL_ERROR suberror %u",
			 run->internal.suberror);
		break;
	case KVM_EXIT_SHUTDOWN:
		snprintf(buf, sizeof(buf), "KVM_EXIT_SHUTDOWN (triple fault)");
		break;
	default:
		snprintf(buf, sizeof(buf), "exit reason %u", run->exit_reason);
	}
	return buf;
}
