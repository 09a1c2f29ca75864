// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Event tables and CPU matching of the PMU backend, generated from
 * tlbb_pmu_events.def (checked against the kernel's perf event database by
 * tools/kernels/check-pmu-events.py).
 */
#ifdef __KERNEL__
#include <linux/kernel.h>
#else
#include <stdio.h>
#endif

#include "tlbb_pmu_table.h"

#define TLBB_PMU_NR(a) (sizeof(a) / sizeof((a)[0]))

/* One event array per model: tlbb_pmu_ev_<id>[]. */
#define TLBB_PMU_EV(event, umask, huge, names) \
	{ (u64)(event) | (u64)(umask) << 8, (huge), (names) },
#define TLBB_PMU_MODEL(id, name, ...) \
	static const struct tlbb_pmu_event tlbb_pmu_ev_##id[] = { __VA_ARGS__ };
#include "tlbb_pmu_events.def"

#define TLBB_PMU_MODEL(id, name, ...) \
	static const struct tlbb_pmu_model tlbb_pmu_##id = \
		{ name, tlbb_pmu_ev_##id, TLBB_PMU_NR(tlbb_pmu_ev_##id) };
#include "tlbb_pmu_events.def"

struct tlbb_pmu_x86_match {
	enum tlbb_cpu_vendor vendor;
	u32 family, model_lo, model_hi;
	const struct tlbb_pmu_model *model;
};

static const struct tlbb_pmu_x86_match tlbb_pmu_x86[] = {
#define TLBB_PMU_X86(id, vendor, family, lo, hi) \
	{ TLBB_VENDOR_##vendor, (family), (lo), (hi), &tlbb_pmu_##id },
#include "tlbb_pmu_events.def"
};

/* The model every arm64 CPU uses, if any: NULL-terminated. */
static const struct tlbb_pmu_model *const tlbb_pmu_arm_any[] = {
#define TLBB_PMU_ARM_ANY(id, why) &tlbb_pmu_##id,
#include "tlbb_pmu_events.def"
	NULL
};

const struct tlbb_pmu_model *tlbb_pmu_model_for(const struct tlbb_cpu_id *cpu,
						char *why, size_t len)
{
	unsigned int i;

	switch (cpu->arch) {
	case TLBB_CPU_X86:
		for (i = 0; i < TLBB_PMU_NR(tlbb_pmu_x86); i++) {
			const struct tlbb_pmu_x86_match *m = &tlbb_pmu_x86[i];

			if (m->vendor == cpu->vendor &&
			    m->family == cpu->family &&
			    cpu->model >= m->model_lo &&
			    cpu->model <= m->model_hi)
				return m->model;
		}
		snprintf(why, len,
			 "unavailable: no size-split TLB walk events known for CPU vendor %s family 0x%x model 0x%x",
			 cpu->vendor == TLBB_VENDOR_INTEL ? "intel" :
			 cpu->vendor == TLBB_VENDOR_AMD ? "amd" : "other",
			 cpu->family, cpu->model);
		return NULL;
	case TLBB_CPU_ARM64:
		if (tlbb_pmu_arm_any[0])
			return tlbb_pmu_arm_any[0];
		snprintf(why, len,
			 "unavailable: no size-split TLB walk events known for MIDR 0x%08x",
			 cpu->midr);
		return NULL;
	default:
		snprintf(why, len,
			 "unavailable: no size-split TLB walk events known for this architecture");
		return NULL;
	}
}
