/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tlbb_stats.c: one getter per statistic of core/tlbb_stats.def (vm->lock
 * held), and what a reader needs done before it (vm->lock not held).
 */
#ifndef TLBB_STATS_H
#define TLBB_STATS_H

#include "tlbb.h"

enum tlbb_stat_id {
#define TLBB_STAT(name, kind, type, unit, help) TLBB_S_##name,
#include "core/tlbb_stats.def"
#undef TLBB_STAT
	TLBB_NR_STATS
};

void tlbb_stat_prepare(struct tlbb_vm *vm, enum tlbb_stat_id id);
void tlbb_stats_prepare(struct tlbb_vm *vm);

u64 tlbb_get_huge_pages(struct tlbb_vm *vm);
u64 tlbb_get_total_pages(struct tlbb_vm *vm);
u64 tlbb_get_huge_limit(struct tlbb_vm *vm);
u64 tlbb_get_refills_huge(struct tlbb_vm *vm);
u64 tlbb_get_refills_small(struct tlbb_vm *vm);
u64 tlbb_get_refills_huge_total(struct tlbb_vm *vm);
u64 tlbb_get_refills_small_total(struct tlbb_vm *vm);
u64 tlbb_get_load(struct tlbb_vm *vm);
u64 tlbb_get_load_count(struct tlbb_vm *vm);
u64 tlbb_get_imbalance(struct tlbb_vm *vm);
const char *tlbb_get_dominant(struct tlbb_vm *vm);
const char *tlbb_get_state(struct tlbb_vm *vm);
u64 tlbb_get_splits(struct tlbb_vm *vm);
u64 tlbb_get_restores(struct tlbb_vm *vm);
u64 tlbb_get_ticks(struct tlbb_vm *vm);
const char *tlbb_get_backend(struct tlbb_vm *vm);
const struct cpumask *tlbb_get_cpus_allowed(struct tlbb_vm *vm);
const struct cpumask *tlbb_get_cpus_ran(struct tlbb_vm *vm);

#endif /* TLBB_STATS_H */
