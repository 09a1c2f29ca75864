/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Names of tlbbalance's tunables and statistics, generated from the one
 * source of truth (kernel-module/core/tlbb_params.def and tlbb_stats.def;
 * the harness builds with -I kernel-module/core).  A test that names a
 * parameter or statistic through these ids fails to compile when the
 * .def files drop or rename it.
 */
#ifndef TLBB_TEST_DEFS_H
#define TLBB_TEST_DEFS_H

#include <stdint.h>

enum tlbb_param_id {
#define TLBB_PARAM(name, ...) TLBB_P_##name,
#include "tlbb_params.def"
#undef TLBB_PARAM
	TLBB_P_COUNT
};

enum tlbb_stat_id {
#define TLBB_STAT(name, ...) TLBB_S_##name,
#include "tlbb_stats.def"
#undef TLBB_STAT
	TLBB_S_COUNT
};

struct tlbb_param_def {
	const char *name;
	uint64_t def, min, max;
};

extern const struct tlbb_param_def tlbb_params[TLBB_P_COUNT];
extern const char *const tlbb_stat_names[TLBB_S_COUNT];

/* Write a parameter of a VM (decimal); 0 or -errno. */
int tlbb_set_param(const char *vm, enum tlbb_param_id id, uint64_t val);
/* Read a u64 statistic or parameter of a VM; aborts the test if it cannot. */
uint64_t tlbb_stat_u64(const char *vm, enum tlbb_stat_id id);
uint64_t tlbb_param_u64(const char *vm, enum tlbb_param_id id);

#endif
