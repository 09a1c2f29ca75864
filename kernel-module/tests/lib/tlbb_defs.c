// SPDX-License-Identifier: GPL-2.0
#include <inttypes.h>
#include <string.h>

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

const char *const tlbb_mode_names[TLBB_MODE_COUNT] = {
#define TLBB_MODE(id, name, help) [TLBB_MODE_##id] = name,
#include "tlbb_modes.def"
#undef TLBB_MODE
};

int tlbb_set_mode(const char *vm, enum tlbb_mode mode)
{
	return tlbb_set(vm, "mode", "%s\n", tlbb_mode_names[mode]);
}

int tlbb_mode_is(const char *vm, enum tlbb_mode mode)
{
	char buf[64];

	return tlbb_get(vm, "mode", buf, sizeof(buf)) > 0 &&
	       !strcmp(buf, tlbb_mode_names[mode]);
}

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
