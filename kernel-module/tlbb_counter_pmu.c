// SPDX-License-Identifier: GPL-2.0
/*
 * PMU counting backend: one kernel perf counter per vCPU thread and per
 * page-size-split TLB walk event, chosen by CPU model. Counting on the vCPU
 * threads measures both translation stages together
 * (docs/design/background.md#counting-tlb-refills-by-page-size).
 *
 * Events and the CPUs they are used on: core/tlbb_pmu_events.def (Intel
 * Haswell .. Granite Rapids, AMD Zen 1..5, Arm DTLB/ITLB_WALK_BLOCK/PAGE),
 * checked against the kernel's perf event database by
 * tools/kernels/check-pmu-events.py; the CPU matching is core/tlbb_pmu_table.c
 * (unit-tested in userspace).
 * Anything else, or a PMU refusing an event (no PMU at all under QEMU TCG:
 * -ENOENT), leaves the backend "unavailable: <reason>".
 */
#include <linux/perf_event.h>
#include <linux/pid.h>
#include <linux/sched/task.h>
#include <linux/slab.h>

#include "tlbb.h"
#include "core/tlbb_pmu_table.h"

struct tlbb_pmu_priv {
	const struct tlbb_pmu_model *model;
	unsigned int nr;		/* nr_vcpus * model->nr */
	struct perf_event **ev;
	u64 *last;
};

#ifdef CONFIG_X86
#include <asm/processor.h>

static void tlbb_cpu_id(struct tlbb_cpu_id *id)
{
	const struct cpuinfo_x86 *c = &boot_cpu_data;

	id->arch = TLBB_CPU_X86;
	id->vendor = c->x86_vendor == X86_VENDOR_INTEL ? TLBB_VENDOR_INTEL :
		     c->x86_vendor == X86_VENDOR_AMD ? TLBB_VENDOR_AMD :
		     TLBB_VENDOR_UNKNOWN;
	id->family = c->x86;
	id->model = c->x86_model;
}
#elif defined(CONFIG_ARM64)
#include <asm/cputype.h>

static void tlbb_cpu_id(struct tlbb_cpu_id *id)
{
	id->arch = TLBB_CPU_ARM64;
	id->midr = read_cpuid_id();
}
#else
static void tlbb_cpu_id(struct tlbb_cpu_id *id)
{
	id->arch = TLBB_CPU_OTHER;
}
#endif

static const struct tlbb_pmu_model *tlbb_pmu_model(char *why, size_t len)
{
	struct tlbb_cpu_id id = {};

	tlbb_cpu_id(&id);
	return tlbb_pmu_model_for(&id, why, len);
}

static void tlbb_pmu_free(struct tlbb_pmu_priv *p)
{
	unsigned int i;

	for (i = 0; i < p->nr; i++)
		if (p->ev[i])
			perf_event_release_kernel(p->ev[i]);
	kfree(p->ev);
	kfree(p->last);
	kfree(p);
}

static int tlbb_pmu_start(struct tlbb_vm *vm)
{
	const struct tlbb_pmu_model *m;
	struct tlbb_pmu_priv *p;
	unsigned int v, e;
	int ret;

	m = tlbb_pmu_model(vm->backend_desc, sizeof(vm->backend_desc));
	if (!m)
		return -ENODEV;
	if (!vm->nr_vcpus) {
		strscpy(vm->backend_desc,
			"unavailable: no vcpu_tids to count on",
			sizeof(vm->backend_desc));
		return -EINVAL;
	}

	p = kzalloc(sizeof(*p), GFP_KERNEL);
	if (!p)
		goto nomem;
	p->model = m;
	p->nr = vm->nr_vcpus * m->nr;
	p->ev = kcalloc(p->nr, sizeof(*p->ev), GFP_KERNEL);
	p->last = kcalloc(p->nr, sizeof(*p->last), GFP_KERNEL);
	if (!p->ev || !p->last)
		goto nomem_free;

	for (v = 0; v < vm->nr_vcpus; v++) {
		struct task_struct *t = get_pid_task(vm->vcpus[v], PIDTYPE_PID);

		if (!t) {
			snprintf(vm->backend_desc, sizeof(vm->backend_desc),
				 "unavailable: vCPU thread %d has exited",
				 pid_vnr(vm->vcpus[v]));
			ret = -ESRCH;
			goto err;
		}
		for (e = 0; e < m->nr; e++) {
			struct perf_event_attr attr = {
				.type = PERF_TYPE_RAW,
				.size = sizeof(attr),
				.config = m->ev[e].config,
			};
			struct perf_event *ev;

			ev = perf_event_create_kernel_counter(&attr, -1, t,
							      NULL, NULL);
			if (IS_ERR(ev)) {
				ret = PTR_ERR(ev);
				snprintf(vm->backend_desc,
					 sizeof(vm->backend_desc),
					 "unavailable: PMU refused 0x%llx (%s): %d",
					 m->ev[e].config, m->ev[e].name, ret);
				put_task_struct(t);
				goto err;
			}
			p->ev[v * m->nr + e] = ev;
		}
		put_task_struct(t);
	}
	vm->backend_priv = p;
	snprintf(vm->backend_desc, sizeof(vm->backend_desc), "pmu: %s",
		 m->name);
	return 0;

nomem_free:
	tlbb_pmu_free(p);
nomem:
	strscpy(vm->backend_desc, "unavailable: out of memory",
		sizeof(vm->backend_desc));
	return -ENOMEM;
err:
	tlbb_pmu_free(p);
	return ret;
}

static void tlbb_pmu_read(struct tlbb_vm *vm, u64 *huge, u64 *small)
{
	struct tlbb_pmu_priv *p = vm->backend_priv;
	unsigned int i;

	*huge = 0;
	*small = 0;
	for (i = 0; i < p->nr; i++) {
		u64 enabled, running, now, delta;

		now = perf_event_read_value(p->ev[i], &enabled, &running);
		delta = now - p->last[i];
		p->last[i] = now;
		if (p->model->ev[i % p->model->nr].huge)
			*huge += delta;
		else
			*small += delta;
	}
}

static void tlbb_pmu_stop(struct tlbb_vm *vm)
{
	tlbb_pmu_free(vm->backend_priv);
	vm->backend_priv = NULL;
}

const struct tlbb_counter_ops tlbb_counter_pmu_ops = {
	.name = "pmu",
	.start = tlbb_pmu_start,
	.read = tlbb_pmu_read,
	.stop = tlbb_pmu_stop,
};
