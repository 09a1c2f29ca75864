// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * TLB groups against hand-computed cases: hits, misses, LRU/FIFO/random
 * replacement, set conflicts, invalidation; the fully associative hash
 * index against a brute-force search over a long random sequence; and the
 * one-call access path (direct index, branch-free random replacement)
 * against lookup + fill on a twin group, and a key list at once
 * (tlbs_group_run) against the one-call path.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tlbsim.h"

#define K(v) tlbs_key(TLBS_SP_NATIVE, TLBS_BASE, (v))

/* Look @key up; on a miss fill it. Returns 1 on a hit. */
static int touch(struct tlbs_group *g, u64 key)
{
	if (tlbs_group_lookup(g, key))
		return 1;
	tlbs_group_fill(g, key);
	return 0;
}

static int resident(struct tlbs_group *g, u64 key)
{
	u32 i;

	for (i = 0; i < g->entries; i++)
		if (g->key[i] == key)
			return 1;
	return 0;
}

static void test_fa_lru(void)
{
	struct tlbs_group g;

	CHECK_EQ(tlbs_group_init(&g, "fa", 4, 4, TLBS_LRU, 1), 0);
	/* A B C D: four compulsory misses */
	CHECK_EQ(touch(&g, K(1)) + touch(&g, K(2)) + touch(&g, K(3)) +
		 touch(&g, K(4)), 0);
	CHECK_EQ(tlbs_group_count(&g), 4);
	/* A hits and becomes most recent: LRU order is now B C D A */
	CHECK_EQ(touch(&g, K(1)), 1);
	/* E evicts B */
	CHECK_EQ(touch(&g, K(5)), 0);
	CHECK(!resident(&g, K(2)), "B should be evicted");
	CHECK(resident(&g, K(1)), "A should stay (recently used)");
	/* B misses again and evicts C, the least recent now */
	CHECK_EQ(touch(&g, K(2)), 0);
	CHECK(!resident(&g, K(3)), "C should be evicted");
	CHECK_EQ(touch(&g, K(4)) + touch(&g, K(1)) + touch(&g, K(5)), 3);
	CHECK_EQ(g.hits, 4);
	CHECK_EQ(g.misses, 6);
	/* cyclic over 5 keys in 4 LRU entries: every access misses */
	g.hits = 0;
	for (int i = 0; i < 50; i++)
		touch(&g, K(10 + i % 5));
	CHECK_EQ(g.hits, 0);
	tlbs_group_free(&g);
}

static void test_fa_fifo(void)
{
	struct tlbs_group g;

	CHECK_EQ(tlbs_group_init(&g, "fifo", 4, 4, TLBS_FIFO, 1), 0);
	touch(&g, K(1));
	touch(&g, K(2));
	touch(&g, K(3));
	touch(&g, K(4));
	CHECK_EQ(touch(&g, K(1)), 1);	/* a hit does not refresh FIFO */
	CHECK_EQ(touch(&g, K(5)), 0);	/* evicts A, the oldest fill */
	CHECK(!resident(&g, K(1)), "FIFO evicts the oldest fill");
	CHECK(resident(&g, K(2)), "B stays");
	CHECK_EQ(touch(&g, K(6)), 0);	/* then B */
	CHECK(!resident(&g, K(2)), "then B");
	tlbs_group_free(&g);
}

static void test_sa_conflict(void)
{
	struct tlbs_group g;

	/* 4 entries, 2 ways: 2 sets, set = vpn & 1 */
	CHECK_EQ(tlbs_group_init(&g, "sa", 4, 2, TLBS_LRU, 1), 0);
	CHECK_EQ(g.sets, 2);
	/* vpn 0, 2, 4 all index set 0: a conflict miss with 1 entry free */
	touch(&g, K(0));
	touch(&g, K(2));
	touch(&g, K(4));		/* evicts 0 (LRU of set 0) */
	CHECK(!resident(&g, K(0)), "vpn 0 evicted by a set conflict");
	CHECK_EQ(tlbs_group_count(&g), 2);
	/* set 1 is untouched: vpn 1 and 3 both fit */
	touch(&g, K(1));
	touch(&g, K(3));
	CHECK_EQ(tlbs_group_count(&g), 4);
	CHECK_EQ(touch(&g, K(2)) + touch(&g, K(4)) + touch(&g, K(1)) +
		 touch(&g, K(3)), 4);
	/* alternating 0, 2, 4 in a 2-way set: LRU misses every time */
	g.hits = 0;
	for (int i = 0; i < 30; i++)
		touch(&g, K((i % 3) * 2));
	CHECK_EQ(g.hits, 0);
	/* a fully associative group of the same size holds all three */
	tlbs_group_free(&g);
	CHECK_EQ(tlbs_group_init(&g, "fa", 4, 4, TLBS_LRU, 1), 0);
	for (int i = 0; i < 30; i++)
		touch(&g, K((i % 3) * 2));
	CHECK_EQ(g.misses, 3);
	tlbs_group_free(&g);
}

static void test_sa_fifo_random(void)
{
	struct tlbs_group g;
	int i;

	CHECK_EQ(tlbs_group_init(&g, "saf", 4, 2, TLBS_FIFO, 1), 0);
	touch(&g, K(0));
	touch(&g, K(2));
	touch(&g, K(0));		/* hit: no refresh under FIFO */
	touch(&g, K(4));		/* evicts 0 */
	CHECK(!resident(&g, K(0)) && resident(&g, K(2)),
	      "FIFO set evicts the oldest fill");
	tlbs_group_free(&g);

	/* random: the victim is always inside the indexed set */
	CHECK_EQ(tlbs_group_init(&g, "sar", 8, 2, TLBS_RANDOM, 1), 0);
	touch(&g, K(1));
	touch(&g, K(5));	/* set 1 full */
	touch(&g, K(0));	/* set 0 */
	for (i = 0; i < 100; i++)
		touch(&g, K(9 + 4 * (i % 5)));	/* all set 1 */
	CHECK(resident(&g, K(0)), "random eviction stayed in its set");
	CHECK_EQ(tlbs_group_count(&g), 3);
	tlbs_group_free(&g);
}

static void test_invalidate_flush(void)
{
	struct tlbs_group g;
	u64 h = tlbs_key(TLBS_SP_STAGE2, TLBS_HUGE, 7);
	u64 s = tlbs_key(TLBS_SP_STAGE2, TLBS_BASE, 7);
	u64 n = tlbs_key(TLBS_SP_STAGE1, TLBS_HUGE, 7);

	CHECK_EQ(tlbs_group_init(&g, "inv", 8, 8, TLBS_LRU, 3), 0);
	touch(&g, h);
	touch(&g, s);
	touch(&g, n);
	/* same page number, different size or space: three entries */
	CHECK_EQ(tlbs_group_count(&g), 3);
	CHECK_EQ(tlbs_group_invalidate(&g, h), 1);
	CHECK_EQ(tlbs_group_invalidate(&g, h), 0);
	CHECK_EQ(tlbs_group_lookup(&g, h), 0);
	CHECK_EQ(tlbs_group_lookup(&g, s), 1);
	CHECK_EQ(tlbs_group_flush(&g), 2);
	CHECK_EQ(tlbs_group_count(&g), 0);
	CHECK_EQ(tlbs_group_lookup(&g, s), 0);
	/* usable after a flush */
	touch(&g, s);
	CHECK_EQ(tlbs_group_lookup(&g, s), 1);
	tlbs_group_free(&g);
}

/* The hash index and LRU list agree with a brute-force search. */
static void test_fa_index_consistency(enum tlbs_repl repl)
{
	struct tlbs_group g;
	u64 rng = 12345, key;
	int i, bad = 0, lookups_ok = 0;

	CHECK_EQ(tlbs_group_init(&g, "big", 64, 64, repl, 1), 0);
	for (i = 0; i < 200000; i++) {
		key = K(tlbs_rand_below(&rng, 150));
		if (i % 97 == 0) {
			int was = resident(&g, key);

			if (tlbs_group_invalidate(&g, key) != was)
				bad++;
			continue;
		}
		if (tlbs_group_lookup(&g, key) != resident(&g, key)) {
			bad++;
			continue;
		}
		lookups_ok++;
		if (!resident(&g, key))
			tlbs_group_fill(&g, key);
		if (tlbs_group_count(&g) > 64)
			bad++;
	}
	CHECK(bad == 0, "%d disagreements (%s)", bad, tlbs_repl_name(repl));
	CHECK(lookups_ok > 190000, "%d lookups checked", lookups_ok);
	/* uniform over 150 keys in 64 entries: hit rate near 64/150 */
	CHECK(g.hits > 0.35 * (g.hits + g.misses) &&
	      g.hits < 0.50 * (g.hits + g.misses),
	      "hit rate %.3f (%s)", (double)g.hits / (g.hits + g.misses),
	      tlbs_repl_name(repl));
	tlbs_group_free(&g);
}

/*
 * tlbs_group_access (branch-free for random replacement, direct index)
 * leaves the same keys, counters and generator state as lookup + fill on
 * a twin group, access after access.
 */
static void test_access_matches_lookup_fill(u32 entries, u32 ways,
					    enum tlbs_repl repl, int direct)
{
	struct tlbs_group a, b;
	u64 rng = 777, key;
	u32 nkeys = entries * 3 / 2 + 3;
	int i, bad = 0, hit_a, hit_b;

	CHECK_EQ(tlbs_group_init(&a, "acc", entries, ways, repl, 1), 0);
	CHECK_EQ(tlbs_group_init(&b, "ref", entries, ways, repl, 1), 0);
	if (direct)
		CHECK_EQ(tlbs_group_index_direct(&a, K(nkeys)), 1);
	for (i = 0; i < 100000; i++) {
		key = K(tlbs_rand_below(&rng, nkeys));
		if (i % 1013 == 0) {
			if (tlbs_group_invalidate(&a, key) !=
			    tlbs_group_invalidate(&b, key))
				bad++;
			continue;
		}
		hit_a = tlbs_group_access(&a, key);
		hit_b = tlbs_group_lookup(&b, key);
		if (!hit_b)
			tlbs_group_fill(&b, key);
		if (hit_a != hit_b || a.rng != b.rng || a.used != b.used ||
		    a.used != tlbs_group_count(&a) ||
		    memcmp(a.key, b.key, entries * sizeof(*a.key)))
			bad++;
	}
	CHECK(bad == 0, "%d differences (%u entries, %u ways, %s%s)", bad,
	      entries, ways, tlbs_repl_name(repl), direct ? ", direct" : "");
	CHECK(a.hits == b.hits && a.misses == b.misses && a.fills == b.fills,
	      "counters differ: hits %llu/%llu misses %llu/%llu",
	      (unsigned long long)a.hits, (unsigned long long)b.hits,
	      (unsigned long long)a.misses, (unsigned long long)b.misses);
	CHECK(a.hits > 1000 && a.misses > 1000, "a mix of hits and misses");
	tlbs_group_free(&a);
	tlbs_group_free(&b);
}

/*
 * tlbs_group_run (a key list at once: victims drawn ahead, stale direct
 * index entries) leaves the same keys, counters, generator state and
 * refill counts by size as tlbs_group_access key after key, on a twin
 * group, over lists of random length with invalidations in between (which
 * leave a full group with free entries again).
 */
static void test_run_matches_access(u32 entries, u32 ways,
				    enum tlbs_repl repl, int direct,
				    u32 classes)
{
	struct tlbs_group a, b;
	u64 rng = 4242, keys[300], wa[TLBS_NCLASS] = { 0 };
	u64 wb[TLBS_NCLASS] = { 0 };
	u32 nkeys = entries * 3 / 2 + 3, n, i, lists = 0, bad = 0;
	int c;

	CHECK_EQ(tlbs_group_init(&a, "run", entries, ways, repl, classes), 0);
	CHECK_EQ(tlbs_group_init(&b, "ref", entries, ways, repl, classes), 0);
	if (direct)
		CHECK_EQ(tlbs_group_index_direct(&a,
			tlbs_key(TLBS_SP_NATIVE, TLBS_HUGE, nkeys)), 1);
	for (lists = 0; lists < 2000; lists++) {
		n = (u32)tlbs_rand_below(&rng, 300) + 1;
		for (i = 0; i < n; i++) {
			c = classes == 3 ? (int)tlbs_rand_below(&rng, 2) :
			    classes == 2 ? TLBS_HUGE : TLBS_BASE;
			keys[i] = tlbs_key(TLBS_SP_NATIVE, c,
					   tlbs_rand_below(&rng, nkeys));
		}
		tlbs_group_run(&a, keys, n, wa);
		for (i = 0; i < n; i++)
			wb[(keys[i] >> 1) & 1] += !tlbs_group_access(&b,
								     keys[i]);
		if (lists % 7 == 0)
			for (i = 0; i < 5; i++)
				if (tlbs_group_invalidate(&a, keys[i]) !=
				    tlbs_group_invalidate(&b, keys[i]))
					bad++;
		if (a.rng != b.rng || a.hits != b.hits ||
		    a.misses != b.misses || a.fills != b.fills ||
		    a.used != b.used || a.used != tlbs_group_count(&a) ||
		    memcmp(a.key, b.key, entries * sizeof(*a.key)) ||
		    wa[0] != wb[0] || wa[1] != wb[1])
			bad++;
	}
	CHECK(bad == 0, "%u differences (%u entries, %u ways, %s%s, "
	      "classes %u)", bad, entries, ways, tlbs_repl_name(repl),
	      direct ? ", direct" : "", classes);
	CHECK(a.hits > 10000 && a.misses > 10000 && a.invalidations > 100,
	      "hits %llu, misses %llu, invalidations %llu",
	      (unsigned long long)a.hits, (unsigned long long)a.misses,
	      (unsigned long long)a.invalidations);
	tlbs_group_free(&a);
	tlbs_group_free(&b);
}

static void test_direct_index(void)
{
	struct tlbs_group g;

	CHECK_EQ(tlbs_group_init(&g, "d", 64, 64, TLBS_RANDOM, 1), 0);
	/* too many keys for a small table: keeps the hash */
	CHECK_EQ(tlbs_group_index_direct(&g, 1ULL << 40), 0);
	CHECK(g.direct == NULL, "no direct table for 2^40 keys");
	CHECK_EQ(tlbs_group_index_direct(&g, K(100)), 1);
	touch(&g, K(5));
	/* a bound the table covers keeps it */
	CHECK_EQ(tlbs_group_index_direct(&g, K(50)), 1);
	/* a group holding entries moves to the hash for a larger bound
	 * (a machine reused for a run over a larger space), keeping them */
	CHECK_EQ(tlbs_group_index_direct(&g, K(200)), 0);
	CHECK(g.direct == NULL, "direct table dropped");
	CHECK_EQ(tlbs_group_lookup(&g, K(5)), 1);
	CHECK_EQ(tlbs_group_lookup(&g, K(500)), 0);
	touch(&g, K(500));
	CHECK_EQ(tlbs_group_count(&g), 2);
	CHECK_EQ(tlbs_group_flush(&g), 2);
	CHECK_EQ(tlbs_group_lookup(&g, K(5)), 0);
	/* empty again: direct once more */
	CHECK_EQ(tlbs_group_index_direct(&g, K(200)), 1);
	touch(&g, K(150));
	CHECK_EQ(tlbs_group_lookup(&g, K(150)), 1);
	tlbs_group_free(&g);
	/* set associative groups need no index */
	CHECK_EQ(tlbs_group_init(&g, "s", 64, 8, TLBS_RANDOM, 1), 0);
	CHECK_EQ(tlbs_group_index_direct(&g, K(100)), 0);
	tlbs_group_free(&g);
}

static void test_bad_geometry(void)
{
	struct tlbs_group g;

	CHECK(tlbs_group_init(&g, "x", 6, 4, TLBS_LRU, 1) != 0,
	      "6 entries in 4 ways");
	tlbs_group_free(&g);
	CHECK(tlbs_group_init(&g, "x", 24, 8, TLBS_LRU, 1) != 0,
	      "3 sets is not a power of two");
	tlbs_group_free(&g);
	CHECK(tlbs_group_init(&g, "x", 128, 64, TLBS_LRU, 1) != 0,
	      "64 ways in 2 sets");
	tlbs_group_free(&g);
}

int main(void)
{
	test_fa_lru();
	test_fa_fifo();
	test_sa_conflict();
	test_sa_fifo_random();
	test_invalidate_flush();
	test_fa_index_consistency(TLBS_LRU);
	test_fa_index_consistency(TLBS_RANDOM);
	test_fa_index_consistency(TLBS_FIFO);
	test_direct_index();
	for (int r = TLBS_LRU; r <= TLBS_RANDOM; r++) {
		test_access_matches_lookup_fill(64, 64, r, 0);
		test_access_matches_lookup_fill(64, 64, r, 1);
		test_access_matches_lookup_fill(256, 256, r, 1);
		test_access_matches_lookup_fill(256, 8, r, 0);
		test_access_matches_lookup_fill(48, 12, r, 0);
	}
	for (int r = TLBS_LRU; r <= TLBS_RANDOM; r++) {
		test_run_matches_access(64, 64, r, 1, 2);
		test_run_matches_access(64, 64, r, 1, 3);
		test_run_matches_access(64, 64, r, 0, 3);
		test_run_matches_access(2048, 8, r, 0, 1);
		test_run_matches_access(256, 4, r, 0, 3);
		test_run_matches_access(48, 12, r, 0, 1);
	}
	test_bad_geometry();
	return check_done("test_tlb");
}
