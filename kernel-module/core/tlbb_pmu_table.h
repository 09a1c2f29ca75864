/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * The PMU backend's event tables (tlbb_pmu_events.def) and the choice of a
 * table for a CPU identity, kept free of kernel calls so that the matching
 * is unit-tested in userspace (tests/test_pmu_table.c) with identities fed
 * in.  The module fills struct tlbb_cpu_id from boot_cpu_data (x86) or the
 * MIDR (arm64).
 */
#ifndef TLBB_PMU_TABLE_H
#define TLBB_PMU_TABLE_H

#include "tlbb_types.h"

enum tlbb_cpu_arch {
	TLBB_CPU_X86,
	TLBB_CPU_ARM64,
	TLBB_CPU_OTHER,
};

enum tlbb_cpu_vendor {
	TLBB_VENDOR_UNKNOWN,
	TLBB_VENDOR_INTEL,
	TLBB_VENDOR_AMD,
};

struct tlbb_cpu_id {
	enum tlbb_cpu_arch arch;
	enum tlbb_cpu_vendor vendor;	/* x86 */
	u32 family, model;		/* x86 */
	u32 midr;			/* arm64: MIDR_EL1 */
};

struct tlbb_pmu_event {
	u64 config;		/* PERF_TYPE_RAW config */
	bool huge;		/* counts 2M/4M/1G walks (else 4K) */
	const char *name;	/* the database's event name(s), '|' between */
};

struct tlbb_pmu_model {
	const char *name;
	const struct tlbb_pmu_event *ev;
	unsigned int nr;
};

/*
 * The event table for @cpu, or NULL with "unavailable: <reason naming the
 * CPU>" in @why (@len bytes).
 */
const struct tlbb_pmu_model *tlbb_pmu_model_for(const struct tlbb_cpu_id *cpu,
						char *why, size_t len);

#endif /* TLBB_PMU_TABLE_H */
