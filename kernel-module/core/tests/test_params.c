// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Tunables: defaults, the descriptor table, range checks of every parameter
 * at min-1, min, max and max+1, get/set by id, and the clamping a controller
 * applies to parameters that skipped tlbb_params_check().
 */
#include <string.h>

#include "test_harness.h"
#include "vm_helper.h"

#define U64_MAX_ (~(u64)0)

/* The .def read a second way: as a table of names and numbers. */
static const struct {
	const char *name;
	u64 def, min, max;
} def_rows[] = {
#define TLBB_PARAM(name, def, min, max, unit, help) \
	{ #name, (u64)(def), (u64)(min), (u64)(max) },
#include "../tlbb_params.def"
#undef TLBB_PARAM
};

TEST(params_descs_match_def)
{
	unsigned int i;

	TEST_ASSERT_EQ(sizeof(def_rows) / sizeof(def_rows[0]), TLBB_P_COUNT);
	for (i = 0; i < TLBB_P_COUNT; i++) {
		const struct tlbb_param_desc *d = &tlbb_param_descs[i];

		TEST_ASSERT(!strcmp(d->name, def_rows[i].name), "%s vs %s",
			    d->name, def_rows[i].name);
		TEST_ASSERT_EQ(d->def, def_rows[i].def);
		TEST_ASSERT_EQ(d->min, def_rows[i].min);
		TEST_ASSERT_EQ(d->max, def_rows[i].max);
		TEST_ASSERT(d->min <= d->def && d->def <= d->max,
			    "%s: default outside its range", d->name);
		TEST_ASSERT(d->unit && d->unit[0] && d->help && d->help[0],
			    "%s: unit or help missing", d->name);
	}
}

TEST(params_defaults_are_the_papers)
{
	struct tlbb_params p;
	unsigned int i;

	memset(&p, 0xa5, sizeof(p));
	tlbb_params_default(&p);
	TEST_ASSERT_EQ(tlbb_params_check(&p), 0);
	for (i = 0; i < TLBB_P_COUNT; i++)
		TEST_ASSERT_EQ(tlbb_param_get(&p, i), tlbb_param_descs[i].def);
	/*
	 * The paper's figures (docs/design/background.md): threshold 20,
	 * 3 samples, ~10 s.
	 */
	TEST_ASSERT_EQ(p.imbalance_threshold, 20);
	TEST_ASSERT_EQ(p.samples, 3);
	TEST_ASSERT_EQ(p.sustain_ms, 10000);
	TEST_ASSERT_EQ(p.huge_entries, 64);
	TEST_ASSERT_EQ(p.small_entries, 2048);
	TEST_ASSERT(p.samples <= TLBB_MAX_SAMPLES, "samples > window");
	TEST_ASSERT(tlbb_param_descs[TLBB_P_samples].max == TLBB_MAX_SAMPLES,
		    "samples max must equal TLBB_MAX_SAMPLES");
}

/* Every parameter at min-1, min, max, max+1, through check() and set(). */
TEST(params_every_range_edge)
{
	struct tlbb_params p, orig;
	unsigned int i;

	for (i = 0; i < TLBB_P_COUNT; i++) {
		const struct tlbb_param_desc *d = &tlbb_param_descs[i];
		u64 bad[2], good[2] = { d->min, d->max };
		unsigned int nbad = 0, j;

		if (d->min > 0)
			bad[nbad++] = d->min - 1;
		if (d->max < U64_MAX_)
			bad[nbad++] = d->max + 1;
		TEST_ASSERT(nbad > 0, "%s has no invalid value", d->name);
		for (j = 0; j < 2; j++) {
			tlbb_params_default(&p);
			TEST_ASSERT(!tlbb_param_set(&p, i, good[j]),
				    "%s = %llu refused", d->name,
				    (unsigned long long)good[j]);
			TEST_ASSERT_EQ(tlbb_param_get(&p, i), good[j]);
			TEST_ASSERT_EQ(tlbb_params_check(&p), 0);
		}
		for (j = 0; j < nbad; j++) {
			tlbb_params_default(&p);
			orig = p;
			TEST_ASSERT(tlbb_param_set(&p, i, bad[j]) == -1,
				    "%s = %llu accepted", d->name,
				    (unsigned long long)bad[j]);
			TEST_ASSERT(!memcmp(&p, &orig, sizeof(p)),
				    "%s: refused set changed the params",
				    d->name);
			/* Poke the field directly: check() names it. */
			switch (i) {
#define TLBB_PARAM(name, def, min, max, unit, help) \
			case TLBB_P_##name: p.name = bad[j]; break;
#include "../tlbb_params.def"
#undef TLBB_PARAM
			}
			TEST_ASSERT(tlbb_params_check(&p) == -(1 + (int)i),
				    "%s = %llu: check() gave %d", d->name,
				    (unsigned long long)bad[j],
				    tlbb_params_check(&p));
		}
	}
}

TEST(params_check_reports_first_bad)
{
	struct tlbb_params p;

	test_params(&p);
	p.samples = PARAM_MIN(samples) - 1;
	p.huge_entries = PARAM_MIN(huge_entries) - 1;
	TEST_ASSERT_EQ(-tlbb_params_check(&p) - 1, TLBB_P_huge_entries);
}

TEST(params_bad_id)
{
	struct tlbb_params p, orig;

	test_params(&p);
	orig = p;
	TEST_ASSERT(tlbb_param_set(&p, TLBB_P_COUNT, 1) == -1, "bad id set");
	TEST_ASSERT(tlbb_param_set(&p, (enum tlbb_param_id)-1, 1) == -1,
		    "negative id set");
	TEST_ASSERT_EQ(tlbb_param_get(&p, TLBB_P_COUNT), 0);
	TEST_ASSERT(!memcmp(&p, &orig, sizeof(p)), "bad id changed params");
}

/* A controller never runs with out-of-range numbers, even if handed them. */
TEST(params_init_clamps_unchecked_input)
{
	struct tlbb_params p;
	struct test_vm vm;
	unsigned int i;

	memset(&p, 0, sizeof(p));	/* entries 0, interval 0, samples 0 */
	test_vm_init(&vm, &p, 64, false);
	TEST_ASSERT_EQ(tlbb_params_check(&vm.c.p), 0);
	for (i = 0; i < TLBB_P_COUNT; i++)
		TEST_ASSERT(tlbb_param_get(&vm.c.p, i) ==
			    tlbb_param_descs[i].min, "%s not at its min",
			    tlbb_param_descs[i].name);
	test_vm_ticks(&vm, 10, MCF_HUGE_PER_TICK, MCF_SMALL_PER_TICK);

	memset(&p, 0xff, sizeof(p));
	tlbb_ctrl_set_params(&vm.c, &p);
	for (i = 0; i < TLBB_P_COUNT; i++)
		TEST_ASSERT(tlbb_param_get(&vm.c.p, i) ==
			    tlbb_param_descs[i].max, "%s not at its max",
			    tlbb_param_descs[i].name);
	test_vm_ticks(&vm, 10, MCF_HUGE_PER_TICK, MCF_SMALL_PER_TICK);
}

/*
 * The named values of tlbb_choices.def: every enumerated tunable's values
 * are named 0..max in order, each name parses back to its value for its
 * own tunable only, and a name is matched whole (no prefix, no extension).
 */
TEST(params_choices_name_every_value)
{
	unsigned int i, n;
	u64 v, val;

	TEST_ASSERT(tlbb_choice_count >= 6, "%u choices", tlbb_choice_count);
	for (i = 0; i < TLBB_P_COUNT; i++) {
		const struct tlbb_param_desc *d = &tlbb_param_descs[i];

		n = 0;
		for (v = 0; v <= 3 && v <= d->max; v++)
			n += tlbb_choice_name(i, v) != NULL;
		if (!n)
			continue;
		/* a named tunable has a name for each value and no more */
		TEST_ASSERT(d->min == 0 && d->max + 1 == n, "%s: %u names",
			    d->name, n);
		for (v = 0; v <= d->max; v++) {
			const char *name = tlbb_choice_name(i, v);

			TEST_ASSERT(!tlbb_choice_parse(i, name, strlen(name),
						       &val) && val == v,
				    "%s: %s", d->name, name);
		}
		TEST_ASSERT(!tlbb_choice_name(i, d->max + 1), "%s", d->name);
	}
	TEST_ASSERT_EQ(TLBB_SPLIT_HEAT, 2);
	TEST_ASSERT_EQ(TLBB_METHOD_SAFE, 2);
	TEST_ASSERT(!strcmp(tlbb_choice_name(TLBB_P_method, TLBB_METHOD_HILL),
			    "hill"), "method 1");
	TEST_ASSERT(!tlbb_choice_parse(TLBB_P_split_order, "heat\n", 4, &val) &&
		    val == TLBB_SPLIT_HEAT, "length bounds the name");
	val = 7;
	TEST_ASSERT(tlbb_choice_parse(TLBB_P_split_order, "hea", 3, &val) &&
		    tlbb_choice_parse(TLBB_P_split_order, "heats", 5, &val) &&
		    tlbb_choice_parse(TLBB_P_split_order, "hill", 4, &val) &&
		    tlbb_choice_parse(TLBB_P_samples, "heat", 4, &val) &&
		    tlbb_choice_parse(TLBB_P_method, "", 0, &val) && val == 7,
		    "prefix, extension, other tunable's name or empty taken");
	TEST_ASSERT(!tlbb_choice_name(TLBB_P_samples, 0), "samples named");
}
