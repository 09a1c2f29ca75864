// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfs.h"
#include "kvm_stage2.h"
#include "tap.h"
#include "thp.h"
#include "tlbb_defs.h"
#include "util.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25	/* Linux 6.1 */
#endif

uint8_t *stage2_thp_memory(size_t misalign, const char *what)
{
	uint8_t *mem = thp_alloc(KVM_S2_SLOT_SIZE, misalign, 1);

	thp_fill(mem, KVM_S2_SLOT_SIZE, misalign + 1);
	tap_diag("%s: HVA %p, GPA %#lx, %ld host huge pages", what,
		 (void *)mem, KVM_S2_SLOT_GPA,
		 thp_huge_pages(0, mem, KVM_S2_SLOT_SIZE));
	return mem;
}

void stage2_vm_setup(struct stage2_vm *s, uint8_t *mem,
		     const void *payload, size_t len)
{
	s->mem = mem;
	s->code = mmap(NULL, KVM_S2_CODE_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	tap_require(s->code != MAP_FAILED, "mmap guest code");
	memcpy((uint8_t *)s->code + KVM_S2_ENTRY, payload, len);
	s->vm = kvm_vm_create();
	kvm_vm_set_memslot(s->vm, 0, KVM_S2_CODE_GPA, s->code,
			   KVM_S2_CODE_SIZE);
	kvm_vm_set_memslot(s->vm, 1, KVM_S2_SLOT_GPA, mem, KVM_S2_SLOT_SIZE);
	s->vcpu = kvm_vcpu_create(s->vm, 0);
}

void stage2_vm_free(struct stage2_vm *s)
{
	kvm_vcpu_free(s->vcpu);
	kvm_vm_free(s->vm);
	munmap(s->code, KVM_S2_CODE_SIZE);
}

bool stage2_check_marker(struct stage2_vm *s, const char *what,
			 uint32_t marker)
{
	size_t i, wrong = 0;
	uint32_t word;

	for (i = 0; i < KVM_S2_PAGES; i++) {
		memcpy(&word, s->mem + i * KVM_S2_PAGE, sizeof(word));
		wrong += word != marker;
	}
	return tap_ok(!wrong, "%s: guest wrote all %lu pages (%zu wrong)",
		      what, KVM_S2_PAGES, wrong);
}

/* The paper's mcf shape: huge group ~2.18 M/s, small group < 450/s. */
#define INJECT_HUGE	2180000
#define INJECT_SMALL	400

static bool set_ok(int err, const char *what)
{
	return tap_ok(!err, "limit: write %s (%s)", what,
		      err ? strerror(-err) : "ok");
}

bool kvm_limit_to_floor(struct kvm_limit *l, const char *prefix,
			void *hva, size_t size, uint64_t gpa)
{
	const char *vm = l->vm;
	struct stat st;
	uint64_t sum;
	double t0;
	long huge;
	bool ok = true;

	memset(l, 0, sizeof(*l));
	sum = thp_checksum(hva, size);
	if (!tap_ok(!stat(TLBB_CFS_ROOT, &st),
		    "limit: tlbbalance.ko is loaded (" TLBB_CFS_ROOT ")"))
		return false;
	snprintf(l->vm, sizeof(l->vm), "%s-%d", prefix, (int)getpid());
	if (!set_ok(tlbb_vm_create(vm), "mkdir vms/<vm>"))
		return false;
	ok &= set_ok(tlbb_set(vm, "pid", "%d\n", (int)getpid()), "pid");
	ok &= set_ok(tlbb_set(vm, "vcpu_tids", "%d\n", (int)gettid()),
		     "vcpu_tids");
	ok &= set_ok(tlbb_set(vm, "ranges", "%#lx %#zx %#" PRIx64 "\n",
			      (unsigned long)hva, size, gpa), "ranges");
	ok &= set_ok(tlbb_set_param(vm, TLBB_P_interval_ms, 10),
		     "interval_ms");
	ok &= set_ok(tlbb_set_param(vm, TLBB_P_sustain_ms, 0), "sustain_ms");
	ok &= set_ok(tlbb_set_param(vm, TLBB_P_samples, 1), "samples");
	ok &= set_ok(tlbb_set_param(vm, TLBB_P_step_pages, KVM_LIMIT_STEP),
		     "step_pages");
	ok &= set_ok(tlbb_set_param(vm, TLBB_P_floor_pages, KVM_LIMIT_FLOOR),
		     "floor_pages");
	ok &= set_ok(tlbb_set_mode(vm, TLBB_MODE_BALANCE), "mode balance");
	ok &= set_ok(tlbb_inject(vm, INJECT_HUGE, INJECT_SMALL),
		     "inject (huge-dominant refills)");
	if (!ok) {
		kvm_limit_remove(l);
		return false;
	}

	/* The limit steps down to the floor; the limiter follows it. */
	t0 = tlbb_now_s();
	while (tlbb_now_s() - t0 < 60) {
		l->limit = tlbb_stat_u64(vm, TLBB_S_huge_limit);
		l->hc = tlbb_stat_u64(vm, TLBB_S_huge_pages);
		if (l->limit == KVM_LIMIT_FLOOR && l->hc <= l->limit)
			break;
		usleep(20000);
	}
	l->secs = tlbb_now_s() - t0;
	tlbb_inject_off(vm);
	tap_diag("limit: N_hl=%" PRIu64 " N_hc=%" PRIu64 " after %.2f s, "
		 "splits=%" PRIu64, l->limit, l->hc, l->secs,
		 tlbb_stat_u64(vm, TLBB_S_splits));
	tap_ok(l->limit == KVM_LIMIT_FLOOR,
	       "limit: controller lowered N_hl from %zu to the floor %d",
	       size / thp_pmd_size(), KVM_LIMIT_FLOOR);
	huge = thp_huge_pages(0, hva, size);
	tap_ok(l->hc == l->limit && huge == (long)l->limit,
	       "limit: huge pages follow N_hl (module's PMD count N_hc %"
	       PRIu64 ", AnonHugePages %ld, N_hl %" PRIu64 ")",
	       l->hc, huge, l->limit);
	tap_ok(thp_checksum(hva, size) == sum,
	       "limit: guest memory unchanged by the splits");
	return true;
}

bool kvm_limit_mode(struct kvm_limit *l, enum tlbb_mode mode)
{
	char what[32];

	snprintf(what, sizeof(what), "mode %s", tlbb_mode_names[mode]);
	return set_ok(tlbb_set_mode(l->vm, mode), what);
}

void kvm_limit_remove(struct kvm_limit *l)
{
	tlbb_set_mode(l->vm, TLBB_MODE_OFF);
	set_ok(tlbb_vm_remove(l->vm), "rmdir vms/<vm>");
}

bool stage2_rehuge(uint8_t *mem, uint64_t want)
{
	int tries = 0, err;
	bool ok;

	/*
	 * EAGAIN is MADV_COLLAPSE's "a resource was temporarily unavailable"
	 * (a page lock, an LRU batch of the split pages not yet drained):
	 * seen once in CI on 7.2. Up to 100 tries 10 ms apart.
	 */
	do {
		err = madvise(mem, KVM_S2_SLOT_SIZE, MADV_COLLAPSE) ? errno : 0;
		if (err == EAGAIN)
			usleep(10000);
	} while (err == EAGAIN && ++tries < 100);
	if (!err)
		return true;
	if (err != EINVAL) {
		tap_diag("MADV_COLLAPSE: %s (%d tries)", strerror(err),
			 tries + 1);
		return false;
	}
	tap_diag("no MADV_COLLAPSE (before 6.1): waiting for khugepaged");
	thp_sysfs_set("khugepaged/scan_sleep_millisecs", "10");
	thp_sysfs_set("khugepaged/alloc_sleep_millisecs", "10");
	ok = thp_wait_huge(mem, KVM_S2_SLOT_SIZE, want, 20000) == (long)want;
	thp_sysfs_set("khugepaged/scan_sleep_millisecs", "10000");
	thp_sysfs_set("khugepaged/alloc_sleep_millisecs", "60000");
	return ok;
}
