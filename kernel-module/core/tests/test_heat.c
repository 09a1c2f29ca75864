// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * The heat of split_order heat: the fold of one accessed-bit sample, the
 * windows a tick samples, and the order method safe splits in by default
 * (safe_split_heat).
 */
#include "test_harness.h"
#include "vm_helper.h"

TEST(heat_fold_counts_young_halves_on_old)
{
	u8 h = 0;
	unsigned int i;

	TEST_ASSERT_EQ(tlbb_heat_fold(0, true), TLBB_HEAT_STEP);
	TEST_ASSERT_EQ(tlbb_heat_fold(100, true), 100 + TLBB_HEAT_STEP);
	TEST_ASSERT_EQ(tlbb_heat_fold(255 - TLBB_HEAT_STEP, true), 255);
	TEST_ASSERT_EQ(tlbb_heat_fold(255 - TLBB_HEAT_STEP + 1, true), 255);
	TEST_ASSERT_EQ(tlbb_heat_fold(255, true), 255);
	TEST_ASSERT_EQ(tlbb_heat_fold(255, false), 127);
	TEST_ASSERT_EQ(tlbb_heat_fold(1, false), 0);
	TEST_ASSERT_EQ(tlbb_heat_fold(0, false), 0);
	/* used in every window: up to 255 and held there */
	for (i = 0; i < 200; i++)
		h = tlbb_heat_fold(h, true);
	TEST_ASSERT_EQ(h, 255);
	/* one unused window: 64 used ones before it is back at 255 */
	h = tlbb_heat_fold(h, false);
	for (i = 0; i < 128 / TLBB_HEAT_STEP - 1; i++)
		h = tlbb_heat_fold(h, true);
	TEST_ASSERT(h < 255, "back after %u windows: %u", i, h);
	h = tlbb_heat_fold(h, true);
	TEST_ASSERT_EQ(h, 255);
}

/* A page unused in one window of @every ends below one never unused. */
TEST(heat_fold_orders_by_how_often_unused)
{
	u8 hot = 0, warm = 0, cold = 0;
	unsigned int i;

	for (i = 1; i <= 1000; i++) {
		hot = tlbb_heat_fold(hot, true);
		warm = tlbb_heat_fold(warm, i % 50);
		cold = tlbb_heat_fold(cold, i % 8);
	}
	TEST_ASSERT(hot == 255 && warm < hot && cold < warm,
		    "hot %u warm %u cold %u", hot, warm, cold);
}

TEST(heat_windows_fit_the_tick)
{
	struct tlbb_params p;

	tlbb_params_default(&p);
	TEST_ASSERT_EQ(p.heat_samples, 8);
	TEST_ASSERT_EQ(tlbb_heat_windows(&p, p.heat_window_ms), 8);
	/* a jiffy of 4 ms (HZ=250): 8 of them fit in half of 100 ms */
	TEST_ASSERT_EQ(tlbb_heat_windows(&p, 4), 8);
	/* a 20 ms tick: two 4 ms windows in its first half */
	p.interval_ms = 20;
	TEST_ASSERT_EQ(tlbb_heat_windows(&p, 4), 2);
	/* shorter than asked is not what a caller can deliver */
	TEST_ASSERT_EQ(tlbb_heat_windows(&p, 0), 8);
	p.interval_ms = 100;
	p.heat_window_ms = 0;
	TEST_ASSERT_EQ(tlbb_heat_windows(&p, 0), 0);
	p.heat_window_ms = 100;
	TEST_ASSERT_EQ(tlbb_heat_windows(&p, 100), 0);
	p.heat_window_ms = 19;
	TEST_ASSERT_EQ(tlbb_heat_windows(&p, 19), 2);	/* 2 x 19 <= 50 */
	p.heat_window_ms = 60;
	TEST_ASSERT_EQ(tlbb_heat_windows(&p, 60), 1);	/* at least one */
	p.interval_ms = 2;
	p.heat_window_ms = 1;
	TEST_ASSERT_EQ(tlbb_heat_windows(&p, 1), 1);
	p.interval_ms = 1000;
	p.heat_samples = 50;
	TEST_ASSERT_EQ(tlbb_heat_windows(&p, 1), 50);
}

TEST(safe_splits_by_heat_by_default_the_others_by_address)
{
	struct tlbb_params p;

	tlbb_params_default(&p);
	TEST_ASSERT_EQ(p.split_order, TLBB_SPLIT_ADDRESS);
	TEST_ASSERT_EQ(p.safe_split_heat, 1);
	TEST_ASSERT_EQ(p.method, TLBB_METHOD_PAPER);
	TEST_ASSERT_EQ(tlbb_split_order(&p), TLBB_SPLIT_ADDRESS);
	p.method = TLBB_METHOD_HILL;
	TEST_ASSERT_EQ(tlbb_split_order(&p), TLBB_SPLIT_ADDRESS);
	p.method = TLBB_METHOD_SAFE;
	TEST_ASSERT_EQ(tlbb_split_order(&p), TLBB_SPLIT_HEAT);
	p.safe_split_heat = 0;
	TEST_ASSERT_EQ(tlbb_split_order(&p), TLBB_SPLIT_ADDRESS);
	tlbb_params_default(&p);
	p.method = TLBB_METHOD_SAFE;
	p.split_order = TLBB_SPLIT_RANDOM;
	TEST_ASSERT_EQ(tlbb_split_order(&p), TLBB_SPLIT_RANDOM);
	p.method = TLBB_METHOD_PAPER;
	p.split_order = TLBB_SPLIT_HEAT;
	TEST_ASSERT_EQ(tlbb_split_order(&p), TLBB_SPLIT_HEAT);
}
