/* SPDX-License-Identifier: GPL-2.0 */
/* tlbb_cost.c: cost accounting of the tick and of heat sampling. */
#ifndef TLBB_COST_H
#define TLBB_COST_H

#include <linux/atomic.h>
#include <linux/sched.h>

extern atomic64_t tlbb_ticks, tlbb_tick_ns, tlbb_ctrl_ns;
extern atomic64_t tlbb_wall_ticks, tlbb_wall_ns;
extern atomic64_t tlbb_heat_ns, tlbb_heat_pmds;

/*
 * Context switches of the current task so far. A tick (or the heat work
 * ending one) that saw none ran on its CPU from its first clock read to
 * its last: its wall time is its CPU time. One that slept on a lock or
 * was preempted also counts the time other tasks ran meanwhile (with
 * 1 000 ticks due at once on an unbound workqueue, the time of the others
 * queued before it), so it counts in the wall sums only.
 */
static inline unsigned long tlbb_cost_switches(void)
{
	return current->nvcsw + current->nivcsw;
}

void tlbb_cost_account(u64 tick_ns, u64 ctrl_ns, bool switched);
void tlbb_cost_account_late(u64 ns, bool switched);
void tlbb_cost_account_heat(u64 ns, u64 pmds);

#endif /* TLBB_COST_H */
