// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * The method, tick by tick: sustain counter, sampling window, the decisions
 * and every transition of the state machine in docs/controller.md.
 *
 * Unless a test says otherwise: default parameters (100 ms ticks, 10 s
 * sustain = 100 ticks, 3 samples, threshold 20), one vCPU, a VM of 64 huge
 * pages (128 MiB of 2 MiB pages), all formed.
 */
#include "test_harness.h"
#include "vm_helper.h"

#define TRIGGER 100	/* default sustain_ms / interval_ms */

static void mcf(struct test_vm *vm, u64 ticks)
{
	test_vm_ticks(vm, ticks, MCF_HUGE_PER_TICK, MCF_SMALL_PER_TICK);
}

static void small_load(struct test_vm *vm, u64 ticks)
{
	test_vm_ticks(vm, ticks, SMALLLOAD_HUGE_PER_TICK,
		      SMALLLOAD_SMALL_PER_TICK);
}

/* Entries 1:1, so y is simply huge / small; loaded at any size used. */
static void params_unit_entries(struct tlbb_params *p)
{
	test_params(p);
	p->huge_entries = 1;
	p->small_entries = 1;
	p->sustain_ms = 0;
}

/* One tick whose y (huge-dominant) is @y_ratio, far above the load. */
static enum tlbb_action tick_y(struct test_vm *vm, u64 y_ratio)
{
	return test_vm_tick(vm, y_ratio * 100000, 100000);
}

TEST(mcf_limit_steps_down_after_sustain)
{
	struct tlbb_params p;
	struct test_vm vm;
	u64 t, step;

	test_params(&p);
	test_vm_init(&vm, &p, 64, false);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_IDLE);
	TEST_ASSERT_EQ(vm.c.limit, 64);
	for (t = 1; t <= TRIGGER; t++) {
		TEST_ASSERT_EQ(test_vm_tick(&vm, MCF_HUGE_PER_TICK,
					    MCF_SMALL_PER_TICK),
			       TLBB_ACT_NONE);
		TEST_ASSERT_EQ(vm.c.state, TLBB_ST_SUSTAIN);
		TEST_ASSERT_EQ(vm.c.load_count, t);
	}
	TEST_ASSERT_EQ(vm.c.load_pm_milli, 109022);
	mcf(&vm, 2);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_COUNTING);
	TEST_ASSERT_EQ(vm.c.nsamples, 2);
	TEST_ASSERT_EQ(vm.c.limit, 64);
	/* Tick 103: the first full window. */
	TEST_ASSERT_EQ(test_vm_tick(&vm, MCF_HUGE_PER_TICK,
				    MCF_SMALL_PER_TICK), TLBB_ACT_LOWER);
	TEST_ASSERT_EQ(vm.c.ticks, TRIGGER + 3);
	TEST_ASSERT_EQ(vm.c.limit, 63);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_LOWERING);
	TEST_ASSERT_EQ(vm.c.dominant, TLBB_G_HUGE);
	TEST_ASSERT_EQ(vm.c.y_milli, 158545454);
	TEST_ASSERT(vm.c.y_milli > 20 * 1000 * 1000,
		    "y not far above 20");
	/* Then one page per decision, one decision per 3 ticks. */
	for (step = 1; step < 64; step++) {
		mcf(&vm, 2);
		TEST_ASSERT_EQ(vm.c.limit, 64 - step);
		TEST_ASSERT_EQ(test_vm_tick(&vm, MCF_HUGE_PER_TICK,
					    MCF_SMALL_PER_TICK),
			       TLBB_ACT_LOWER);
		TEST_ASSERT_EQ(vm.c.limit, 63 - step);
		TEST_ASSERT_EQ(vm.huge_in_use, 63 - step);
		TEST_ASSERT_EQ(vm.c.state, TLBB_ST_LOWERING);
	}
	TEST_ASSERT_EQ(vm.c.lowered, 64);
	TEST_ASSERT_EQ(vm.c.load_count, TRIGGER);
	/* At the floor (0) a decision can do nothing: the run stops. */
	mcf(&vm, 3);
	TEST_ASSERT_EQ(vm.c.limit, 0);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_IDLE);
	TEST_ASSERT_EQ(vm.c.load_count, 0);
	TEST_ASSERT_EQ(vm.c.decisions, 65);
	mcf(&vm, 1);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_SUSTAIN);
}

TEST(recovery_when_load_moves_to_small_group)
{
	struct tlbb_params p;
	struct test_vm vm;

	test_params(&p);
	test_vm_init(&vm, &p, 64, false);
	mcf(&vm, TRIGGER + 3 * 10);
	TEST_ASSERT_EQ(vm.c.limit, 54);
	TEST_ASSERT_EQ(vm.huge_in_use, 54);

	/* The relation flips: the lowering run ends, the limit holds. */
	small_load(&vm, 3);
	TEST_ASSERT_EQ(vm.c.limit, 54);
	TEST_ASSERT_EQ(vm.c.dominant, TLBB_G_SMALL);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_IDLE);
	TEST_ASSERT_EQ(vm.c.load_count, 0);

	/* Sustained again, small dominates, N_hc == N_hl: raise. */
	small_load(&vm, TRIGGER + 2);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_COUNTING);
	TEST_ASSERT_EQ(test_vm_tick(&vm, SMALLLOAD_HUGE_PER_TICK,
				    SMALLLOAD_SMALL_PER_TICK), TLBB_ACT_RAISE);
	TEST_ASSERT_EQ(vm.c.limit, 55);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_RAISING);
	TEST_ASSERT_EQ(vm.c.raised, 1);

	/* Nothing formed yet: N_hc < N_hl, forming, stop and reset. */
	small_load(&vm, 3);
	TEST_ASSERT_EQ(vm.c.limit, 55);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_FORMING);
	TEST_ASSERT_EQ(vm.c.load_count, 0);

	/* Huge pages form as fast as allowed: up to the VM's size. */
	vm.instant_forming = true;
	test_vm_form(&vm, 1);
	small_load(&vm, TRIGGER + 3 * 9);
	TEST_ASSERT_EQ(vm.c.limit, 64);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_RAISING);
	TEST_ASSERT_EQ(vm.raises, 10);
	/* The limit covers the VM: nothing left to do, the run ends. */
	small_load(&vm, 3);
	TEST_ASSERT_EQ(vm.c.limit, 64);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_IDLE);
	TEST_ASSERT_EQ(vm.c.raised, 10);
}

TEST(raise_run_ends_when_huge_group_dominates_again)
{
	struct tlbb_params p;
	struct test_vm vm;

	test_params(&p);
	p.sustain_ms = 0;
	test_vm_init(&vm, &p, 64, false);
	vm.instant_forming = true;
	mcf(&vm, 3 * 5);
	TEST_ASSERT_EQ(vm.c.limit, 59);
	small_load(&vm, 3);		/* flip: stop */
	small_load(&vm, 3 * 2);		/* new run: raise twice */
	TEST_ASSERT_EQ(vm.c.limit, 61);
	TEST_ASSERT_EQ(vm.c.run_dir, TLBB_G_SMALL);
	mcf(&vm, 3);			/* flip again: stop, limit holds */
	TEST_ASSERT_EQ(vm.c.limit, 61);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_IDLE);
	TEST_ASSERT_EQ(vm.c.run_dir, TLBB_G_NONE);
}

TEST(raise_capped_at_total)
{
	struct tlbb_params p;
	struct test_vm vm;

	test_params(&p);
	p.sustain_ms = 0;
	test_vm_init(&vm, &p, 64, false);
	vm.instant_forming = true;
	mcf(&vm, 3 * 2);
	TEST_ASSERT_EQ(vm.c.limit, 62);
	p.step_pages = 5;
	tlbb_ctrl_set_params(&vm.c, &p);
	small_load(&vm, 3);
	TEST_ASSERT_EQ(vm.c.limit, 64);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_RAISING);
}

TEST(lower_starts_from_huge_pages_in_use)
{
	struct tlbb_params p;
	struct test_vm vm;

	test_params(&p);
	p.sustain_ms = 0;
	test_vm_init(&vm, &p, 64, false);
	vm.huge_in_use = 30;	/* only 30 of 64 ever became huge */
	mcf(&vm, 3);
	TEST_ASSERT_EQ(vm.c.limit, 29);	/* N_hl = N_hc - 1 */
	p.step_pages = 100;		/* a step past zero stops at 0 */
	tlbb_ctrl_set_params(&vm.c, &p);
	mcf(&vm, 3);
	TEST_ASSERT_EQ(vm.c.limit, 0);
}

TEST(floor_is_never_crossed)
{
	struct tlbb_params p;
	struct test_vm vm;
	u64 t;

	test_params(&p);
	p.floor_pages = 60;
	test_vm_init(&vm, &p, 64, false);
	for (t = 0; t < 3000; t++) {
		mcf(&vm, 1);
		TEST_ASSERT(vm.c.limit >= 60, "limit %llu below floor",
			    (unsigned long long)vm.c.limit);
	}
	TEST_ASSERT_EQ(vm.c.limit, 60);
	TEST_ASSERT_EQ(vm.c.lowered, 4);
	/* Each later run finds nothing to do and ends at once. */
	TEST_ASSERT(vm.c.decisions > 5, "only %llu decisions",
		    (unsigned long long)vm.c.decisions);
	p.step_pages = 3;	/* 61 - 3 = 58 is below 60: stops at 60 */
	test_vm_init(&vm, &p, 64, false);
	mcf(&vm, TRIGGER + 3);
	TEST_ASSERT_EQ(vm.c.limit, 61);
	mcf(&vm, 3);
	TEST_ASSERT_EQ(vm.c.limit, 60);
}

TEST(floor_above_total_means_never_lower)
{
	struct tlbb_params p;
	struct test_vm vm;

	test_params(&p);
	p.floor_pages = 100;
	test_vm_init(&vm, &p, 64, false);
	mcf(&vm, 1000);
	TEST_ASSERT_EQ(vm.c.limit, 64);
	TEST_ASSERT_EQ(vm.c.lowered, 0);
	TEST_ASSERT(vm.c.decisions > 0, "no decision made");
}

TEST(floor_raised_mid_run_lifts_limit)
{
	struct tlbb_params p;
	struct test_vm vm;

	test_params(&p);
	p.sustain_ms = 0;
	test_vm_init(&vm, &p, 64, false);
	mcf(&vm, 3 * 10);
	TEST_ASSERT_EQ(vm.c.limit, 54);
	p.floor_pages = 58;
	tlbb_ctrl_set_params(&vm.c, &p);
	/* Even an idle tick applies the new floor. */
	TEST_ASSERT_EQ(test_vm_tick(&vm, 0, 0), TLBB_ACT_RAISE);
	TEST_ASSERT_EQ(vm.c.limit, 58);
	TEST_ASSERT_EQ(vm.c.raised, 1);
	TEST_ASSERT_EQ(test_vm_tick(&vm, 0, 0), TLBB_ACT_NONE);
}

TEST(monitor_only_computes_everything_changes_nothing)
{
	struct tlbb_params p;
	struct test_vm vm;

	test_params(&p);
	test_vm_init(&vm, &p, 64, true);
	mcf(&vm, TRIGGER);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_SUSTAIN);
	mcf(&vm, 3);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_MONITOR);
	TEST_ASSERT_EQ(vm.c.y_milli, 158545454);
	TEST_ASSERT_EQ(vm.c.dominant, TLBB_G_HUGE);
	TEST_ASSERT_EQ(vm.c.limit, 64);
	/* It keeps deciding "would lower", never lowering. */
	mcf(&vm, 3 * 50);
	TEST_ASSERT_EQ(vm.c.decisions, 51);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_MONITOR);
	TEST_ASSERT_EQ(vm.c.limit, 64);
	TEST_ASSERT_EQ(vm.c.lowered, 0);
	TEST_ASSERT_EQ(vm.lowers, 0);
	/* Small group: all may be huge already, nothing to do. */
	small_load(&vm, 3 + TRIGGER + 3);
	TEST_ASSERT_EQ(vm.c.dominant, TLBB_G_SMALL);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_IDLE);
	TEST_ASSERT_EQ(vm.c.raised, 0);
}

/*
 * The caller may flip monitor_only on a live controller (the module lifts
 * the limit itself when leaving balance mode): from then on the core holds
 * the limit where it is, whatever it decides.
 */
TEST(monitor_only_switched_on_holds_a_lowered_limit)
{
	struct tlbb_params p;
	struct test_vm vm;

	test_params(&p);
	p.sustain_ms = 0;
	test_vm_init(&vm, &p, 64, false);
	mcf(&vm, 3 * 4);
	TEST_ASSERT_EQ(vm.c.limit, 60);
	vm.c.monitor_only = true;
	small_load(&vm, 3);	/* flip: stop */
	small_load(&vm, 3);	/* would raise */
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_MONITOR);
	TEST_ASSERT_EQ(vm.c.run_dir, TLBB_G_SMALL);
	TEST_ASSERT_EQ(vm.c.limit, 60);
	p.floor_pages = 62;	/* not applied either */
	tlbb_ctrl_set_params(&vm.c, &p);
	small_load(&vm, 10);
	TEST_ASSERT_EQ(vm.c.limit, 60);
	TEST_ASSERT_EQ(vm.c.raised, 0);
}

TEST(forming_stops_and_resets)
{
	struct tlbb_params p;
	struct test_vm vm;

	test_params(&p);
	test_vm_init(&vm, &p, 64, false);
	vm.huge_in_use = 40;	/* khugepaged still at work */
	small_load(&vm, TRIGGER + 3);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_FORMING);
	TEST_ASSERT_EQ(vm.c.limit, 64);
	TEST_ASSERT_EQ(vm.c.load_count, 0);
	TEST_ASSERT_EQ(vm.c.nsamples, 0);
	small_load(&vm, 1);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_SUSTAIN);
	TEST_ASSERT_EQ(vm.c.load_count, 1);
	/* With no sustain time, forming leads straight to counting. */
	p.sustain_ms = 0;
	test_vm_init(&vm, &p, 64, false);
	vm.huge_in_use = 40;
	small_load(&vm, 3);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_FORMING);
	small_load(&vm, 1);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_COUNTING);
}

TEST(y_averages_exactly_samples_values)
{
	struct tlbb_params p;
	struct test_vm vm;

	params_unit_entries(&p);
	p.samples = 4;
	test_vm_init(&vm, &p, 64, false);
	/* 10, 20, 30 do not decide; the 4th sample (60) does: mean 30. */
	tick_y(&vm, 10);
	tick_y(&vm, 20);
	tick_y(&vm, 30);
	TEST_ASSERT_EQ(vm.c.decisions, 0);
	TEST_ASSERT_EQ(vm.c.y_milli, 0);
	TEST_ASSERT_EQ(vm.c.nsamples, 3);
	TEST_ASSERT_EQ(tick_y(&vm, 60), TLBB_ACT_LOWER);
	TEST_ASSERT_EQ(vm.c.y_milli, 30000);
	TEST_ASSERT_EQ(vm.c.nsamples, 0);
	/* The next window starts empty: 21 21 21 16 has mean 19.75. */
	tick_y(&vm, 21);
	tick_y(&vm, 21);
	tick_y(&vm, 21);
	TEST_ASSERT_EQ(vm.c.limit, 63);
	TEST_ASSERT_EQ(tick_y(&vm, 16), TLBB_ACT_NONE);
	TEST_ASSERT_EQ(vm.c.y_milli, 19750);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_IDLE);
	TEST_ASSERT_EQ(vm.c.decisions, 2);
}

TEST(window_of_one_and_of_max_samples)
{
	struct tlbb_params p;
	struct test_vm vm;
	u64 i;

	params_unit_entries(&p);
	p.samples = 1;
	test_vm_init(&vm, &p, 1000, false);
	for (i = 1; i <= 100; i++) {
		TEST_ASSERT_EQ(tick_y(&vm, 50 + i), TLBB_ACT_LOWER);
		TEST_ASSERT_EQ(vm.c.y_milli, (50 + i) * 1000);
	}
	p.samples = TLBB_MAX_SAMPLES;
	test_vm_init(&vm, &p, 1000, false);
	for (i = 1; i < TLBB_MAX_SAMPLES; i++)
		TEST_ASSERT_EQ(tick_y(&vm, i + 1), TLBB_ACT_NONE);
	TEST_ASSERT_EQ(tick_y(&vm, 65), TLBB_ACT_LOWER);
	TEST_ASSERT_EQ(vm.c.y_milli, 33500);	/* mean of 2..65 */
	TEST_ASSERT_EQ(vm.c.decisions, 1);
}

TEST(y_at_threshold_is_not_above)
{
	struct tlbb_params p;
	struct test_vm vm;

	params_unit_entries(&p);
	test_vm_init(&vm, &p, 64, false);
	tick_y(&vm, 20);
	tick_y(&vm, 20);
	TEST_ASSERT_EQ(tick_y(&vm, 20), TLBB_ACT_NONE);
	TEST_ASSERT_EQ(vm.c.y_milli, 20000);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_IDLE);
	TEST_ASSERT_EQ(vm.c.load_count, 0);
	TEST_ASSERT_EQ(vm.c.limit, 64);
	/*
	 * y is kept in thousandths and the mean rounds down: one sample of
	 * 20.002 leaves the mean at 20.000, one of 20.003 tips it to 20.001.
	 */
	tick_y(&vm, 20);
	tick_y(&vm, 20);
	TEST_ASSERT_EQ(test_vm_tick(&vm, 2000200, 100000), TLBB_ACT_NONE);
	TEST_ASSERT_EQ(vm.c.y_milli, 20000);
	tick_y(&vm, 20);
	tick_y(&vm, 20);
	TEST_ASSERT_EQ(test_vm_tick(&vm, 2000300, 100000), TLBB_ACT_LOWER);
	TEST_ASSERT_EQ(vm.c.y_milli, 20001);
}

TEST(mixed_window_is_no_decision)
{
	struct tlbb_params p;
	struct test_vm vm;

	params_unit_entries(&p);
	test_vm_init(&vm, &p, 64, false);
	tick_y(&vm, 100);
	test_vm_tick(&vm, 100000, 100 * 100000);	/* small dominant */
	TEST_ASSERT_EQ(tick_y(&vm, 100), TLBB_ACT_NONE);
	TEST_ASSERT_EQ(vm.c.dominant, TLBB_G_NONE);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_IDLE);
	TEST_ASSERT_EQ(vm.c.limit, 64);
	/* A tie in the window counts as a different group too. */
	tick_y(&vm, 100);
	tick_y(&vm, 1);
	TEST_ASSERT_EQ(tick_y(&vm, 100), TLBB_ACT_NONE);
	TEST_ASSERT_EQ(vm.c.dominant, TLBB_G_NONE);
	/* A window of ties only: loaded but balanced. */
	tick_y(&vm, 1);
	tick_y(&vm, 1);
	TEST_ASSERT_EQ(tick_y(&vm, 1), TLBB_ACT_NONE);
	TEST_ASSERT_EQ(vm.c.dominant, TLBB_G_NONE);
	TEST_ASSERT_EQ(vm.c.y_milli, 1000);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_IDLE);
}

TEST(load_at_threshold_is_not_loaded)
{
	struct tlbb_params p;
	struct test_vm vm;

	test_params(&p);
	test_vm_init(&vm, &p, 64, false);
	/* 40 000 refills x 50 ns in 100 ms = exactly 20 permille. */
	test_vm_ticks(&vm, 10, 40000, 0);
	TEST_ASSERT_EQ(vm.c.load_pm_milli, 20000);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_IDLE);
	TEST_ASSERT_EQ(vm.c.load_count, 0);
	test_vm_ticks(&vm, 10, 40020, 0);	/* 20.01 permille */
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_SUSTAIN);
	TEST_ASSERT_EQ(vm.c.load_count, 10);
}

TEST(sustain_counter_decays_toward_zero)
{
	struct tlbb_params p;
	struct test_vm vm;

	test_params(&p);
	test_vm_init(&vm, &p, 64, false);
	mcf(&vm, 50);
	TEST_ASSERT_EQ(vm.c.load_count, 50);
	test_vm_ticks(&vm, 20, 0, 0);
	TEST_ASSERT_EQ(vm.c.load_count, 30);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_IDLE);
	mcf(&vm, 70);
	TEST_ASSERT_EQ(vm.c.load_count, TRIGGER);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_SUSTAIN);
	mcf(&vm, 3);
	TEST_ASSERT_EQ(vm.c.limit, 63);
	/* Decay stops at zero. */
	test_vm_init(&vm, &p, 64, false);
	mcf(&vm, 5);
	test_vm_ticks(&vm, 50, 0, 0);
	TEST_ASSERT_EQ(vm.c.load_count, 0);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_IDLE);
}

TEST(load_gone_while_counting_resets)
{
	struct tlbb_params p;
	struct test_vm vm;

	test_params(&p);
	test_vm_init(&vm, &p, 64, false);
	mcf(&vm, TRIGGER + 3 + 2);	/* one decision, 2 samples more */
	TEST_ASSERT_EQ(vm.c.limit, 63);
	TEST_ASSERT_EQ(vm.c.nsamples, 2);
	TEST_ASSERT_EQ(test_vm_tick(&vm, 100, 0), TLBB_ACT_NONE);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_IDLE);
	TEST_ASSERT_EQ(vm.c.load_count, 0);
	TEST_ASSERT_EQ(vm.c.nsamples, 0);
	TEST_ASSERT_EQ(vm.c.run_dir, TLBB_G_NONE);
	TEST_ASSERT_EQ(vm.c.limit, 63);		/* the limit holds */
	mcf(&vm, TRIGGER + 2);
	TEST_ASSERT_EQ(vm.c.limit, 63);
	mcf(&vm, 1);
	TEST_ASSERT_EQ(vm.c.limit, 62);
}

TEST(sustain_zero_and_one_tick)
{
	struct tlbb_params p;
	struct test_vm vm;

	test_params(&p);
	p.sustain_ms = 0;		/* immediate */
	test_vm_init(&vm, &p, 64, false);
	mcf(&vm, 1);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_COUNTING);
	mcf(&vm, 2);
	TEST_ASSERT_EQ(vm.c.limit, 63);
	p.sustain_ms = 1;		/* rounds up to one tick */
	test_vm_init(&vm, &p, 64, false);
	mcf(&vm, 1);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_SUSTAIN);
	mcf(&vm, 3);
	TEST_ASSERT_EQ(vm.c.limit, 63);
	TEST_ASSERT_EQ(vm.c.ticks, 4);
}

TEST(two_vcpus_halve_the_load)
{
	struct tlbb_params p;
	struct test_vm vm;

	test_params(&p);
	p.load_threshold_pm = 60;	/* mcf: 109 on 1 vCPU, 54.5 on 2 */
	test_vm_init(&vm, &p, 64, false);
	vm.nr_vcpus = 2;
	mcf(&vm, 500);
	TEST_ASSERT_EQ(vm.c.load_pm_milli, 54511);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_IDLE);
	TEST_ASSERT_EQ(vm.c.limit, 64);
	vm.nr_vcpus = 0;		/* counts as one */
	mcf(&vm, TRIGGER + 3);
	TEST_ASSERT_EQ(vm.c.load_pm_milli, 109022);
	TEST_ASSERT_EQ(vm.c.limit, 63);
}

TEST(total_pages_zero_does_nothing)
{
	struct tlbb_params p;
	struct test_vm vm;

	test_params(&p);
	p.sustain_ms = 0;
	test_vm_init(&vm, &p, 0, false);
	TEST_ASSERT_EQ(vm.c.limit, 0);
	mcf(&vm, 30);
	small_load(&vm, 30);
	TEST_ASSERT_EQ(vm.c.limit, 0);
	TEST_ASSERT_EQ(vm.c.lowered + vm.c.raised, 0);
	TEST_ASSERT_EQ(vm.c.decisions, 20);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_IDLE);
}

TEST(params_changed_mid_run_restart_the_window)
{
	struct tlbb_params p;
	struct test_vm vm;

	test_params(&p);
	test_vm_init(&vm, &p, 64, false);
	mcf(&vm, TRIGGER + 3 + 2);
	TEST_ASSERT_EQ(vm.c.nsamples, 2);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_LOWERING);
	tlbb_ctrl_set_params(&vm.c, &p);	/* same values: still resets */
	TEST_ASSERT_EQ(vm.c.nsamples, 0);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_SUSTAIN);
	TEST_ASSERT_EQ(vm.c.run_dir, TLBB_G_NONE);
	TEST_ASSERT_EQ(vm.c.load_count, TRIGGER);	/* kept */
	mcf(&vm, 2);
	TEST_ASSERT_EQ(vm.c.limit, 63);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_COUNTING);
	mcf(&vm, 1);
	TEST_ASSERT_EQ(vm.c.limit, 62);
	/* A shorter sustain time caps C_L; a longer one makes it climb. */
	p.sustain_ms = 500;
	tlbb_ctrl_set_params(&vm.c, &p);
	TEST_ASSERT_EQ(vm.c.load_count, 5);
	p.sustain_ms = 1000;
	tlbb_ctrl_set_params(&vm.c, &p);
	TEST_ASSERT_EQ(vm.c.load_count, 5);
	mcf(&vm, 5);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_SUSTAIN);
	mcf(&vm, 3);
	TEST_ASSERT_EQ(vm.c.limit, 61);
	/* Idle controller: stays idle. */
	test_vm_init(&vm, &p, 64, false);
	tlbb_ctrl_set_params(&vm.c, &p);
	TEST_ASSERT_EQ(vm.c.state, TLBB_ST_IDLE);
	/* More samples than before: the window is simply longer. */
	p.sustain_ms = 0;
	p.samples = 5;
	tlbb_ctrl_set_params(&vm.c, &p);
	mcf(&vm, 4);
	TEST_ASSERT_EQ(vm.c.limit, 64);
	mcf(&vm, 1);
	TEST_ASSERT_EQ(vm.c.limit, 63);
}

TEST(extreme_counts_through_the_tick)
{
	struct tlbb_params p;
	struct test_vm vm;
	const u64 m = ~(u64)0;

	test_params(&p);
	p.sustain_ms = 0;
	test_vm_init(&vm, &p, 1ULL << 40, false);
	test_vm_ticks(&vm, 3, m, 0);
	TEST_ASSERT_EQ(vm.c.load_pm_milli, TLBB_LOAD_MAX_MILLI);
	TEST_ASSERT_EQ(vm.c.y_milli, TLBB_Y_MAX_MILLI);
	TEST_ASSERT_EQ(vm.c.limit, (1ULL << 40) - 1);
	test_vm_ticks(&vm, 3, m, m);	/* per entry: huge 32x small */
	TEST_ASSERT_EQ(vm.c.y_milli, 32000);
	TEST_ASSERT_EQ(vm.c.limit, (1ULL << 40) - 2);
	test_vm_ticks(&vm, 3, 0, m);	/* flip: stop */
	test_vm_ticks(&vm, 3, 0, m);	/* raise */
	TEST_ASSERT_EQ(vm.c.limit, (1ULL << 40) - 1);
	TEST_ASSERT_EQ(vm.c.y_milli, TLBB_Y_MAX_MILLI);
	/* Counters of a controller that ran a long time. */
	vm.c.ticks = m - 1;
	test_vm_ticks(&vm, 1, 0, 0);
	TEST_ASSERT_EQ(vm.c.ticks, m);
}

/*
 * The module should change parameters through tlbb_ctrl_set_params(), but a
 * struct field written directly must still never fault or overrun: every
 * parameter poked to 0 and to U64_MAX, one at a time, for a few hundred
 * ticks of varied load (run under UBSan+ASan by `make test`).
 */
TEST(poked_params_never_fault)
{
	static const u64 counts[][2] = {
		{ MCF_HUGE_PER_TICK, MCF_SMALL_PER_TICK },
		{ SMALLLOAD_HUGE_PER_TICK, SMALLLOAD_SMALL_PER_TICK },
		{ 0, 0 }, { ~0ULL, 1 }, { 1, ~0ULL },
	};
	static const u64 pokes[] = { 0, 1000, ~0ULL };
	struct tlbb_params p;
	struct test_vm vm;
	unsigned int id, k, t;
	u64 *field;

	test_params(&p);
	p.sustain_ms = 0;
	for (id = 0; id < TLBB_P_COUNT; id++) {
		for (k = 0; k < sizeof(pokes) / sizeof(pokes[0]); k++) {
			test_vm_init(&vm, &p, 64, false);
			field = (u64 *)&vm.c.p + id;
			*field = pokes[k];
			for (t = 0; t < 300; t++)
				test_vm_tick(&vm, counts[t / 20 % 5][0],
					     counts[t / 20 % 5][1]);
			TEST_ASSERT(vm.c.nsamples < TLBB_MAX_SAMPLES,
				    "%s: window overran",
				    tlbb_param_descs[id].name);
		}
	}
	/* A window of samples = 1000 stops at the array's 64. */
	test_vm_init(&vm, &p, 64, false);
	vm.c.p.samples = 1000;
	mcf(&vm, TLBB_MAX_SAMPLES - 1);
	TEST_ASSERT_EQ(vm.c.limit, 64);
	mcf(&vm, 1);
	TEST_ASSERT_EQ(vm.c.limit, 63);
}
