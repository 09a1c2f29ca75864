// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Method safe (p.method = TLBB_METHOD_SAFE), tick by tick: the objective
 * (estimated refill time, not the refill count), the pattern search from
 * the whole range down to one page, undoing a try that did not pay (after
 * one tick when it is clearly worse), holding, a new search when the cost
 * moves, the upward probe and its back-off, forming, the floor, the pages
 * in use, monitor-only, the load going away and new parameters.
 *
 * A VM is a load: the refills per tick of each group as a function of the
 * huge pages in use. Defaults otherwise: 100 ms ticks, hill_sustain_ms
 * 1000 (10 ticks), 3 samples, cost_huge_ns 187, cost_small_ns 113.
 */
#include "test_harness.h"
#include "vm_helper.h"

#define SAFE_TRIGGER 10		/* default hill_sustain_ms / interval_ms */

/*
 * kind V: the paper's mcf case, a V around @best (above it the huge group
 * thrashes, below it the small group takes the load); kind TOP: the hot
 * set at the top of memory, so every split page costs @slope small-group
 * refills and the huge group's @base stays (no controller is best).
 */
enum load_kind { LOAD_V, LOAD_TOP };

struct load {
	enum load_kind kind;
	u64 best, base, slope;
};

static const struct load mcf_load = { LOAD_V, 14, 100000, 5000 };
static const struct load top_load = { LOAD_TOP, 50, 100000, 20000 };

static enum tlbb_action load_tick(struct test_vm *vm, const struct load *k)
{
	u64 n = vm->huge_in_use, cost;

	if (k->kind == LOAD_TOP)
		return test_vm_tick(vm, k->base, (k->best - n) * k->slope);
	cost = k->base + k->slope * (n > k->best ? n - k->best : k->best - n);
	if (n > k->best)
		return test_vm_tick(vm, cost - 40, 40);
	return test_vm_tick(vm, 40, cost - 40);
}

static u64 load_ticks(struct test_vm *vm, const struct load *k, u64 n)
{
	u64 acted = 0;

	while (n--)
		acted += load_tick(vm, k) != TLBB_ACT_NONE;
	return acted;
}

static void safe_params(struct tlbb_params *p)
{
	test_params(p);
	p->method = TLBB_METHOD_SAFE;
}

/* A VM of @n pages whose huge pages form as soon as the limit allows. */
static void safe_vm(struct test_vm *vm, const struct tlbb_params *p, u64 n)
{
	test_vm_init(vm, p, n, false);
	vm->instant_forming = true;
}

/* Tick @k until the search ends (at most @max ticks); the ticks taken. */
static u64 until_held(struct test_vm *vm, const struct load *k, u64 max)
{
	u64 t;

	for (t = 1; t <= max; t++) {
		load_tick(vm, k);
		if (vm->c.safe_phase == TLBB_SAFE_REF)
			return t;
	}
	TEST_ASSERT(0, "no end of the search in %llu ticks",
		    (unsigned long long)max);
	return 0;
}

TEST(safe_search_finds_the_best_limit_of_the_mcf_case)
{
	/* limit after each move: whole range, then halving both ways */
	static const u64 want[] = { 0, 25, 12, 24, 18, 6, 15, 9, 13, 14, 15,
				    14 };
	struct tlbb_params p;
	struct test_vm vm;
	unsigned int i = 0;
	u64 t;

	safe_params(&p);
	safe_vm(&vm, &p, 50);
	TEST_ASSERT_EQ(vm.c.trigger, SAFE_TRIGGER);
	load_ticks(&vm, &mcf_load, SAFE_TRIGGER + 2);
	TEST_ASSERT_EQ(vm.c.limit, 50);
	for (t = 0; t < 60 && vm.c.safe_phase != TLBB_SAFE_REF; t++) {
		u64 before = vm.c.limit;

		load_tick(&vm, &mcf_load);
		if (vm.c.limit == before)
			continue;
		TEST_ASSERT(i < sizeof(want) / sizeof(want[0]), "too many");
		TEST_ASSERT(vm.c.limit == want[i], "move %u: %llu, want %llu",
			    i, (unsigned long long)vm.c.limit,
			    (unsigned long long)want[i]);
		i++;
	}
	TEST_ASSERT_EQ(i, 12);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_HOLDING);
	TEST_ASSERT_EQ(vm.c.limit, 14);
	TEST_ASSERT_EQ(vm.c.hill_step, 0);
	/* 40 x 187 + 99 960 x 113: the estimated ns at the best limit */
	TEST_ASSERT_EQ(vm.c.hill_best_cost, 40 * 187 + 99960 * 113);
	/* the next window measures the held limit: holding from then on */
	TEST_ASSERT_EQ(load_ticks(&vm, &mcf_load, 3), 0);
	TEST_ASSERT_EQ(vm.c.safe_phase, TLBB_SAFE_HOLD);
	TEST_ASSERT_EQ(vm.c.hill_held_cost, 40 * 187 + 99960 * 113);
	/* probe_ms 30 s = 100 windows of 3 ticks, none before */
	TEST_ASSERT_EQ(vm.c.safe_probe, 100);
	TEST_ASSERT_EQ(load_ticks(&vm, &mcf_load, 3 * 98), 0);
	TEST_ASSERT_EQ(vm.c.limit, 14);
}

TEST(safe_undoes_every_step_that_does_not_pay)
{
	struct tlbb_params p;
	struct test_vm vm;
	u64 t;

	/* The hot set at the top: each split page costs; best is all huge. */
	safe_params(&p);
	safe_vm(&vm, &p, 50);
	load_ticks(&vm, &top_load, SAFE_TRIGGER + 2);
	t = until_held(&vm, &top_load, 100);
	TEST_ASSERT_EQ(vm.c.limit, 50);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_HOLDING);
	/*
	 * The tries go 50 -> 0, 25, 38, 44, 47, 49 (the step halves from the
	 * whole VM; one move down, then up from try to try), then back to 50.
	 * Each but the last is clearly worse (more than hill_retry_pm, 25 %)
	 * and judged after its first tick; 49 costs 12 % more and gets a
	 * whole window: the first window's last tick, five ticks, three.
	 */
	TEST_ASSERT_EQ(vm.lowers, 1);
	TEST_ASSERT_EQ(vm.raises, 6);
	TEST_ASSERT_EQ(t, 1 + 5 + 3);
	/* nothing found: the next probe waits twice as long */
	TEST_ASSERT_EQ(vm.c.safe_probe, 200);
}

TEST(safe_a_try_a_little_worse_gets_a_whole_window)
{
	/* each split page costs 1 % more: not clearly worse (25 %) */
	static const struct load mild = { LOAD_TOP, 50, 100000, 1000 };
	struct tlbb_params p;
	struct test_vm vm;

	safe_params(&p);
	p.safe_first_step_pm = 20;	/* one page of 50 */
	safe_vm(&vm, &p, 50);
	load_ticks(&vm, &mild, SAFE_TRIGGER + 3);
	TEST_ASSERT_EQ(vm.c.limit, 49);
	load_ticks(&vm, &mild, 2);
	TEST_ASSERT_EQ(vm.c.limit, 49);		/* still measuring */
	load_tick(&vm, &mild);
	TEST_ASSERT_EQ(vm.c.limit, 50);		/* undone */
	TEST_ASSERT_EQ(vm.c.safe_phase, TLBB_SAFE_REF);
}

TEST(safe_objective_is_the_estimated_cost_not_the_refill_count)
{
	/*
	 * Splitting trades each huge-group refill for 1.5 small-group ones:
	 * more refills, but 1.5 x 113 = 169.5 ns < 187 ns, so it pays under
	 * the default costs, and not when both groups cost the same.
	 */
	struct tlbb_params p;
	unsigned int uniform;

	for (uniform = 0; uniform < 2; uniform++) {
		struct test_vm vm;
		u64 t;

		safe_params(&p);
		if (uniform)
			p.cost_small_ns = p.cost_huge_ns;
		safe_vm(&vm, &p, 50);
		for (t = 0; t < SAFE_TRIGGER + 60; t++) {
			u64 split = 50 - vm.huge_in_use;

			test_vm_tick(&vm, 100000 - split * 2000,
				     100 + split * 3000);
		}
		TEST_ASSERT(uniform ? vm.c.limit == 50 : vm.c.limit == 0,
			    "uniform %u: limit %llu", uniform,
			    (unsigned long long)vm.c.limit);
	}
}

TEST(safe_gain_must_exceed_gain_pm)
{
	/* 50 -> 0 on mcf: 52 357 040 -> 19 212 960 ns, 633.04 permille */
	static const u64 gains[] = { 633, 634 };
	unsigned int i;

	for (i = 0; i < 2; i++) {
		struct tlbb_params p;
		struct test_vm vm;

		safe_params(&p);
		p.hill_gain_pm = gains[i];
		safe_vm(&vm, &p, 50);
		load_ticks(&vm, &mcf_load, SAFE_TRIGGER + 6);
		TEST_ASSERT_EQ(vm.c.hill_best_limit, i ? 50 : 0);
	}
}

TEST(safe_new_search_when_the_cost_moves_tries_upward_first)
{
	/* held at 14; then the best moves to 30: the cost rises 80 % */
	static const struct load moved = { LOAD_V, 30, 100000, 5000 };
	static const struct load near = { LOAD_V, 14, 124000, 5000 };
	struct tlbb_params p;
	struct test_vm vm;

	safe_params(&p);
	safe_vm(&vm, &p, 50);
	load_ticks(&vm, &mcf_load, SAFE_TRIGGER + 2);
	until_held(&vm, &mcf_load, 100);
	load_ticks(&vm, &mcf_load, 3);
	TEST_ASSERT_EQ(vm.c.safe_phase, TLBB_SAFE_HOLD);
	/* within hill_retry_pm (25 %) of the held cost: holds */
	TEST_ASSERT_EQ(load_ticks(&vm, &near, 30), 0);
	TEST_ASSERT_EQ(vm.c.limit, 14);
	load_ticks(&vm, &moved, 3);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_RAISING);
	/* hill_first_step_pm of 50 pages: 6 up */
	TEST_ASSERT_EQ(vm.c.limit, 20);
	until_held(&vm, &moved, 100);
	TEST_ASSERT(vm.c.limit >= 29 && vm.c.limit <= 31, "held at %llu",
		    (unsigned long long)vm.c.limit);
	TEST_ASSERT_EQ(vm.c.safe_probe, 100);	/* it moved: no back-off */
}

TEST(safe_probes_upward_only_and_backs_off)
{
	struct tlbb_params p;
	struct test_vm vm;
	u64 probes[4], i, lowers;

	safe_params(&p);
	p.probe_ms = 600;		/* 2 windows */
	p.probe_max_ms = 3000;		/* 10 windows */
	safe_vm(&vm, &p, 50);
	load_ticks(&vm, &mcf_load, SAFE_TRIGGER + 2);
	until_held(&vm, &mcf_load, 100);
	TEST_ASSERT_EQ(vm.c.safe_probe, 2);	/* the limit moved */
	for (i = 0; i < 4; i++) {
		lowers = vm.lowers;
		load_ticks(&vm, &mcf_load, 3);	/* the reference window */
		TEST_ASSERT_EQ(vm.c.safe_phase, TLBB_SAFE_HOLD);
		load_ticks(&vm, &mcf_load, 3 * (vm.c.safe_probe - 1));
		TEST_ASSERT_EQ(vm.c.limit, 14);
		load_ticks(&vm, &mcf_load, 3);
		TEST_ASSERT_EQ(vm.c.state, TLBB_ST_RAISING);
		TEST_ASSERT_EQ(vm.c.limit, 20);	/* 6 pages up */
		/* upward only: never below the held limit */
		while (vm.c.safe_phase != TLBB_SAFE_REF) {
			load_tick(&vm, &mcf_load);
			TEST_ASSERT(vm.c.limit >= 14, "probe lowered to %llu",
				    (unsigned long long)vm.c.limit);
		}
		TEST_ASSERT_EQ(vm.c.limit, 14);
		TEST_ASSERT(vm.lowers > lowers, "no undo");
		probes[i] = vm.c.safe_probe;
	}
	TEST_ASSERT_EQ(probes[0], 4);
	TEST_ASSERT_EQ(probes[1], 8);
	TEST_ASSERT_EQ(probes[2], 10);		/* capped at probe_max_ms */
	TEST_ASSERT_EQ(probes[3], 10);
}

TEST(safe_probe_of_less_than_a_window_is_one_window)
{
	struct tlbb_params p;
	struct test_vm vm;

	safe_params(&p);
	p.probe_ms = PARAM_MIN(probe_ms);	/* 100 ms < one window */
	safe_vm(&vm, &p, 50);
	load_ticks(&vm, &mcf_load, SAFE_TRIGGER + 2);
	until_held(&vm, &mcf_load, 100);
	TEST_ASSERT_EQ(vm.c.safe_probe, 1);
}

TEST(safe_small_group_dominating_at_the_top_is_left_alone)
{
	struct tlbb_params p;
	struct test_vm vm;

	safe_params(&p);
	safe_vm(&vm, &p, 50);
	TEST_ASSERT_EQ(test_vm_ticks(&vm, SAFE_TRIGGER + 30,
				     SMALLLOAD_HUGE_PER_TICK,
				     SMALLLOAD_SMALL_PER_TICK), 0);
	TEST_ASSERT_EQ(vm.c.limit, 50);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_HOLDING);
}

TEST(safe_waits_one_window_for_raised_pages_to_form)
{
	struct tlbb_params p;
	struct test_vm vm;

	safe_params(&p);
	safe_vm(&vm, &p, 50);
	load_ticks(&vm, &mcf_load, SAFE_TRIGGER + 2);
	until_held(&vm, &mcf_load, 100);
	/* from now on, pages form only when the test says so */
	vm.instant_forming = false;
	p.probe_ms = 600;
	tlbb_ctrl_set_params(&vm.c, &p);
	TEST_ASSERT_EQ(vm.c.safe_phase, TLBB_SAFE_NONE);
	load_ticks(&vm, &mcf_load, 3);	/* a new search: upward first */
	TEST_ASSERT_EQ(vm.c.limit, 50);
	load_ticks(&vm, &mcf_load, 3);	/* none formed: one more window */
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_FORMING);
	TEST_ASSERT_EQ(vm.c.limit, 50);
	test_vm_form(&vm, 36);
	load_ticks(&vm, &mcf_load, 1);	/* formed: clearly worse at once */
	TEST_ASSERT(vm.c.limit < 50, "limit %llu",
		    (unsigned long long)vm.c.limit);
	/* a second raise whose pages never form is judged after a window */
	until_held(&vm, &mcf_load, 200);
	TEST_ASSERT(vm.c.limit <= 16, "limit %llu",
		    (unsigned long long)vm.c.limit);
}

TEST(safe_lowers_from_the_pages_in_use_and_never_below_the_floor)
{
	struct tlbb_params p;
	struct test_vm vm;

	safe_params(&p);
	p.floor_pages = 20;
	test_vm_init(&vm, &p, 50, false);
	vm.huge_in_use = 40;		/* 10 pages never touched */
	load_ticks(&vm, &mcf_load, SAFE_TRIGGER + 3);
	/* the whole range from 40 down to the floor */
	TEST_ASSERT_EQ(vm.c.limit, 20);
	until_held(&vm, &mcf_load, 100);
	TEST_ASSERT_EQ(vm.c.limit, 20);
	TEST_ASSERT(vm.c.limit >= p.floor_pages, "below the floor");
	/* at the floor with the floor at the pages in use: nothing to try */
	p.floor_pages = 50;
	tlbb_ctrl_set_params(&vm.c, &p);
	load_ticks(&vm, &mcf_load, 6);
	TEST_ASSERT_EQ(vm.c.limit, 50);
	TEST_ASSERT_EQ(vm.c.safe_phase, TLBB_SAFE_HOLD);
}

TEST(safe_load_gone_mid_search_returns_to_the_best_limit)
{
	struct tlbb_params p;
	struct test_vm vm;

	safe_params(&p);
	safe_vm(&vm, &p, 50);
	load_ticks(&vm, &mcf_load, SAFE_TRIGGER + 2);
	load_ticks(&vm, &mcf_load, 4);	/* 50 -> 0 kept, then 25 tried */
	TEST_ASSERT_EQ(vm.c.limit, 25);
	TEST_ASSERT_EQ(vm.c.hill_best_limit, 0);
	TEST_ASSERT_EQ(test_vm_tick(&vm, 0, 0), TLBB_ACT_LOWER);
	TEST_ASSERT_EQ(vm.c.limit, 0);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_IDLE);
	TEST_ASSERT_EQ(vm.c.safe_phase, TLBB_SAFE_NONE);
	/* gone again while holding: nothing to undo */
	TEST_ASSERT_EQ(test_vm_tick(&vm, 0, 0), TLBB_ACT_NONE);
	TEST_ASSERT_EQ(vm.c.limit, 0);
}

TEST(safe_monitor_only_never_moves)
{
	struct tlbb_params p;
	struct test_vm vm;

	safe_params(&p);
	test_vm_init(&vm, &p, 50, true);
	TEST_ASSERT_EQ(load_ticks(&vm, &mcf_load, SAFE_TRIGGER + 60), 0);
	TEST_ASSERT_EQ(vm.c.limit, 50);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_MONITOR);
	TEST_ASSERT(vm.c.decisions >= 19, "decisions %llu",
		    (unsigned long long)vm.c.decisions);
}

TEST(safe_other_methods_never_end_a_window_early)
{
	struct tlbb_params p;
	struct test_vm vm;

	/* hill mid-search, a much worse tick: the window runs its 3 ticks */
	test_params(&p);
	p.method = TLBB_METHOD_HILL;
	safe_vm(&vm, &p, 50);
	load_ticks(&vm, &mcf_load, SAFE_TRIGGER + 3);
	TEST_ASSERT_EQ(vm.c.limit, 44);
	test_vm_tick(&vm, 10 * MCF_HUGE_PER_TICK, 0);
	TEST_ASSERT_EQ(vm.c.nsamples, 1);
	TEST_ASSERT_EQ(vm.c.limit, 44);
}
