// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * The PMU backend's CPU matching (tlbb_pmu_table.c) with CPU identities fed
 * in: which table a vendor/family/model (x86) or MIDR (arm64) gets, the
 * encodings a few of them yield, and the reason given when none fits.
 */
#include <string.h>

#include "../tlbb_pmu_table.h"
#include "test_harness.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const struct tlbb_pmu_model *x86(enum tlbb_cpu_vendor v, u32 family,
					u32 model, char *why, size_t len)
{
	struct tlbb_cpu_id id = {
		.arch = TLBB_CPU_X86, .vendor = v,
		.family = family, .model = model,
	};

	why[0] = 0;
	return tlbb_pmu_model_for(&id, why, len);
}

static const char *x86_name(enum tlbb_cpu_vendor v, u32 family, u32 model)
{
	char why[160];
	const struct tlbb_pmu_model *m = x86(v, family, model, why,
					     sizeof(why));

	return m ? m->name : NULL;
}

/* The event of @m with raw config @config, or NULL. */
static const struct tlbb_pmu_event *find(const struct tlbb_pmu_model *m,
					 u64 config)
{
	unsigned int i;

	for (i = 0; i < m->nr; i++)
		if (m->ev[i].config == config)
			return &m->ev[i];
	return NULL;
}

#define ASSERT_MODEL(v, fam, mod, want) do {				\
	const char *got = x86_name(v, fam, mod);			\
	TEST_ASSERT(got && !strcmp(got, want),				\
		    "family 0x%x model 0x%x: got %s, want %s",		\
		    fam, mod, got ? got : "(none)", want);		\
} while (0)

TEST(pmu_intel_models)
{
	ASSERT_MODEL(TLBB_VENDOR_INTEL, 6, 0x55, "intel-hsw-skl");	/* SKX/CLX */
	ASSERT_MODEL(TLBB_VENDOR_INTEL, 6, 0x3f, "intel-hsw-skl");	/* HSX */
	ASSERT_MODEL(TLBB_VENDOR_INTEL, 6, 0xa6, "intel-hsw-skl");	/* range hi */
	ASSERT_MODEL(TLBB_VENDOR_INTEL, 6, 0xa5, "intel-hsw-skl");	/* range lo */
	ASSERT_MODEL(TLBB_VENDOR_INTEL, 6, 0x7a, "intel-goldmont-plus");
	ASSERT_MODEL(TLBB_VENDOR_INTEL, 6, 0x6a, "intel-icx");
	ASSERT_MODEL(TLBB_VENDOR_INTEL, 6, 0x7e, "intel-icl");
	ASSERT_MODEL(TLBB_VENDOR_INTEL, 6, 0xaf, "intel-icl");	/* SRF */
	ASSERT_MODEL(TLBB_VENDOR_INTEL, 6, 0x8f, "intel-spr");
	ASSERT_MODEL(TLBB_VENDOR_INTEL, 6, 0xcf, "intel-spr");	/* EMR */
	ASSERT_MODEL(TLBB_VENDOR_INTEL, 6, 0xad, "intel-spr");	/* GNR */
	ASSERT_MODEL(TLBB_VENDOR_INTEL, 6, 0xae, "intel-spr");
}

TEST(pmu_intel_unknown)
{
	static const u32 none[] = {
		0x66,	/* Cannon Lake: not in the database */
		0x97,	/* Alder Lake: hybrid, left out */
		0xaa,	/* Meteor Lake: hybrid */
		0x2a,	/* Sandy Bridge: no size-split walks */
		0xa4, 0xa8, 0xb0,	/* next to ranges */
	};
	char why[160];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(none); i++) {
		TEST_ASSERT(!x86(TLBB_VENDOR_INTEL, 6, none[i], why,
				 sizeof(why)),
			    "model 0x%x matched", none[i]);
		TEST_ASSERT(strstr(why, "unavailable: ") == why &&
			    strstr(why, "vendor intel family 0x6"),
			    "reason: %s", why);
	}
	/* A family-6 model number in another family is not that CPU. */
	TEST_ASSERT(!x86(TLBB_VENDOR_INTEL, 0xf, 0x55, why, sizeof(why)),
		    "family 0xf model 0x55 matched");
	TEST_ASSERT(!x86(TLBB_VENDOR_UNKNOWN, 6, 0x55, why, sizeof(why)),
		    "an unknown vendor matched");
	TEST_ASSERT(strstr(why, "vendor other family 0x6 model 0x55"),
		    "reason: %s", why);
}

TEST(pmu_amd_models)
{
	static const u32 fams[] = { 0x17, 0x19, 0x1a };
	char why[160];
	unsigned int i;

	for (i = 0; i < 3; i++) {
		ASSERT_MODEL(TLBB_VENDOR_AMD, fams[i], 0x00, "amd-zen");
		ASSERT_MODEL(TLBB_VENDOR_AMD, fams[i], 0x71, "amd-zen");
		ASSERT_MODEL(TLBB_VENDOR_AMD, fams[i], 0xff, "amd-zen");
	}
	/* Family 18h is Hygon's Dhyana: not in the database. */
	TEST_ASSERT(!x86(TLBB_VENDOR_AMD, 0x18, 0x01, why, sizeof(why)),
		    "family 0x18 matched");
	TEST_ASSERT(!x86(TLBB_VENDOR_AMD, 0x15, 0x01, why, sizeof(why)),
		    "family 0x15 (Bulldozer) matched");
	TEST_ASSERT(strstr(why, "vendor amd family 0x15 model 0x1"),
		    "reason: %s", why);
	/* An Intel CPU with an AMD family number is not a Zen. */
	TEST_ASSERT(!x86(TLBB_VENDOR_INTEL, 0x19, 0x01, why, sizeof(why)),
		    "intel family 0x19 matched");
}

TEST(pmu_encodings)
{
	char why[160];
	const struct tlbb_pmu_model *m;
	const struct tlbb_pmu_event *e;

	/* Skylake server: load walks 0x08, 4K umask 0x02, 2M/4M+1G 0x0c. */
	m = x86(TLBB_VENDOR_INTEL, 6, 0x55, why, sizeof(why));
	TEST_ASSERT(m && m->nr == 6, "%s", why);
	e = find(m, 0x0208);
	TEST_ASSERT(e && !e->huge, "SKX 0x0208 missing or huge");
	e = find(m, 0x0c85);
	TEST_ASSERT(e && e->huge, "SKX ITLB 0x0c85 missing or small");
	/* Sapphire Rapids: loads 0x12, stores 0x13, ITLB 0x11 without 1G. */
	m = x86(TLBB_VENDOR_INTEL, 6, 0x8f, why, sizeof(why));
	TEST_ASSERT(m && find(m, 0x0c12) && find(m, 0x0c13) &&
		    find(m, 0x0411) && !find(m, 0x0c11),
		    "SPR encodings");
	/* Ice Lake client: no 1G walk events at all. */
	m = x86(TLBB_VENDOR_INTEL, 6, 0x7e, why, sizeof(why));
	TEST_ASSERT(m && find(m, 0x0408) && !find(m, 0x0c08), "ICL");
	/* Zen: 0x45 umask 0x11 small, 0xcc huge. */
	m = x86(TLBB_VENDOR_AMD, 0x19, 0x11, why, sizeof(why));
	TEST_ASSERT(m && m->nr == 2, "zen");
	TEST_ASSERT(find(m, 0x1145) && !find(m, 0x1145)->huge &&
		    find(m, 0xcc45) && find(m, 0xcc45)->huge, "zen encodings");
}

TEST(pmu_every_model_has_both_sizes)
{
	static const struct { enum tlbb_cpu_vendor v; u32 f, m; } cpus[] = {
		{ TLBB_VENDOR_INTEL, 6, 0x55 }, { TLBB_VENDOR_INTEL, 6, 0x7a },
		{ TLBB_VENDOR_INTEL, 6, 0x6a }, { TLBB_VENDOR_INTEL, 6, 0x7e },
		{ TLBB_VENDOR_INTEL, 6, 0x8f }, { TLBB_VENDOR_AMD, 0x19, 0 },
	};
	char why[160];
	unsigned int i, j, huge, small;

	for (i = 0; i < ARRAY_SIZE(cpus); i++) {
		const struct tlbb_pmu_model *m =
			x86(cpus[i].v, cpus[i].f, cpus[i].m, why, sizeof(why));

		TEST_ASSERT(m, "%s", why);
		huge = small = 0;
		for (j = 0; j < m->nr; j++) {
			huge += m->ev[j].huge;
			small += !m->ev[j].huge;
			TEST_ASSERT(m->ev[j].name && m->ev[j].name[0],
				    "%s event %u has no name", m->name, j);
		}
		TEST_ASSERT(huge && huge == small,
			    "%s: %u huge, %u small events", m->name, huge,
			    small);
	}
}

TEST(pmu_arm64)
{
	/* Kunpeng 920 (HiSilicon 0x48, part 0xd01), Neoverse N1, V2. */
	static const u32 midrs[] = { 0x481fd010, 0x413fd0c1, 0x410fd4f0 };
	struct tlbb_cpu_id id = { .arch = TLBB_CPU_ARM64 };
	const struct tlbb_pmu_model *m;
	char why[160];
	unsigned int i;

	for (i = 0; i < 3; i++) {
		id.midr = midrs[i];
		m = tlbb_pmu_model_for(&id, why, sizeof(why));
		TEST_ASSERT(m && !strcmp(m->name, "arm-walk-block-page"),
			    "MIDR 0x%08x", midrs[i]);
		TEST_ASSERT(find(m, 0x8188) && find(m, 0x8188)->huge &&
			    find(m, 0x818a) && !find(m, 0x818a)->huge,
			    "arm encodings");
	}
}

TEST(pmu_other_arch)
{
	struct tlbb_cpu_id id = { .arch = TLBB_CPU_OTHER };
	char why[160];

	TEST_ASSERT(!tlbb_pmu_model_for(&id, why, sizeof(why)), "matched");
	TEST_ASSERT(!strcmp(why, "unavailable: no size-split TLB walk events known for this architecture"),
		    "reason: %s", why);
}
