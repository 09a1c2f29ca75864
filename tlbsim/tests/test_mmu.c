// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Translation against hand-computed cases: native base/huge, the MIPS-VZ
 * model needing two resident entries, the combined model, HVA/GPA
 * misalignment forcing base-size stage-2 entries, the THP limiter; and
 * batch mode against translation access by access.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tlbsim.h"

#define MB (1ULL << 20)

/* GS464V-shaped, but a VTLB of @vtlb entries, LRU, to count by hand. */
static void machine(struct tlbs_machine *m, int vtlb)
{
	char text[512], err[256];

	snprintf(text, sizeof(text),
		 "name t\nbase_page 16K\nhuge_page 32M\n"
		 "group VTLB entries=%d ways=%d replace=lru sizes=huge\n"
		 "group FTLB entries=2048 ways=8 replace=lru sizes=base\n"
		 "access_ns 100\nrefill_ns 150\n", vtlb, vtlb);
	if (tlbs_machine_parse(m, text, "test", err, sizeof(err)))
		fprintf(stderr, "%s\n", err);
}

static void run1(struct tlbs_mmu *u, u64 off)
{
	tlbs_mmu_run(u, &off, 1);
}

/* Done with @u: free it, and empty @m's groups and counters for the next. */
static void restart(struct tlbs_mmu *u, struct tlbs_machine *m)
{
	u32 i;

	tlbs_mmu_free(u);
	tlbs_machine_reset_stats(m);
	for (i = 0; i < m->ngroups; i++)
		tlbs_group_flush(&m->g[i]);
}

static void test_native(void)
{
	struct tlbs_machine m;
	struct tlbs_mmu u;

	machine(&m, 64);
	/* 64 MiB = two 32 MiB regions, native THP: one huge entry each */
	CHECK_EQ(tlbs_mmu_init(&u, &m, TLBS_NATIVE, 64 * MB, 1, 0, 0), 0);
	run1(&u, 0);
	run1(&u, 16 << 10);		/* same huge page */
	run1(&u, 32 * MB + 5);		/* second region */
	run1(&u, 31 * MB);
	CHECK_EQ(u.walks[TLBS_HUGE], 2);
	CHECK_EQ(u.walks[TLBS_BASE], 0);
	CHECK_EQ(m.g[0].fills, 2);
	CHECK_EQ(m.g[1].fills, 0);
	tlbs_mmu_free(&u);
	tlbs_machine_reset_stats(&m);
	tlbs_group_flush(&m.g[0]);
	/* base pages: 0 and 16K are two 16 KiB pages, 8K shares page 0 */
	CHECK_EQ(tlbs_mmu_init(&u, &m, TLBS_NATIVE, 64 * MB, 0, 0, 0), 0);
	run1(&u, 0);
	run1(&u, 8 << 10);
	run1(&u, 16 << 10);
	CHECK_EQ(u.walks[TLBS_BASE], 2);
	CHECK_EQ(u.walks[TLBS_HUGE], 0);
	CHECK_EQ(u.accesses, 3);
	/* time: 3 accesses x 100 + 2 refills x 150 */
	CHECK(tlbs_mmu_time_ns(&u) == 600.0, "time %.1f",
	      tlbs_mmu_time_ns(&u));
	/* a partial last region is never huge: 40 MiB, offset 35 MiB */
	tlbs_mmu_free(&u);
	CHECK_EQ(tlbs_mmu_init(&u, &m, TLBS_NATIVE, 40 * MB, 1, 0, 0), 0);
	run1(&u, 35 * MB);
	CHECK_EQ(u.walks[TLBS_BASE], 1);
	tlbs_mmu_free(&u);
	tlbs_machine_free(&m);
}

static void test_vz_two_entries(void)
{
	struct tlbs_machine m;
	struct tlbs_mmu u;
	int i;

	machine(&m, 64);
	CHECK_EQ(tlbs_mmu_init(&u, &m, TLBS_VZ, 64 * MB, 1, 1, 0), 0);
	run1(&u, 100);
	/* one guest access, two huge entries: GVA->GPA and GPA->HPA */
	CHECK_EQ(u.walks[TLBS_HUGE], 2);
	CHECK_EQ(tlbs_group_count(&m.g[0]), 2);
	CHECK_EQ(u.huge_in_use, 1);
	run1(&u, 200);
	CHECK_EQ(u.walks[TLBS_HUGE], 2);
	tlbs_mmu_free(&u);
	tlbs_machine_free(&m);

	/*
	 * A 2-entry LRU VTLB: natively two regions fit, in a VM they need
	 * four entries, so alternating between them misses both every time.
	 */
	machine(&m, 2);
	CHECK_EQ(tlbs_mmu_init(&u, &m, TLBS_NATIVE, 64 * MB, 1, 0, 0), 0);
	for (i = 0; i < 10; i++)
		run1(&u, (i & 1) * 32 * MB);
	CHECK_EQ(u.walks[TLBS_HUGE], 2);
	tlbs_mmu_free(&u);
	tlbs_group_flush(&m.g[0]);
	CHECK_EQ(tlbs_mmu_init(&u, &m, TLBS_VZ, 64 * MB, 1, 1, 0), 0);
	for (i = 0; i < 10; i++)
		run1(&u, (i & 1) * 32 * MB);
	CHECK_EQ(u.walks[TLBS_HUGE], 20);
	tlbs_mmu_free(&u);
	tlbs_machine_free(&m);

	/* guest huge, host base: a huge stage-1 and a base stage-2 entry */
	machine(&m, 64);
	CHECK_EQ(tlbs_mmu_init(&u, &m, TLBS_VZ, 64 * MB, 1, 0, 0), 0);
	run1(&u, 0);
	run1(&u, 16 << 10);
	CHECK_EQ(u.walks[TLBS_HUGE], 1);
	CHECK_EQ(u.walks[TLBS_BASE], 2);
	CHECK_EQ(u.huge_in_use, 0);
	tlbs_mmu_free(&u);
	tlbs_machine_free(&m);
}

/*
 * Accesses to the base page of the access before skip the lookups but
 * count as hits, in the group of each translation: VZ with a huge stage 1
 * (VTLB) and a base stage 2 (FTLB), both counted; natively one.
 */
/*
 * The cost model: a base-page refill of the guest stage, of the host stage
 * and a huge-page refill each at its own cost under VZ; natively and with
 * combined entries every refill at refill_ns.
 */
static void test_cost_model(void)
{
	static const char text[] =
		"name t\nbase_page 16K\nhuge_page 32M\n"
		"group VTLB entries=64 ways=64 replace=lru sizes=huge\n"
		"group FTLB entries=2048 ways=8 replace=lru sizes=base\n"
		"access_ns 100\nrefill_ns 150\nguest_refill_ns 10\n"
		"host_refill_ns 20\nhuge_refill_ns 40\n";
	struct tlbs_machine m;
	struct tlbs_mmu u;
	char err[256];

	CHECK_EQ(tlbs_machine_parse(&m, text, "test", err, sizeof(err)), 0);
	/* no THP: one guest and one host base-page refill */
	CHECK_EQ(tlbs_mmu_init(&u, &m, TLBS_VZ, 64 * MB, 0, 0, 0), 0);
	run1(&u, 0);
	CHECK_EQ(u.walks[TLBS_BASE], 2);
	CHECK_EQ(u.walks[TLBS_WALK_S2_BASE], 1);
	CHECK(tlbs_mmu_time_ns(&u) == 130.0, "vz base %.1f",
	      tlbs_mmu_time_ns(&u));
	restart(&u, &m);
	/* guest huge, host base: a huge and a host base-page refill */
	CHECK_EQ(tlbs_mmu_init(&u, &m, TLBS_VZ, 64 * MB, 1, 0, 0), 0);
	run1(&u, 0);
	CHECK_EQ(u.walks[TLBS_WALK_S2_BASE], 1);
	CHECK(tlbs_mmu_time_ns(&u) == 160.0, "vz guest huge %.1f",
	      tlbs_mmu_time_ns(&u));
	restart(&u, &m);
	/* guest base, host huge: a guest base-page and a huge refill */
	CHECK_EQ(tlbs_mmu_init(&u, &m, TLBS_VZ, 64 * MB, 0, 1, 0), 0);
	run1(&u, 0);
	CHECK_EQ(u.walks[TLBS_WALK_S2_BASE], 0);
	CHECK(tlbs_mmu_time_ns(&u) == 150.0, "vz host huge %.1f",
	      tlbs_mmu_time_ns(&u));
	CHECK(tlbs_mmu_refill_time_ns(&u) == 50.0, "refill part %.1f",
	      tlbs_mmu_refill_time_ns(&u));
	restart(&u, &m);
	/* natively and combined: refill_ns */
	CHECK_EQ(tlbs_mmu_init(&u, &m, TLBS_NATIVE, 64 * MB, 0, 0, 0), 0);
	run1(&u, 0);
	CHECK(tlbs_mmu_time_ns(&u) == 250.0, "native %.1f",
	      tlbs_mmu_time_ns(&u));
	restart(&u, &m);
	CHECK_EQ(tlbs_mmu_init(&u, &m, TLBS_COMBINED, 64 * MB, 0, 0, 0), 0);
	run1(&u, 0);
	CHECK(tlbs_mmu_time_ns(&u) == 250.0, "combined %.1f",
	      tlbs_mmu_time_ns(&u));
	tlbs_mmu_free(&u);
	tlbs_machine_free(&m);
	/* unset, the three default to refill_ns */
	machine(&m, 64);
	CHECK(m.guest_refill_ns == 150.0 && m.host_refill_ns == 150.0 &&
	      m.huge_refill_ns == 150.0, "defaults %.1f %.1f %.1f",
	      m.guest_refill_ns, m.host_refill_ns, m.huge_refill_ns);
	tlbs_machine_free(&m);
}

static void test_same_page_hits(void)
{
	/* hits and misses of the VTLB (g[0]) and the FTLB (g[1]) */
	static const struct { const char *what; enum tlbs_model model;
			      int thp1, thp2; u64 g0[2], g1[2]; } cases[] = {
		{ "VZ, huge stage 1, base stage 2", TLBS_VZ, 1, 0,
		  { 3, 1 }, { 3, 1 } },
		{ "VZ, both levels huge: both in the VTLB", TLBS_VZ, 1, 1,
		  { 6, 2 }, { 0, 0 } },
		{ "native base pages: one FTLB entry", TLBS_NATIVE, 0, 0,
		  { 0, 0 }, { 3, 1 } },
	};
	struct tlbs_machine m;
	struct tlbs_mmu u;
	u64 off[4] = { 0, 8, 16, 24 };
	size_t c;
	int g;

	machine(&m, 64);
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		CHECK_EQ(tlbs_mmu_init(&u, &m, cases[c].model, 64 * MB,
				       cases[c].thp1, cases[c].thp2, 0), 0);
		tlbs_mmu_run(&u, off, 4);
		for (g = 0; g < 2; g++) {
			const u64 *want = g ? cases[c].g1 : cases[c].g0;

			CHECK(m.g[g].hits == want[0], "%s: %s hits %llu, "
			      "expected %llu", cases[c].what, m.g[g].name,
			      (unsigned long long)m.g[g].hits,
			      (unsigned long long)want[0]);
			CHECK(m.g[g].misses == want[1], "%s: %s misses %llu, "
			      "expected %llu", cases[c].what, m.g[g].name,
			      (unsigned long long)m.g[g].misses,
			      (unsigned long long)want[1]);
		}
		if (!c) {
			/* the run ends inside a call: the next call starts
			 * a new page */
			tlbs_mmu_run(&u, off, 2);
			CHECK_EQ(m.g[0].hits, 5);
			CHECK_EQ(m.g[1].hits, 5);
		}
		restart(&u, &m);
	}
	tlbs_machine_free(&m);
}

static void test_misalignment(void)
{
	struct tlbs_machine m;
	struct tlbs_mmu u;

	machine(&m, 64);
	/*
	 * HVA = GPA + 16 KiB: host THPs still form (the regions wholly in
	 * the memslot: [32M, 64M) of HVA), but no stage-2 mapping can be
	 * huge: every stage-2 entry is a base page.
	 */
	CHECK_EQ(tlbs_mmu_init(&u, &m, TLBS_VZ, 64 * MB, 1, 1, 16 << 10), 0);
	CHECK_EQ(tlbs_mmu_total_pages(&u), 1);
	run1(&u, 0);
	run1(&u, 40 * MB);
	CHECK_EQ(u.walks[TLBS_HUGE], 2);	/* the two stage-1 entries */
	CHECK_EQ(u.walks[TLBS_BASE], 2);	/* stage 2: base pages */
	CHECK_EQ(tlbs_mmu_stage2_class(&u, 40 * MB), TLBS_BASE);
	CHECK_EQ(u.huge_in_use, 1);		/* a THP, uselessly */
	restart(&u, &m);
	/* HVA = GPA + 32 MiB: congruent, huge stage 2 */
	CHECK_EQ(tlbs_mmu_init(&u, &m, TLBS_VZ, 64 * MB, 1, 1, 32 * MB), 0);
	CHECK_EQ(tlbs_mmu_total_pages(&u), 2);
	run1(&u, 0);
	run1(&u, 40 * MB);
	CHECK_EQ(u.walks[TLBS_HUGE], 4);
	CHECK_EQ(u.walks[TLBS_BASE], 0);
	CHECK_EQ(tlbs_mmu_stage2_class(&u, 40 * MB), TLBS_HUGE);
	tlbs_mmu_free(&u);
	tlbs_machine_free(&m);
}

static void test_combined(void)
{
	struct tlbs_machine m;
	struct tlbs_mmu u;
	int g, h;

	machine(&m, 64);
	for (g = 0; g <= 1; g++) {
		for (h = 0; h <= 1; h++) {
			tlbs_machine_reset_stats(&m);
			tlbs_group_flush(&m.g[0]);
			tlbs_group_flush(&m.g[1]);
			CHECK_EQ(tlbs_mmu_init(&u, &m, TLBS_COMBINED, 64 * MB,
					       g, h, 0), 0);
			run1(&u, 0);
			run1(&u, 16 << 10);
			/* one entry per translation, the smaller size */
			if (g && h) {
				CHECK_EQ(u.walks[TLBS_HUGE], 1);
				CHECK_EQ(u.walks[TLBS_BASE], 0);
			} else {
				CHECK_EQ(u.walks[TLBS_HUGE], 0);
				CHECK_EQ(u.walks[TLBS_BASE], 2);
			}
			tlbs_mmu_free(&u);
		}
	}
	tlbs_machine_free(&m);
}

static void test_limiter(void)
{
	struct tlbs_machine m;
	struct tlbs_mmu u;
	u64 r;

	machine(&m, 64);
	CHECK_EQ(tlbs_mmu_init(&u, &m, TLBS_VZ, 128 * MB, 1, 1, 0), 0);
	for (r = 0; r < 4; r++)
		run1(&u, r * 32 * MB);
	CHECK_EQ(u.huge_in_use, 4);
	CHECK_EQ(tlbs_group_count(&m.g[0]), 8);
	/* limit 2, split from the highest address down (as tlbb_thp.c) */
	tlbs_mmu_apply_limit(&u, 2);
	CHECK_EQ(u.huge_in_use, 2);
	CHECK_EQ(u.splits, 2);
	CHECK_EQ(tlbs_mmu_stage2_class(&u, 3 * 32 * MB), TLBS_BASE);
	CHECK_EQ(tlbs_mmu_stage2_class(&u, 2 * 32 * MB), TLBS_BASE);
	CHECK_EQ(tlbs_mmu_stage2_class(&u, 1 * 32 * MB), TLBS_HUGE);
	/* the split regions' huge stage-2 entries were shot down */
	CHECK_EQ(tlbs_group_count(&m.g[0]), 6);
	CHECK_EQ(tlbs_group_lookup(&m.g[0], tlbs_key(TLBS_SP_STAGE2,
			TLBS_HUGE, 3)), 0);
	CHECK_EQ(tlbs_group_lookup(&m.g[0], tlbs_key(TLBS_SP_STAGE2,
			TLBS_HUGE, 1)), 1);
	/* region 3 now refills a base-page stage-2 entry */
	run1(&u, 3 * 32 * MB);
	CHECK_EQ(u.walks[TLBS_BASE], 1);
	/* raise to 3: region 2 (the last split) collapses first */
	tlbs_mmu_apply_limit(&u, 3);
	CHECK_EQ(u.huge_in_use, 3);
	CHECK_EQ(u.restores, 1);
	CHECK_EQ(tlbs_mmu_stage2_class(&u, 2 * 32 * MB), TLBS_HUGE);
	CHECK_EQ(tlbs_mmu_stage2_class(&u, 3 * 32 * MB), TLBS_BASE);
	tlbs_mmu_apply_limit(&u, 4);
	CHECK_EQ(tlbs_mmu_stage2_class(&u, 3 * 32 * MB), TLBS_HUGE);
	/* the collapse shot down region 3's base-page stage-2 entry */
	CHECK_EQ(tlbs_group_count(&m.g[1]), 0);
	tlbs_mmu_free(&u);

	/* a limit in force before first touch: faults beyond it are small */
	CHECK_EQ(tlbs_mmu_init(&u, &m, TLBS_VZ, 128 * MB, 1, 1, 0), 0);
	tlbs_mmu_apply_limit(&u, 1);
	run1(&u, 0);
	run1(&u, 32 * MB);
	CHECK_EQ(u.huge_in_use, 1);
	CHECK_EQ(tlbs_mmu_stage2_class(&u, 0), TLBS_HUGE);
	CHECK_EQ(tlbs_mmu_stage2_class(&u, 32 * MB), TLBS_BASE);
	tlbs_mmu_free(&u);

	/* split order low and random also reach the limit */
	CHECK_EQ(tlbs_mmu_init(&u, &m, TLBS_VZ, 128 * MB, 1, 1, 0), 0);
	u.split_order = TLBS_SPLIT_LOW;
	for (r = 0; r < 4; r++)
		run1(&u, r * 32 * MB);
	tlbs_mmu_apply_limit(&u, 3);
	CHECK_EQ(tlbs_mmu_stage2_class(&u, 0), TLBS_BASE);
	u.split_order = TLBS_SPLIT_RANDOM;
	tlbs_mmu_apply_limit(&u, 0);
	CHECK_EQ(u.huge_in_use, 0);
	tlbs_mmu_free(&u);
	tlbs_machine_free(&m);
}

/* Same counters and TLB contents in two machines' groups. */
static int same_groups(const struct tlbs_machine *a,
		       const struct tlbs_machine *b)
{
	u32 i;

	for (i = 0; i < a->ngroups; i++) {
		const struct tlbs_group *x = &a->g[i], *y = &b->g[i];

		if (x->hits != y->hits || x->misses != y->misses ||
		    x->fills != y->fills || x->rng != y->rng ||
		    memcmp(x->key, y->key, x->entries * sizeof(*x->key)))
			return 0;
	}
	return 1;
}

/*
 * Batch mode (key lists per group, see tlbs_mmu_run) gives the results of
 * translating access by access: every model, THP setting, an HVA offset,
 * on a preset whose paths are one group each (gs464v: batch mode) and
 * with limits changing between calls of random length, the same refills,
 * faults, splits and TLB contents.
 */
static void test_batch_matches_single(const char *preset)
{
	static const struct { enum tlbs_model model; int thp1, thp2;
			      u64 hva; } cases[] = {
		{ TLBS_NATIVE, 1, 0, 0 }, { TLBS_NATIVE, 0, 0, 0 },
		{ TLBS_VZ, 1, 1, 0 }, { TLBS_VZ, 1, 0, 0 },
		{ TLBS_VZ, 0, 1, 0 }, { TLBS_VZ, 1, 1, 16384 },
		{ TLBS_COMBINED, 1, 1, 0 }, { TLBS_COMBINED, 0, 1, 0 },
	};
	struct tlbs_machine ma, mb;
	struct tlbs_workload w;
	struct tlbs_mmu a, b;
	char err[256];
	u64 off[5000], rng = 99, total = 0;
	u32 i, call, n, bad = 0;
	size_t c;

	CHECK_EQ(tlbs_machine_load(&ma, preset, err, sizeof(err)), 0);
	CHECK_EQ(tlbs_machine_load(&mb, preset, err, sizeof(err)), 0);
	for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		CHECK_EQ(tlbs_workload_parse(&w, "chase:size=1600M,"
			 "hot_pages=3000,hot_frac=0.6", ma.huge_shift, err,
			 sizeof(err)), 0);
		tlbs_machine_reset_stats(&ma);
		tlbs_machine_reset_stats(&mb);
		for (i = 0; i < ma.ngroups; i++) {
			tlbs_group_flush(&ma.g[i]);
			tlbs_group_flush(&mb.g[i]);
		}
		CHECK_EQ(tlbs_mmu_init(&a, &ma, cases[c].model, w.size,
				       cases[c].thp1, cases[c].thp2,
				       cases[c].hva), 0);
		CHECK_EQ(tlbs_mmu_init(&b, &mb, cases[c].model, w.size,
				       cases[c].thp1, cases[c].thp2,
				       cases[c].hva), 0);
		CHECK(a.batch, "%s: batch mode", preset);
		b.batch = 0;
		bad = 0;
		for (call = 0; call < 200; call++) {
			n = (u32)tlbs_rand_below(&rng, 5000) + 1;
			tlbs_workload_fill(&w, off, n);
			/* runs of accesses to one page (skipped lookups) */
			for (i = 1; i < n; i++)
				if (tlbs_rand_below(&rng, 4) == 0)
					off[i] = off[i - 1] ^ 8;
			tlbs_mmu_run(&a, off, n);
			tlbs_mmu_run(&b, off, n);
			if (call % 20 == 19) {
				u64 lim = tlbs_rand_below(&rng, 51);

				tlbs_mmu_apply_limit(&a, lim);
				tlbs_mmu_apply_limit(&b, lim);
			}
			if (a.walks[0] != b.walks[0] ||
			    a.walks[1] != b.walks[1] ||
			    a.walks[TLBS_WALK_S2_BASE] !=
			    b.walks[TLBS_WALK_S2_BASE] ||
			    a.huge_in_use != b.huge_in_use ||
			    a.splits != b.splits ||
			    !same_groups(&ma, &mb))
				bad++;
		}
		CHECK(bad == 0, "%s case %zu: %u calls differ", preset, c,
		      bad);
		CHECK(a.walks[0] + a.walks[1] > 0, "%s case %zu: refills",
		      preset, c);
		total += a.walks[0] + a.walks[1];
		tlbs_mmu_free(&a);
		tlbs_mmu_free(&b);
		tlbs_workload_free(&w);
	}
	CHECK(total > 100000, "%s: %llu refills in all", preset,
	      (unsigned long long)total);
	tlbs_machine_free(&ma);
	tlbs_machine_free(&mb);
}

int main(void)
{
	test_native();
	test_vz_two_entries();
	test_cost_model();
	test_same_page_hits();
	test_misalignment();
	test_combined();
	test_limiter();
	test_batch_matches_single("gs464v");
	test_batch_matches_single("la464");
	test_batch_matches_single("generic");
	return check_done("test_mmu");
}
