// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * src/split_order.c by hand: the order names and the module's tunable,
 * heat from simulated accessed bits (the budget, the cursor, the window),
 * heat order splitting the coldest (ties highest first) and restoring the
 * hottest first.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tlbsim.h"
#include "tlbb_ctrl.h"

#define MB (1ULL << 20)

static void machine(struct tlbs_machine *m)
{
	char err[256];
	const char *text =
		"name t\nbase_page 16K\nhuge_page 32M\n"
		"group VTLB entries=64 ways=64 replace=lru sizes=huge\n"
		"group FTLB entries=2048 ways=8 replace=lru sizes=base\n"
		"access_ns 100\nrefill_ns 150\n";

	if (tlbs_machine_parse(m, text, "test", err, sizeof(err)))
		fprintf(stderr, "%s\n", err);
}

static void test_names(void)
{
	enum tlbs_split_order o = TLBS_SPLIT_LOW;

	CHECK_EQ(tlbs_split_order_parse("address", &o), 0);
	CHECK_EQ(o, TLBS_SPLIT_HIGH);
	CHECK_EQ(tlbs_split_order_parse("heat", &o), 0);
	CHECK_EQ(o, TLBS_SPLIT_HEAT);
	CHECK_EQ(tlbs_split_order_parse("hot", &o), -1);
	CHECK_EQ(strcmp(tlbs_split_order_name(TLBS_SPLIT_RANDOM), "random"), 0);
	CHECK_EQ(tlbs_split_order_of_param(TLBB_SPLIT_ADDRESS),
		 TLBS_SPLIT_HIGH);
	CHECK_EQ(tlbs_split_order_of_param(TLBB_SPLIT_RANDOM),
		 TLBS_SPLIT_RANDOM);
	CHECK_EQ(tlbs_split_order_of_param(TLBB_SPLIT_HEAT), TLBS_SPLIT_HEAT);
	/* no name stands for "by method": that is the run's default */
	CHECK_EQ(tlbs_split_order_parse("auto", &o), -1);
}

static void touch(struct tlbs_mmu *u, u64 region)
{
	u64 off = region * 32 * MB + 4096;

	tlbs_mmu_run(u, &off, 1);
	CHECK_EQ(tlbs_heat_mark(u, &off, 1), 0);
}

static void test_heat_order(void)
{
	struct tlbs_machine m;
	struct tlbs_mmu u;
	u64 r;

	machine(&m);
	CHECK_EQ(tlbs_mmu_init(&u, &m, TLBS_VZ, 128 * MB, 1, 1, 0), 0);
	u.split_order = TLBS_SPLIT_HEAT;
	for (r = 0; r < 4; r++)
		touch(&u, r);
	/* a window that is not the tick's last: the cursor stays */
	CHECK_EQ(tlbs_heat_sample(&u, 4, 1, 0), 0);
	CHECK_EQ(u.heat_cursor, 0);
	CHECK_EQ(u.heat[0], TLBB_HEAT_STEP);
	CHECK_EQ(u.accessed[3], 0);
	for (r = 0; r < 4; r++)
		touch(&u, r);
	/* a budget of 3: regions 0-2 sampled, the cursor at 3 */
	CHECK_EQ(tlbs_heat_sample(&u, 3, 0, 1), 0);
	CHECK_EQ(u.heat_cursor, 3);
	CHECK_EQ(u.heat[0], 2 * TLBB_HEAT_STEP);
	CHECK_EQ(u.heat[3], TLBB_HEAT_STEP);	/* not sampled again */
	CHECK_EQ(u.accessed[3], 1);	/* not sampled: still set */
	/* regions 1 and 3 hot, 0 and 2 idle, one full sample */
	touch(&u, 1);
	touch(&u, 3);
	CHECK_EQ(tlbs_heat_sample(&u, 4, 0, 1), 0);
	CHECK_EQ(u.heat_cursor, 3);
	CHECK_EQ(u.heat[1], 3 * TLBB_HEAT_STEP);
	CHECK_EQ(u.heat[3], 2 * TLBB_HEAT_STEP);
	CHECK_EQ(u.heat[0], TLBB_HEAT_STEP);	/* halved */
	CHECK_EQ(u.heat[2], TLBB_HEAT_STEP);
	/* limit 2: the coldest two, the higher of the equals first */
	tlbs_mmu_apply_limit(&u, 3);
	CHECK_EQ(tlbs_mmu_stage2_class(&u, 2 * 32 * MB), TLBS_BASE);
	CHECK_EQ(tlbs_mmu_stage2_class(&u, 0), TLBS_HUGE);
	tlbs_mmu_apply_limit(&u, 2);
	CHECK_EQ(tlbs_mmu_stage2_class(&u, 0), TLBS_BASE);
	CHECK_EQ(tlbs_mmu_stage2_class(&u, 1 * 32 * MB), TLBS_HUGE);
	CHECK_EQ(tlbs_mmu_stage2_class(&u, 3 * 32 * MB), TLBS_HUGE);
	/* with a window only the accesses after the sample count */
	touch(&u, 2);
	CHECK_EQ(tlbs_heat_sample(&u, 4, 1, 1), 0);
	CHECK_EQ(u.accessed[2], 0);
	CHECK_EQ(u.heat[2], 2 * TLBB_HEAT_STEP);
	CHECK_EQ(u.heat[0], TLBB_HEAT_STEP / 2);
	/* a window clears the bits it did not sample (region 0's) too */
	touch(&u, 0);
	CHECK_EQ(tlbs_heat_sample(&u, 1, 1, 0), 0);
	CHECK_EQ(u.accessed[0], 0);
	CHECK_EQ(u.heat[0], TLBB_HEAT_STEP / 2);
	CHECK_EQ(u.heat_cursor, 3);
	/* raise to 3: the hottest split region (2) comes back first, though
	 * region 0 was split last */
	tlbs_mmu_apply_limit(&u, 3);
	CHECK_EQ(tlbs_mmu_stage2_class(&u, 2 * 32 * MB), TLBS_HUGE);
	CHECK_EQ(tlbs_mmu_stage2_class(&u, 0), TLBS_BASE);
	CHECK_EQ(u.nsplit, 1);
	tlbs_mmu_apply_limit(&u, 4);
	CHECK_EQ(u.huge_in_use, 4);
	tlbs_mmu_free(&u);
	CHECK_EQ(u.heat == NULL && u.accessed == NULL, 1);

	/* address order ignores heat: the highest first */
	CHECK_EQ(tlbs_mmu_init(&u, &m, TLBS_VZ, 128 * MB, 1, 1, 0), 0);
	for (r = 0; r < 4; r++)
		touch(&u, r);
	CHECK_EQ(tlbs_heat_sample(&u, 4, 0, 1), 0);
	touch(&u, 3);
	CHECK_EQ(tlbs_heat_sample(&u, 4, 0, 1), 0);
	tlbs_mmu_apply_limit(&u, 3);
	CHECK_EQ(tlbs_mmu_stage2_class(&u, 3 * 32 * MB), TLBS_BASE);
	tlbs_mmu_free(&u);
	tlbs_machine_free(&m);
}

int main(void)
{
	test_names();
	test_heat_order();
	return check_done("test_split_order");
}
