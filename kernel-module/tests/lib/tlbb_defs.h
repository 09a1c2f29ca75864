/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Names of tlbbalance's tunables, statistics and modes, and its interface
 * limits, generated from the one source of truth (kernel-module/core/
 * tlbb_params.def, tlbb_stats.def, tlbb_modes.def and tlbb_limits.def;
 * the harness builds with -I kernel-module/core).  A test that names a
 * parameter, statistic or mode through these ids fails to compile when the
 * .def files drop or rename it, and a test of a limit checks the limit the
 * .def gives (the constants have the names tlbb.h gives them).
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

/* TLBB_NAME_MAX, TLBB_MAX_RANGES, TLBB_MAX_VCPUS, as in tlbb.h */
enum {
#define TLBB_LIMIT(name, value, help) TLBB_##name = (value),
#include "tlbb_limits.def"
#undef TLBB_LIMIT
};

/* TLBB_MODE_OFF, TLBB_MODE_MONITOR, ... in .def order, as in tlbb.h */
enum tlbb_mode {
#define TLBB_MODE(id, name, help) TLBB_MODE_##id,
#include "tlbb_modes.def"
#undef TLBB_MODE
	TLBB_MODE_COUNT
};

struct tlbb_param_def {
	const char *name;
	uint64_t def, min, max;
};

extern const struct tlbb_param_def tlbb_params[TLBB_P_COUNT];
extern const char *const tlbb_stat_names[TLBB_S_COUNT];
/* What vms/<vm>/mode reads and takes for each mode */
extern const char *const tlbb_mode_names[TLBB_MODE_COUNT];

/* Write a parameter of a VM (decimal); 0 or -errno. */
int tlbb_set_param(const char *vm, enum tlbb_param_id id, uint64_t val);
/* Write vms/<vm>/mode; 0 or -errno. */
int tlbb_set_mode(const char *vm, enum tlbb_mode mode);
/* Does vms/<vm>/mode read @mode? 0 if it cannot be read. */
int tlbb_mode_is(const char *vm, enum tlbb_mode mode);
/* Read a u64 statistic or parameter of a VM; aborts the test if it cannot. */
uint64_t tlbb_stat_u64(const char *vm, enum tlbb_stat_id id);
uint64_t tlbb_param_u64(const char *vm, enum tlbb_param_id id);

#endif
