// SPDX-License-Identifier: GPL-2.0
/*
 * Cost accounting of the per-VM tick and of heat sampling: sums the
 * tick (tlbb_vm.c) and the heat sampler (tlbb_heat.c) add to, which
 * debugfs's tick_cost file (tlbb_debugfs.c) shows and resets. Calls
 * nothing of the module.
 */
#include <linux/atomic.h>

#include "tlbb.h"
#include "tlbb_cost.h"

atomic64_t tlbb_ticks, tlbb_tick_ns, tlbb_ctrl_ns;
atomic64_t tlbb_wall_ticks, tlbb_wall_ns;
atomic64_t tlbb_heat_ns, tlbb_heat_pmds;

/*
 * One tick (tlbb_vm.c): every tick counts in the wall sums; one that was
 * not switched out (tlbb_cost_switches()) also in the on-CPU sums.
 */
void tlbb_cost_account(u64 tick_ns, u64 ctrl_ns, bool switched)
{
	atomic64_inc(&tlbb_wall_ticks);
	atomic64_add(tick_ns, &tlbb_wall_ns);
	if (switched)
		return;
	atomic64_inc(&tlbb_ticks);
	atomic64_add(tick_ns, &tlbb_tick_ns);
	atomic64_add(ctrl_ns, &tlbb_ctrl_ns);
}

/* The heat work that ends a tick a window later (tlbb_vm.c): its time. */
void tlbb_cost_account_late(u64 ns, bool switched)
{
	atomic64_add(ns, &tlbb_wall_ns);
	if (!switched)
		atomic64_add(ns, &tlbb_tick_ns);
}

/* One accessed-bit sample (tlbb_heat.c): its time and the slots it saw. */
void tlbb_cost_account_heat(u64 ns, u64 pmds)
{
	atomic64_add(ns, &tlbb_heat_ns);
	atomic64_add(pmds, &tlbb_heat_pmds);
}
