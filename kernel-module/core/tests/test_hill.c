// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Method hill (p.method = TLBB_METHOD_HILL), tick by tick: the search from
 * the first step to the held limit, holding, a new search when the load
 * changes, raising, forming, monitor-only, the floor and the top.
 *
 * The VM is a cost curve: the refills per tick as a function of the huge
 * pages in use, V-shaped around a best count, the huge group dominating
 * above it and the small group below (the paper's mcf case: the best limit
 * fills the huge-page TLB exactly). Defaults otherwise: 100 ms ticks,
 * hill_sustain_ms 1000 (10 ticks), 3 samples, a VM of 50 huge pages.
 */
#include "test_harness.h"
#include "vm_helper.h"

#define HILL_TRIGGER 10		/* default hill_sustain_ms / interval_ms */

struct curve {
	u64 best;		/* huge pages in use at the lowest cost */
	u64 base, slope;	/* refills per tick at best, per page off */
};

static const struct curve mcf_curve = { 14, 100000, 5000 };

/* One tick of the curve at the VM's current huge pages in use. */
static enum tlbb_action curve_tick(struct test_vm *vm, const struct curve *k)
{
	u64 n = vm->huge_in_use;
	u64 cost = k->base + k->slope * (n > k->best ? n - k->best :
					 k->best - n);

	if (n > k->best)	/* too many huge pages: huge group thrashes */
		return test_vm_tick(vm, cost - 40, 40);
	return test_vm_tick(vm, 40, cost - 40);
}

static u64 curve_ticks(struct test_vm *vm, const struct curve *k, u64 n)
{
	u64 acted = 0;

	while (n--)
		acted += curve_tick(vm, k) != TLBB_ACT_NONE;
	return acted;
}

static void hill_params(struct tlbb_params *p)
{
	test_params(p);
	p->method = TLBB_METHOD_HILL;
}

/* A VM whose huge pages form again as soon as the limit allows (tlbsim). */
static void hill_vm(struct test_vm *vm, const struct tlbb_params *p, u64 n)
{
	test_vm_init(vm, p, n, false);
	vm->instant_forming = true;
}

/* The limit after each of the next @n windows, checked against @want. */
static void expect_limits(struct test_vm *vm, const struct curve *k,
			  const u64 *want, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		curve_ticks(vm, k, 3);
		TEST_ASSERT(vm->c.limit == want[i],
			    "window %u: limit %llu, want %llu", i,
			    (unsigned long long)vm->c.limit,
			    (unsigned long long)want[i]);
	}
}

TEST(hill_search_converges_to_the_best_limit)
{
	static const u64 want[] = { 44, 38, 32, 26, 20, 14, 8, 11, 13, 14 };
	struct tlbb_params p;
	struct test_vm vm;

	hill_params(&p);
	hill_vm(&vm, &p, 50);
	TEST_ASSERT_EQ(vm.c.trigger, HILL_TRIGGER);
	curve_ticks(&vm, &mcf_curve, HILL_TRIGGER + 2);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_COUNTING);
	TEST_ASSERT_EQ(vm.c.limit, 50);
	/* First window: 280 000 refills per tick, huge dominates; 6 pages. */
	TEST_ASSERT_EQ(curve_tick(&vm, &mcf_curve), TLBB_ACT_LOWER);
	TEST_ASSERT_EQ(vm.c.cost, 280000);
	TEST_ASSERT_EQ(vm.c.hill_step, 6);
	TEST_ASSERT_EQ(vm.c.limit, 44);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_LOWERING);
	/* 6 by 6 to 8 (worse than 14), then 11, 13 (halved steps), 14. */
	expect_limits(&vm, &mcf_curve, want + 1, 9);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_HOLDING);
	TEST_ASSERT_EQ(vm.c.hill_step, 0);
	TEST_ASSERT_EQ(vm.c.hill_held_cost, 100000);
	TEST_ASSERT_EQ(vm.c.hill_best_limit, 14);
	TEST_ASSERT_EQ(vm.lowers, 7);
	TEST_ASSERT_EQ(vm.raises, 3);
	TEST_ASSERT_EQ(vm.c.ticks, HILL_TRIGGER + 3 * 10);
	/* Converged: the limit holds while the load stays. */
	TEST_ASSERT_EQ(curve_ticks(&vm, &mcf_curve, 300), 0);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_HOLDING);
	TEST_ASSERT_EQ(vm.c.limit, 14);
	TEST_ASSERT_EQ(vm.c.load_count, HILL_TRIGGER);
}

TEST(hill_paper_method_is_the_default_and_unchanged)
{
	struct tlbb_params p;
	struct test_vm vm;

	test_params(&p);
	TEST_ASSERT_EQ(p.method, TLBB_METHOD_PAPER);
	test_vm_init(&vm, &p, 50, false);
	TEST_ASSERT_EQ(vm.c.trigger, 100);
	curve_ticks(&vm, &mcf_curve, 103);
	TEST_ASSERT_EQ(vm.c.limit, 49);		/* one page per decision */
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_LOWERING);
	TEST_ASSERT_EQ(vm.c.hill_step, 0);
}

/*
 * A 50-page VM under @load with hill_gain_pm = @gain_pm, run to the end of
 * its first search's second step.
 */
static void hill_first_search(struct test_vm *vm, u64 gain_pm,
			      const struct curve *load)
{
	struct tlbb_params p;

	hill_params(&p);
	p.hill_gain_pm = gain_pm;
	test_vm_init(vm, &p, 50, false);
	curve_ticks(vm, load, HILL_TRIGGER + 6);
}

TEST(hill_gain_must_exceed_gain_pm)
{
	/* From 50 to 44 saves 30 000 of 280 000 refills: 107.1 permille. */
	static const u64 gains[] = { 107, 108 };
	unsigned int i;

	for (i = 0; i < 2; i++) {
		struct test_vm vm;

		hill_first_search(&vm, gains[i], &mcf_curve);
		/* 107: kept, on to 38; 108: not enough, half a step: 47. */
		TEST_ASSERT_EQ(vm.c.limit, i ? 47 : 38);
		TEST_ASSERT_EQ(vm.c.hill_step, i ? 3 : 6);
		TEST_ASSERT_EQ(vm.c.hill_best_limit, i ? 50 : 44);
	}
}

TEST(hill_gain_of_exactly_gain_pm_is_not_kept)
{
	/* 50 -> 44 pages: 6 000 000 -> 5 400 000, exactly 100 permille. */
	static const struct curve k = { 0, 1000000, 100000 };
	static const u64 gains[] = { 99, 100 };
	unsigned int i;

	for (i = 0; i < 2; i++) {
		struct test_vm vm;

		hill_first_search(&vm, gains[i], &k);
		TEST_ASSERT_EQ(vm.c.hill_best_cost, i ? 6000000 : 5400000);
		TEST_ASSERT_EQ(vm.c.limit, i ? 47 : 38);
	}
}

TEST(hill_new_search_when_the_load_changes)
{
	/* The same curve, twice as costly: more than 25 % away. */
	static const struct curve k2 = { 14, 200000, 10000 };
	static const struct curve k3 = { 14, 124000, 5000 };
	struct tlbb_params p;
	struct test_vm vm;

	hill_params(&p);
	hill_vm(&vm, &p, 50);
	curve_ticks(&vm, &mcf_curve, HILL_TRIGGER + 3 * 11);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_HOLDING);
	/* 124 000 is 24 % above the held 100 000: still holding. */
	TEST_ASSERT_EQ(curve_ticks(&vm, &k3, 30), 0);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_HOLDING);
	/* Exactly 25 %: still holding (retry means "more than"). */
	p.hill_retry_pm = 240;
	tlbb_ctrl_set_params(&vm.c, &p);
	TEST_ASSERT_EQ(vm.c.hill_held_cost, 0);		/* forgotten */
	curve_ticks(&vm, &k3, 3);	/* a search from 14: none to gain */
	TEST_ASSERT(vm.c.limit != 14, "no new search after set_params");
	curve_ticks(&vm, &k3, 60);
	TEST_ASSERT_EQ(vm.c.limit, 14);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_HOLDING);
	TEST_ASSERT_EQ(vm.c.hill_held_cost, 124000);
	/* 124 000 * 1.24 = 153 760 is exactly at the edge: holds. */
	{
		static const struct curve edge = { 14, 153760, 5000 };
		static const struct curve past = { 14, 153761, 5000 };

		TEST_ASSERT_EQ(curve_ticks(&vm, &edge, 30), 0);
		TEST_ASSERT_EQ(vm.c.state, TLBB_ST_HOLDING);
		curve_ticks(&vm, &past, 3);
		TEST_ASSERT(vm.c.state != TLBB_ST_HOLDING, "past the edge");
	}
	/* Below the held figure by more than the share: a search too. */
	curve_ticks(&vm, &k2, 90);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_HOLDING);
	TEST_ASSERT_EQ(vm.c.hill_held_cost, 200000);
	/* 10 % below the held figure: holds too. */
	{
		static const struct curve lower = { 14, 180000, 9000 };

		TEST_ASSERT_EQ(curve_ticks(&vm, &lower, 30), 0);
		TEST_ASSERT_EQ(vm.c.state, TLBB_ST_HOLDING);
	}
	curve_ticks(&vm, &mcf_curve, 3);
	TEST_ASSERT(vm.c.state != TLBB_ST_HOLDING, "100 000 is 50 %% below");
}

TEST(hill_raises_when_the_small_group_dominates)
{
	/* Best at 40 of 50, from a limit of 20. */
	static const struct curve k = { 40, 100000, 5000 };
	struct tlbb_params p;
	struct test_vm vm;

	hill_params(&p);
	p.sustain_ms = 0;
	test_vm_init(&vm, &p, 50, false);
	vm.c.limit = 20;
	vm.huge_in_use = 20;
	vm.instant_forming = true;
	curve_ticks(&vm, &k, HILL_TRIGGER + 3);
	TEST_ASSERT_EQ(vm.c.hill_dir, TLBB_G_SMALL);
	TEST_ASSERT_EQ(vm.c.limit, 26);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_RAISING);
	/*
	 * 32, 38, 44 (worse), 41 (better than 38), 44, 42 (worse): 41. The
	 * search ends within its last step of the best count, on the side
	 * it came from.
	 */
	curve_ticks(&vm, &k, 3 * 20);
	TEST_ASSERT_EQ(vm.c.limit, 41);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_HOLDING);
}

TEST(hill_raise_at_the_top_holds)
{
	/* The small group dominates, everything may be huge already. */
	static const struct curve k = { 60, 100000, 5000 };
	struct tlbb_params p;
	struct test_vm vm;

	hill_params(&p);
	test_vm_init(&vm, &p, 50, false);
	TEST_ASSERT_EQ(curve_ticks(&vm, &k, HILL_TRIGGER + 3), 0);
	TEST_ASSERT_EQ(vm.c.limit, 50);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_HOLDING);
	TEST_ASSERT_EQ(vm.c.hill_held_cost, 150000);
}

TEST(hill_raise_waits_for_forming)
{
	static const struct curve k = { 40, 100000, 5000 };
	struct tlbb_params p;
	struct test_vm vm;

	hill_params(&p);
	test_vm_init(&vm, &p, 50, false);
	vm.c.limit = 20;
	vm.huge_in_use = 19;
	curve_ticks(&vm, &k, HILL_TRIGGER + 3);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_FORMING);
	TEST_ASSERT_EQ(vm.c.limit, 20);
	TEST_ASSERT_EQ(vm.c.hill_held_cost, 0);
	test_vm_form(&vm, 1);
	TEST_ASSERT_EQ(curve_ticks(&vm, &k, 3), 1);
	TEST_ASSERT_EQ(vm.c.limit, 26);
}

TEST(hill_lowering_starts_from_huge_pages_in_use)
{
	struct tlbb_params p;
	struct test_vm vm;

	hill_params(&p);
	test_vm_init(&vm, &p, 50, false);
	vm.huge_in_use = 30;	/* 20 pages never formed */
	curve_ticks(&vm, &mcf_curve, HILL_TRIGGER + 3);
	TEST_ASSERT_EQ(vm.c.limit, 24);
	TEST_ASSERT_EQ(vm.c.hill_best_limit, 30);
}

TEST(hill_floor_bounds_the_search)
{
	struct tlbb_params p;
	struct test_vm vm;

	hill_params(&p);
	p.floor_pages = 47;
	test_vm_init(&vm, &p, 50, false);
	/* 50 -> 47 (the floor, not 44), better: at the floor, hold there. */
	curve_ticks(&vm, &mcf_curve, HILL_TRIGGER + 3);
	TEST_ASSERT_EQ(vm.c.limit, 47);
	curve_ticks(&vm, &mcf_curve, 3);
	TEST_ASSERT_EQ(vm.c.limit, 47);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_HOLDING);
	/* Pages in use below the floor: the search starts at the floor. */
	p.floor_pages = 40;
	test_vm_init(&vm, &p, 50, false);
	vm.huge_in_use = 30;
	TEST_ASSERT_EQ(curve_ticks(&vm, &mcf_curve, HILL_TRIGGER + 3), 1);
	TEST_ASSERT_EQ(vm.c.hill_best_limit, 40);
	TEST_ASSERT_EQ(vm.c.limit, 40);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_HOLDING);
}

TEST(hill_first_step_is_at_least_one_page)
{
	struct tlbb_params p;
	struct test_vm vm;

	static const struct curve k = { 0, 100000, 5000 };

	hill_params(&p);
	test_vm_init(&vm, &p, 7, false);	/* 7 x 0.125 rounds to 0 */
	curve_ticks(&vm, &k, HILL_TRIGGER + 3);
	TEST_ASSERT_EQ(vm.c.limit, 6);
	TEST_ASSERT_EQ(vm.c.hill_step, 1);
	p.hill_first_step_pm = 1000;		/* the whole VM at once */
	test_vm_init(&vm, &p, 50, false);
	curve_ticks(&vm, &mcf_curve, HILL_TRIGGER + 3);
	TEST_ASSERT_EQ(vm.c.limit, 0);
	TEST_ASSERT_EQ(vm.c.hill_step, 50);
}

TEST(hill_balanced_load_holds_without_a_move)
{
	struct tlbb_params p;
	struct test_vm vm;

	hill_params(&p);
	test_vm_init(&vm, &p, 50, false);
	/* Per-entry rates 1:1 (64 and 2048 entries): y = 1. */
	TEST_ASSERT_EQ(test_vm_ticks(&vm, HILL_TRIGGER + 3, 6400, 204800), 0);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_HOLDING);
	TEST_ASSERT_EQ(vm.c.hill_held_cost, 211200);
	/* y of 20 (threshold) is not above it either. */
	test_vm_init(&vm, &p, 50, false);
	TEST_ASSERT_EQ(test_vm_ticks(&vm, HILL_TRIGGER + 3, 128000, 204800),
		       0);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_HOLDING);
	/* Mixed window: no dominant group, no move. */
	test_vm_init(&vm, &p, 50, false);
	test_vm_ticks(&vm, HILL_TRIGGER + 2, 218000, 40);
	test_vm_tick(&vm, 40, 218000);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_HOLDING);
	TEST_ASSERT_EQ(vm.c.limit, 50);
}

TEST(hill_monitor_only_never_moves)
{
	struct tlbb_params p;
	struct test_vm vm;

	hill_params(&p);
	test_vm_init(&vm, &p, 50, true);
	TEST_ASSERT_EQ(curve_ticks(&vm, &mcf_curve, 200), 0);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_MONITOR);
	TEST_ASSERT_EQ(vm.c.dominant, TLBB_G_HUGE);
	TEST_ASSERT_EQ(vm.c.hill_held_cost, 0);
	TEST_ASSERT_EQ(vm.c.decisions, (200 - HILL_TRIGGER) / 3);
}

TEST(hill_load_gone_ends_the_search_where_it_is)
{
	struct tlbb_params p;
	struct test_vm vm;

	hill_params(&p);
	test_vm_init(&vm, &p, 50, false);
	curve_ticks(&vm, &mcf_curve, HILL_TRIGGER + 6);
	TEST_ASSERT_EQ(vm.c.limit, 38);
	TEST_ASSERT_EQ(test_vm_ticks(&vm, 5, 10, 10), 0);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_IDLE);
	TEST_ASSERT_EQ(vm.c.hill_step, 0);
	TEST_ASSERT_EQ(vm.c.limit, 38);
	/* Back, sustained again: a new search from 38. */
	curve_ticks(&vm, &mcf_curve, HILL_TRIGGER + 3);
	TEST_ASSERT_EQ(vm.c.limit, 32);
	TEST_ASSERT_EQ(vm.c.hill_best_limit, 38);
}

TEST(hill_sustain_is_its_own)
{
	struct tlbb_params p;

	hill_params(&p);
	p.hill_sustain_ms = 250;
	p.sustain_ms = 60000;
	TEST_ASSERT_EQ(tlbb_trigger_ticks(&p), 3);
	p.method = TLBB_METHOD_PAPER;
	TEST_ASSERT_EQ(tlbb_trigger_ticks(&p), 600);
}
