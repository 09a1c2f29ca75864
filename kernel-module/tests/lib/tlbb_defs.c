// SPDX-License-Identifier: GPL-2.0
#include <inttypes.h>

#include "cfs.h"
#include "tlbb_defs.h"

const struct tlbb_param_def tlbb_params[TLBB_P_COUNT] = {
#define TLBB_PARAM(name, def, min, max, ...) \
	[TLBB_P_##name] = { #name, def##ull, min##ull, max##ull },
#include "tlbb_params.def"
#undef TLBB_PARAM
};

const char *const tlbb_stat_names[TLBB_S_COUNT] = {
#define TLBB_STAT(name, ...) [TLBB_S_##name] = #name,
#include "tlbb_stats.def"
#undef TLBB_STAT
};

int tlbb_set_param(const char *vm, enum tlbb_param_id id, uint64_t val)
{
	return tlbb_set(vm, tlbb_params[id].name, "%" PRIu64 "\n", val);
}

uint64_t tlbb_stat_u64(const char *vm, enum tlbb_stat_id id)
{
	return tlbb_get_u64(vm, tlbb_stat_names[id]);
}

uint64_t tlbb_param_u64(const char *vm, enum tlbb_param_id id)
{
	return tlbb_get_u64(vm, tlbb_params[id].name);
}
