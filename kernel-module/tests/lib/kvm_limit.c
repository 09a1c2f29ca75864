// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfs.h"
#include "kvm_limit.h"
#include "tap.h"
#include "tlbb_defs.h"
#include "util.h"

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
	double t0;
	bool ok = true;

	memset(l, 0, sizeof(*l));
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
	ok &= set_ok(tlbb_set(vm, "mode", "balance\n"), "mode balance");
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
	return true;
}

bool kvm_limit_mode(struct kvm_limit *l, const char *mode)
{
	char what[32];

	snprintf(what, sizeof(what), "mode %s", mode);
	return set_ok(tlbb_set(l->vm, "mode", "%s\n", mode), what);
}

void kvm_limit_remove(struct kvm_limit *l)
{
	tlbb_set(l->vm, "mode", "off\n");
	set_ok(tlbb_vm_remove(l->vm), "rmdir vms/<vm>");
}
