/* SPDX-License-Identifier: GPL-2.0 */
/* tlbb_cost.c: cost accounting of the tick and of heat sampling. */
#ifndef TLBB_COST_H
#define TLBB_COST_H

#include <linux/atomic.h>

extern atomic64_t tlbb_ticks, tlbb_tick_ns, tlbb_ctrl_ns;
extern atomic64_t tlbb_heat_ns, tlbb_heat_pmds;

void tlbb_cost_account(u64 tick_ns, u64 ctrl_ns);
void tlbb_cost_account_late(u64 ns);
void tlbb_cost_account_heat(u64 ns, u64 pmds);

#endif /* TLBB_COST_H */
