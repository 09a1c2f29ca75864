// SPDX-License-Identifier: GPL-2.0
/*
 * The statistics of a VM (core/tlbb_stats.def), read from its state: one
 * getter per statistic, which the configfs interface formats
 * (tlbb_configfs.c). Calls the VM layer and tlbb_walk.c.
 */
#include <linux/cpumask.h>

#include "tlbb.h"
#include "tlbb_stats.h"
#include "tlbb_walk.h"

/*
 * Work a reader of statistic @id needs done before its getter, with
 * vm->lock not held: huge_pages of a VM the controller does not tick
 * (mode off) is counted here, by a walk that must not hold the lock a
 * root write waits for (tlbb_vm_refresh_huge_pages).
 */
void tlbb_stat_prepare(struct tlbb_vm *vm, enum tlbb_stat_id id)
{
	if (id == TLBB_S_huge_pages)
		tlbb_vm_refresh_huge_pages(vm);
}

/* Before a reader of every statistic (status). */
void tlbb_stats_prepare(struct tlbb_vm *vm)
{
	enum tlbb_stat_id id;

	for (id = 0; id < TLBB_NR_STATS; id++)
		tlbb_stat_prepare(vm, id);
}

/*
 * One getter per statistic, named after it: a statistic added to the .def
 * without a getter here (and in tlbb_stats.h) fails to build. The type of
 * each getter matches the kind column (u64 and milli: u64; str: const
 * char *; cpulist: cpumask). vm->lock held.
 */
u64 tlbb_get_huge_pages(struct tlbb_vm *vm)
{
	return tlbb_vm_huge_pages(vm);
}

u64 tlbb_get_total_pages(struct tlbb_vm *vm)
{
	return tlbb_thp_total_pages(vm->ranges, vm->nr_ranges);
}

u64 tlbb_get_huge_limit(struct tlbb_vm *vm)
{
	if (vm->mode == TLBB_MODE_OFF)
		return tlbb_get_total_pages(vm);
	return vm->ctrl.limit;
}

u64 tlbb_get_refills_huge(struct tlbb_vm *vm)
{
	return vm->refills_huge;
}

u64 tlbb_get_refills_small(struct tlbb_vm *vm)
{
	return vm->refills_small;
}

u64 tlbb_get_refills_huge_total(struct tlbb_vm *vm)
{
	return vm->refills_huge_total;
}

u64 tlbb_get_refills_small_total(struct tlbb_vm *vm)
{
	return vm->refills_small_total;
}

u64 tlbb_get_load(struct tlbb_vm *vm)
{
	return vm->ctrl.load_pm_milli;
}

u64 tlbb_get_load_count(struct tlbb_vm *vm)
{
	return vm->ctrl.load_count;
}

u64 tlbb_get_imbalance(struct tlbb_vm *vm)
{
	return vm->ctrl.y_milli;
}

const char *tlbb_get_dominant(struct tlbb_vm *vm)
{
	return tlbb_group_name(vm->ctrl.dominant);
}

const char *tlbb_get_state(struct tlbb_vm *vm)
{
	return tlbb_vm_state_name(vm);
}

u64 tlbb_get_splits(struct tlbb_vm *vm)
{
	return vm->lim.splits;
}

u64 tlbb_get_restores(struct tlbb_vm *vm)
{
	return vm->lim.restores;
}

u64 tlbb_get_ticks(struct tlbb_vm *vm)
{
	return vm->ticks;
}

const char *tlbb_get_backend(struct tlbb_vm *vm)
{
	return vm->inject ? "inject" : vm->backend_desc;
}

const struct cpumask *tlbb_get_cpus_allowed(struct tlbb_vm *vm)
{
	return vm->cpus_allowed;
}

const struct cpumask *tlbb_get_cpus_ran(struct tlbb_vm *vm)
{
	return vm->cpus_ran;
}
