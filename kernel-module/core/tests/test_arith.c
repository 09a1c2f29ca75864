// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * The fixed-point arithmetic: load estimate, trigger ticks, imbalance y,
 * checked against a 128-bit reference (the tests may use __int128; the core
 * may not) over hand-picked and pseudo-random inputs up to and past 2^40
 * refills per tick, and the names of states and groups.
 */
#include <string.h>

#include "test_harness.h"
#include "vm_helper.h"
#include "xorshift.h"

typedef unsigned __int128 u128;

#define U64_MAX_ (~(u64)0)

/* Exact min(cap, floor(a * b / d)), d != 0. */
static u64 ref_mul_div_cap(u128 a, u128 b, u128 d, u64 cap)
{
	u128 q = a * b / d;

	return q > cap ? cap : (u64)q;
}

static u64 ref_load(const struct tlbb_params *p, u64 h, u64 s, u32 vcpus)
{
	return ref_mul_div_cap((u128)h + s, p->refill_cost_ns,
			       (u128)p->interval_ms * (vcpus ? vcpus : 1),
			       TLBB_LOAD_MAX_MILLI);
}

/* Exact y x1000 (max over min of the per-entry rates), capped. */
static u64 ref_y(const struct tlbb_params *p, u64 h, u64 s,
		 enum tlbb_group *g)
{
	u128 fh = (u128)h * p->small_entries, fs = (u128)s * p->huge_entries;

	if (fh == fs) {
		*g = TLBB_G_NONE;
		return TLBB_Y_BALANCED_MILLI;
	}
	*g = fh > fs ? TLBB_G_HUGE : TLBB_G_SMALL;
	if (fh < fs) {
		u128 t = fh;

		fh = fs;
		fs = t;
	}
	if (!fs)
		return TLBB_Y_MAX_MILLI;
	return ref_mul_div_cap(fh, 1000, fs, TLBB_Y_MAX_MILLI);
}

static u64 load_of(const struct tlbb_params *p, u64 h, u64 s, u32 vcpus)
{
	struct tlbb_input in = {
		.refills_huge = h, .refills_small = s, .nr_vcpus = vcpus,
	};

	return tlbb_load_milli(p, &in);
}

static u64 rng_state = 0x9e3779b97f4a7c15ULL;

static u64 rng(void)
{
	return xorshift64(&rng_state);
}

/* A value of random magnitude: 0 .. 2^bits - 1 with bits in 0..@maxbits. */
/* Uniform enough in [lo, hi]. */
static u64 rng_between(u64 lo, u64 hi)
{
	return lo + rng() % (hi - lo + 1);
}

static u64 rng_mag(unsigned int maxbits)
{
	unsigned int bits = rng() % (maxbits + 1);

	return bits ? rng() >> (64 - bits) : 0;
}

TEST(load_mcf_case)
{
	struct tlbb_params p;

	test_params(&p);
	/* 218 044 refills x 50 ns in 100 ms = 10.9022 % = 109.022 permille */
	TEST_ASSERT_EQ(load_of(&p, MCF_HUGE_PER_TICK, MCF_SMALL_PER_TICK, 1),
		       109022);
	/* Two vCPUs share the same refills: half the share. */
	TEST_ASSERT_EQ(load_of(&p, MCF_HUGE_PER_TICK, MCF_SMALL_PER_TICK, 2),
		       54511);
	TEST_ASSERT(109022 > p.load_threshold_pm * 1000, "mcf not loaded");
}

TEST(load_corners)
{
	struct tlbb_params p;

	test_params(&p);
	TEST_ASSERT_EQ(load_of(&p, 0, 0, 1), 0);
	/* nr_vcpus 0 counts as one vCPU. */
	TEST_ASSERT_EQ(load_of(&p, 1000, 0, 0), load_of(&p, 1000, 0, 1));
	/* A share cannot exceed the whole tick. */
	TEST_ASSERT_EQ(load_of(&p, 100000000, 0, 1), TLBB_LOAD_MAX_MILLI);
	/* The sum of the two groups carries out of 64 bits: still capped. */
	TEST_ASSERT_EQ(load_of(&p, U64_MAX_, 1, 1), TLBB_LOAD_MAX_MILLI);
	TEST_ASSERT_EQ(load_of(&p, U64_MAX_, U64_MAX_, 4096),
		       TLBB_LOAD_MAX_MILLI);
	/* 2^40 refills at the highest cost over the most vCPU time. */
	p.refill_cost_ns = PARAM_MAX(refill_cost_ns);
	p.interval_ms = PARAM_MAX(interval_ms);
	TEST_ASSERT_EQ(load_of(&p, 1ULL << 40, 1ULL << 40, 0xffffffffu),
		       ref_load(&p, 1ULL << 40, 1ULL << 40, 0xffffffffu));
	/* Product overflows 64 bits and the divisor is large: scaled. */
	TEST_ASSERT_EQ(load_of(&p, 1ULL << 62, 0, 0xffffffffu),
		       ref_load(&p, 1ULL << 62, 0, 0xffffffffu));
	/* The sum carries out of 64 bits and the divisor is large. */
	p.refill_cost_ns = 1;
	TEST_ASSERT_EQ(load_of(&p, 3ULL << 62, 3ULL << 62, 0xffffffffu),
		       ref_load(&p, 3ULL << 62, 3ULL << 62, 0xffffffffu));
	p.refill_cost_ns = PARAM_MAX(refill_cost_ns);
	/* Product overflows and the divisor is tiny: capped. */
	p.interval_ms = 1;
	TEST_ASSERT_EQ(load_of(&p, 1ULL << 62, 0, 1), TLBB_LOAD_MAX_MILLI);
}

/* Exact up to 2^40 refills per group and tick, within 2^-18 beyond. */
TEST(load_random_against_reference)
{
	struct tlbb_params p;
	int i;

	test_params(&p);
	for (i = 0; i < 200000; i++) {
		u64 h = rng_mag(64), s = rng_mag(64), got, want;
		u32 vcpus = (u32)rng_mag(32);

		p.refill_cost_ns = rng_between(PARAM_MIN(refill_cost_ns),
					       PARAM_MAX(refill_cost_ns));
		p.interval_ms = rng_between(PARAM_MIN(interval_ms),
					    PARAM_MAX(interval_ms));
		got = load_of(&p, h, s, vcpus);
		want = ref_load(&p, h, s, vcpus);
		if (h <= 1ULL << 40 && s <= 1ULL << 40)
			TEST_ASSERT(got == want, "h=%llu s=%llu: %llu != %llu",
				    (unsigned long long)h,
				    (unsigned long long)s,
				    (unsigned long long)got,
				    (unsigned long long)want);
		else
			TEST_ASSERT((got > want ? got - want : want - got) <=
				    2 + (want >> 18),
				    "h=%llu s=%llu: %llu vs %llu",
				    (unsigned long long)h,
				    (unsigned long long)s,
				    (unsigned long long)got,
				    (unsigned long long)want);
	}
}

TEST(trigger_ticks_round_up)
{
	struct tlbb_params p;

	test_params(&p);
	TEST_ASSERT_EQ(tlbb_trigger_ticks(&p), 100);	/* 10 s / 100 ms */
	p.sustain_ms = 0;
	TEST_ASSERT_EQ(tlbb_trigger_ticks(&p), 0);
	p.sustain_ms = 1;
	TEST_ASSERT_EQ(tlbb_trigger_ticks(&p), 1);
	p.sustain_ms = 250;
	TEST_ASSERT_EQ(tlbb_trigger_ticks(&p), 3);
	p.sustain_ms = 300;
	TEST_ASSERT_EQ(tlbb_trigger_ticks(&p), 3);
	p.sustain_ms = PARAM_MAX(sustain_ms);
	p.interval_ms = 1;
	TEST_ASSERT_EQ(tlbb_trigger_ticks(&p), PARAM_MAX(sustain_ms));
	/* An unchecked interval of 0 counts as 1 ms, never divides by 0. */
	p.interval_ms = 0;
	TEST_ASSERT_EQ(tlbb_trigger_ticks(&p), PARAM_MAX(sustain_ms));
}

TEST(imbalance_mcf_case)
{
	struct tlbb_params p;
	enum tlbb_group g;
	u64 y;

	test_params(&p);
	/* (218000 / 64) / (44 / 2048) = 158545.45... */
	y = tlbb_imbalance_milli(&p, MCF_HUGE_PER_TICK, MCF_SMALL_PER_TICK,
				 &g);
	TEST_ASSERT_EQ(g, TLBB_G_HUGE);
	TEST_ASSERT_EQ(y, 158545454);
	TEST_ASSERT(y > p.imbalance_threshold * 1000, "mcf y not above 20");
	y = tlbb_imbalance_milli(&p, SMALLLOAD_HUGE_PER_TICK,
				 SMALLLOAD_SMALL_PER_TICK, &g);
	TEST_ASSERT_EQ(g, TLBB_G_SMALL);
	/* (218000 / 2048) / (10 / 64) = 681.25 */
	TEST_ASSERT_EQ(y, 681250);
}

TEST(imbalance_corners)
{
	struct tlbb_params p;
	enum tlbb_group g;

	test_params(&p);
	/* 0/0: no information, balanced, no group dominates. */
	TEST_ASSERT_EQ(tlbb_imbalance_milli(&p, 0, 0, &g), 1000);
	TEST_ASSERT_EQ(g, TLBB_G_NONE);
	/* Equal per-entry rates: 64 huge vs 2048 small refills. */
	TEST_ASSERT_EQ(tlbb_imbalance_milli(&p, 64, 2048, &g), 1000);
	TEST_ASSERT_EQ(g, TLBB_G_NONE);
	/* One group silent: y saturates at its cap, the other dominates. */
	TEST_ASSERT_EQ(tlbb_imbalance_milli(&p, 1, 0, &g), TLBB_Y_MAX_MILLI);
	TEST_ASSERT_EQ(g, TLBB_G_HUGE);
	TEST_ASSERT_EQ(tlbb_imbalance_milli(&p, 0, 1, &g), TLBB_Y_MAX_MILLI);
	TEST_ASSERT_EQ(g, TLBB_G_SMALL);
	/* Extremes: both at U64_MAX is a tie of per-entry rates? No: */
	TEST_ASSERT_EQ(tlbb_imbalance_milli(&p, U64_MAX_, U64_MAX_, &g),
		       32000);	/* 2048 / 64 */
	TEST_ASSERT_EQ(g, TLBB_G_HUGE);
	TEST_ASSERT_EQ(tlbb_imbalance_milli(&p, U64_MAX_, 1, &g),
		       TLBB_Y_MAX_MILLI);
	TEST_ASSERT_EQ(tlbb_imbalance_milli(&p, 1, U64_MAX_, &g),
		       TLBB_Y_MAX_MILLI);
	TEST_ASSERT_EQ(g, TLBB_G_SMALL);
	/* Just below the cap stays exact. */
	p.huge_entries = 1;
	p.small_entries = 1;
	TEST_ASSERT_EQ(tlbb_imbalance_milli(&p, 999999999, 1, &g),
		       999999999000ULL);
	TEST_ASSERT_EQ(tlbb_imbalance_milli(&p, 1000000001, 1, &g),
		       TLBB_Y_MAX_MILLI);
}

/*
 * Exact while both refill counts are at most 2^40 and the larger
 * per-entry product times 1000 fits in 64 bits; otherwise within 2^-18,
 * and a dominance too close to call may read as a tie.
 */
static bool imbalance_close(const struct tlbb_params *p, u64 h, u64 s,
			    u64 got, u64 want, enum tlbb_group g,
			    enum tlbb_group wg)
{
	u128 fh = (u128)h * p->small_entries, fs = (u128)s * p->huge_entries;
	u128 big = fh > fs ? fh : fs;
	u64 err = want > got ? want - got : got - want;

	if (h <= 1ULL << 40 && s <= 1ULL << 40) {
		if (g != wg)
			return false;
		if (big * 1000 <= U64_MAX_)
			return got == want;
	}
	return err <= 2 + (want >> 18) && (g == wg || g == TLBB_G_NONE);
}

TEST(imbalance_random_against_reference)
{
	struct tlbb_params p;
	int i;

	test_params(&p);
	for (i = 0; i < 200000; i++) {
		u64 h = rng_mag(64), s = rng_mag(64), got, want;
		enum tlbb_group g, wg;

		p.huge_entries = PARAM_MIN(huge_entries) + rng_mag(20) %
			(PARAM_MAX(huge_entries) - PARAM_MIN(huge_entries) + 1);
		p.small_entries = PARAM_MIN(small_entries) + rng_mag(20) %
			(PARAM_MAX(small_entries) - PARAM_MIN(small_entries) + 1);
		got = tlbb_imbalance_milli(&p, h, s, &g);
		want = ref_y(&p, h, s, &wg);
		TEST_ASSERT(imbalance_close(&p, h, s, got, want, g, wg),
			    "h=%llu s=%llu: %llu/%d vs %llu/%d",
			    (unsigned long long)h, (unsigned long long)s,
			    (unsigned long long)got, g,
			    (unsigned long long)want, wg);
	}
}

TEST(names)
{
	static const char *const st[] = {
		"idle", "sustain", "counting", "lowering", "raising",
		"forming", "monitor", "holding",
	};
	unsigned int i;

	TEST_ASSERT_EQ(sizeof(st) / sizeof(st[0]), TLBB_ST_COUNT);
	for (i = 0; i < TLBB_ST_COUNT; i++)
		TEST_ASSERT(!strcmp(tlbb_state_name(i), st[i]), "state %u: %s",
			    i, tlbb_state_name(i));
	TEST_ASSERT(!strcmp(tlbb_state_name(TLBB_ST_COUNT), "unknown"), "st");
	TEST_ASSERT(!strcmp(tlbb_group_name(TLBB_G_NONE), "none"), "none");
	TEST_ASSERT(!strcmp(tlbb_group_name(TLBB_G_HUGE), "huge"), "huge");
	TEST_ASSERT(!strcmp(tlbb_group_name(TLBB_G_SMALL), "small"), "small");
	TEST_ASSERT(!strcmp(tlbb_group_name((enum tlbb_group)3), "unknown"),
		    "group 3");
}
