// SPDX-License-Identifier: GPL-2.0
/*
 * PMU counting backend: one kernel perf counter per vCPU thread and per
 * page-size-split TLB walk event, chosen by CPU model. Counting on the vCPU
 * threads measures both translation stages together (domain.md).
 *
 * Events (raw encodings, event | umask << 8 on x86):
 *   Intel Skylake .. Ice Lake: DTLB load walks 0x08, store walks 0x49, ITLB
 *     walks 0x85; umask 0x02 = 4K (small), 0x0c = 2M/4M + 1G (huge).
 *   Intel Sapphire/Emerald Rapids: loads 0x12, stores 0x13, ITLB 0x11.
 *   AMD Zen (family 17h..1Ah): L1 DTLB miss 0x45, umask 0x11 = 4K (L2 hit
 *     or miss), 0xcc = 2M + 1G. Data side only.
 *   Arm (arm64): DTLB_WALK_PAGE 0x818a / ITLB_WALK_PAGE 0x818b (small),
 *     DTLB_WALK_BLOCK 0x8188 / ITLB_WALK_BLOCK 0x8189 (huge); whether a core
 *     has them is learnt by creating the counters.
 * Anything else, or a PMU refusing an event (no PMU at all under QEMU TCG:
 * -ENOENT), leaves the backend "unavailable: <reason>".
 */
#include <linux/perf_event.h>
#include <linux/pid.h>
#include <linux/sched/task.h>
#include <linux/slab.h>

#include "tlbb.h"

struct tlbb_pmu_event {
	u64 config;
	bool huge;
	const char *name;
};

struct tlbb_pmu_model {
	const char *name;
	const struct tlbb_pmu_event *ev;
	unsigned int nr;
};

struct tlbb_pmu_priv {
	const struct tlbb_pmu_model *model;
	unsigned int nr;		/* nr_vcpus * model->nr */
	struct perf_event **ev;
	u64 *last;
};

#ifdef CONFIG_X86
#include <asm/processor.h>

static const struct tlbb_pmu_event tlbb_ev_skl[] = {
	{ 0x0208, false, "dtlb_load_misses.walk_completed_4k" },
	{ 0x0c08, true, "dtlb_load_misses.walk_completed_2m_4m_1g" },
	{ 0x0249, false, "dtlb_store_misses.walk_completed_4k" },
	{ 0x0c49, true, "dtlb_store_misses.walk_completed_2m_4m_1g" },
	{ 0x0285, false, "itlb_misses.walk_completed_4k" },
	{ 0x0c85, true, "itlb_misses.walk_completed_2m_4m_1g" },
};

static const struct tlbb_pmu_event tlbb_ev_spr[] = {
	{ 0x0212, false, "dtlb_load_misses.walk_completed_4k" },
	{ 0x0c12, true, "dtlb_load_misses.walk_completed_2m_4m_1g" },
	{ 0x0213, false, "dtlb_store_misses.walk_completed_4k" },
	{ 0x0c13, true, "dtlb_store_misses.walk_completed_2m_4m_1g" },
	{ 0x0211, false, "itlb_misses.walk_completed_4k" },
	{ 0x0c11, true, "itlb_misses.walk_completed_2m_4m_1g" },
};

static const struct tlbb_pmu_event tlbb_ev_zen[] = {
	{ 0x1145, false, "ls_l1_d_tlb_miss.4k" },
	{ 0xcc45, true, "ls_l1_d_tlb_miss.2m_1g" },
};

static const struct tlbb_pmu_model tlbb_models[] = {
	{ "intel-skl-icl", tlbb_ev_skl, ARRAY_SIZE(tlbb_ev_skl) },
	{ "intel-spr", tlbb_ev_spr, ARRAY_SIZE(tlbb_ev_spr) },
	{ "amd-zen", tlbb_ev_zen, ARRAY_SIZE(tlbb_ev_zen) },
};

/* Intel family 6 models: Skylake .. Ice Lake client and server. */
static const u8 tlbb_intel_skl_icl[] = {
	0x4e, 0x5e, 0x55, 0x8e, 0x9e, 0xa5, 0xa6,	/* SKL..CML */
	0x66, 0x7d, 0x7e, 0x6a, 0x6c, 0x8c, 0x8d,	/* CNL/ICL/ICX/TGL */
};

static const struct tlbb_pmu_model *tlbb_pmu_model(char *why, size_t len)
{
	const struct cpuinfo_x86 *c = &boot_cpu_data;
	unsigned int i;

	if (c->x86_vendor == X86_VENDOR_INTEL && c->x86 == 6) {
		for (i = 0; i < ARRAY_SIZE(tlbb_intel_skl_icl); i++)
			if (c->x86_model == tlbb_intel_skl_icl[i])
				return &tlbb_models[0];
		if (c->x86_model == 0x8f || c->x86_model == 0xcf)
			return &tlbb_models[1];
	}
	if ((c->x86_vendor == X86_VENDOR_AMD ||
	     c->x86_vendor == X86_VENDOR_HYGON) && c->x86 >= 0x17)
		return &tlbb_models[2];
	snprintf(why, len,
		 "unavailable: no size-split TLB walk events known for CPU vendor %u family 0x%x model 0x%x",
		 c->x86_vendor, c->x86, c->x86_model);
	return NULL;
}
#elif defined(CONFIG_ARM64)
static const struct tlbb_pmu_event tlbb_ev_arm[] = {
	{ 0x818a, false, "dtlb_walk_page" },
	{ 0x8188, true, "dtlb_walk_block" },
	{ 0x818b, false, "itlb_walk_page" },
	{ 0x8189, true, "itlb_walk_block" },
};

static const struct tlbb_pmu_model tlbb_arm = {
	"arm-walk-block-page", tlbb_ev_arm, ARRAY_SIZE(tlbb_ev_arm)
};

static const struct tlbb_pmu_model *tlbb_pmu_model(char *why, size_t len)
{
	return &tlbb_arm;
}
#else
static const struct tlbb_pmu_model *tlbb_pmu_model(char *why, size_t len)
{
	snprintf(why, len,
		 "unavailable: no size-split TLB walk events known for this architecture");
	return NULL;
}
#endif

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
					 "unavailable: PMU refused %s (0x%llx): %d",
					 m->ev[e].name, m->ev[e].config, ret);
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
