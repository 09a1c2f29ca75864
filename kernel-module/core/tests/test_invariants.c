// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Invariants over random runs: 2000 controllers with random (valid)
 * parameters, VM sizes and modes, each ticked 400 times with refill counts
 * that jump between workloads and magnitudes, huge pages that form back at
 * random. After every tick:
 *   - the limit stays within [min(floor, total), total];
 *   - it changes only on a decision tick (or the floor lift), by at most
 *     step_pages (method hill: its first step, hill_first_step_pm of the
 *     VM, at least 1; method safe: anywhere in range, as its tries go
 *     from the best limit both ways, and a search cut short by the load
 *     going away returns to its best limit), in the direction the
 *     returned action says;
 *   - a monitor-only controller never changes it;
 *   - C_L never exceeds the trigger and the window never reaches `samples`;
 *   - `decisions` grows by at most one per tick, and two decisions of one
 *     run are at least `samples` ticks apart (not method safe, which
 *     judges a clearly worse try after one tick);
 *   - the state matches C_L: sustain means 0 < C_L <= T, a counting state
 *     means C_L == T.
 */
#include "test_harness.h"
#include "vm_helper.h"
#include "xorshift.h"

static u64 rs = 0x853c49e6748fea9bULL;

static u64 rnd(void)
{
	return xorshift64(&rs);
}

/* A random valid value for parameter @id, favouring small ones. */
static u64 rnd_param(unsigned int id)
{
	const struct tlbb_param_desc *d = &tlbb_param_descs[id];
	u64 span = d->max - d->min, v;

	switch (rnd() % 4) {
	case 0:
		return d->def;
	case 1:
		return d->min;
	case 2:
		v = rnd() % 16;
		break;
	default:
		v = rnd() % (span + 1);
		break;
	}
	return d->min + (v > span ? span : v);
}

static void rnd_counts(u64 *h, u64 *s)
{
	static const u64 mags[] = { 0, 10, 1000, 50000, 218000, 1ULL << 40,
				    ~0ULL };

	u64 mh = mags[rnd() % 7], ms = mags[rnd() % 7];

	*h = mh == ~0ULL ? rnd() : rnd() % (mh + 1);
	*s = ms == ~0ULL ? rnd() : rnd() % (ms + 1);
}

static bool counting_state(enum tlbb_state st)
{
	return st == TLBB_ST_COUNTING || st == TLBB_ST_LOWERING ||
	       st == TLBB_ST_RAISING || st == TLBB_ST_MONITOR ||
	       st == TLBB_ST_HOLDING;
}

TEST(random_runs_keep_invariants)
{
	u64 seen[TLBB_ST_COUNT] = { 0 }, lowers = 0, raises = 0, decisions = 0;
	u64 safe_undone = 0;
	unsigned int vmi, id, t;

	for (vmi = 0; vmi < 2000; vmi++) {
		struct tlbb_params p;
		struct test_vm vm;
		u64 total = rnd() % 4 ? rnd() % 300 : rnd() % (1ULL << 41);
		u64 h = 0, s = 0, floor, last_decision_tick = 0, step;
		bool monitor = rnd() % 5 == 0;

		for (id = 0; id < TLBB_P_COUNT; id++)
			TEST_ASSERT(!tlbb_param_set(&p, id, rnd_param(id)),
				    "random %s refused",
				    tlbb_param_descs[id].name);
		/* Keep most runs short enough to reach decisions. */
		if (rnd() % 4)
			p.sustain_ms = rnd() % (4 * p.interval_ms);
		test_vm_init(&vm, &p, total, monitor);
		vm.huge_in_use = rnd() % (total + 1);
		vm.nr_vcpus = (u32)(rnd() % 5);
		floor = p.floor_pages < total ? p.floor_pages : total;
		step = p.step_pages;
		if (p.method == TLBB_METHOD_HILL) {
			step = total * p.hill_first_step_pm / 1000;
			step = step ? step : 1;
		}
		if (p.method == TLBB_METHOD_SAFE)
			step = total;

		for (t = 0; t < 400; t++) {
			u64 before = vm.c.limit, dec0 = vm.c.decisions;
			enum tlbb_action act;

			if (t % 25 == 0)
				rnd_counts(&h, &s);
			if (rnd() % 3 == 0)
				test_vm_form(&vm, rnd() % 3);
			act = test_vm_tick(&vm, h, s);

			TEST_ASSERT(vm.c.limit >= floor || monitor,
				    "vm %u tick %u: limit %llu < floor %llu",
				    vmi, t, (unsigned long long)vm.c.limit,
				    (unsigned long long)floor);
			TEST_ASSERT(vm.c.limit <= total, "above total");
			TEST_ASSERT(vm.c.decisions - dec0 <= 1, "2 decisions");
			if (act != TLBB_ACT_NONE && vm.c.decisions == dec0 &&
			    p.method == TLBB_METHOD_SAFE &&
			    vm.c.state == TLBB_ST_IDLE)
				safe_undone++;	/* load gone: back to best */
			else if (act != TLBB_ACT_NONE &&
				 vm.c.decisions == dec0)
				TEST_ASSERT(act == TLBB_ACT_RAISE &&
					    before < floor &&
					    vm.c.limit == floor,
					    "vm %u tick %u: change without a "
					    "decision", vmi, t);
			else if (act == TLBB_ACT_LOWER)
				TEST_ASSERT(before - vm.c.limit <=
					    (before > vm.huge_in_use ?
					     before - vm.huge_in_use : 0) +
					    step,
					    "lowered by more than a step");
			else if (act == TLBB_ACT_RAISE && before >= floor)
				TEST_ASSERT(vm.c.limit - before <= step,
					    "raised by more than a step");
			TEST_ASSERT(vm.c.load_count <= vm.c.trigger,
				    "C_L %llu > T %llu",
				    (unsigned long long)vm.c.load_count,
				    (unsigned long long)vm.c.trigger);
			TEST_ASSERT(vm.c.nsamples < p.samples, "window full");
			if (vm.c.state == TLBB_ST_SUSTAIN)
				TEST_ASSERT(vm.c.load_count > 0, "sustain 0");
			if (counting_state(vm.c.state))
				TEST_ASSERT(vm.c.load_count == vm.c.trigger,
					    "counting below T");
			if (vm.c.decisions != dec0) {
				if (vm.c.run_dir != TLBB_G_NONE &&
				    p.method != TLBB_METHOD_SAFE &&
				    last_decision_tick)
					TEST_ASSERT(t - last_decision_tick >=
						    p.samples,
						    "decisions too close");
				last_decision_tick = t;
			}
			seen[vm.c.state]++;
		}
		lowers += vm.lowers;
		raises += vm.raises;
		decisions += vm.c.decisions;
	}
	/* The runs must have reached every state and acted both ways. */
	for (id = 0; id < TLBB_ST_COUNT; id++)
		TEST_ASSERT(seen[id] > 100, "state %s seen %llu times",
			    tlbb_state_name(id), (unsigned long long)seen[id]);
	TEST_ASSERT(safe_undone > 0, "no safe search cut short");
	TEST_ASSERT(lowers > 1000 && raises > 1000 && decisions > 10000,
		    "only %llu lowers, %llu raises, %llu decisions",
		    (unsigned long long)lowers, (unsigned long long)raises,
		    (unsigned long long)decisions);
}
