// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * A stream of keys through one TLB group: tlbs_group_run().
 *
 * When every page size has a path of one group (GS464V, LA464, the generic
 * preset), a group's hits and misses depend only on the keys it sees, in
 * order: mmu.c first turns a batch of accesses into one key list per group,
 * then runs each list here. The loops below keep the group's state in
 * locals, and for random replacement they draw the victims ahead: the
 * generator's sequence does not depend on the hits and misses, only how
 * far along it a run is, so the draws leave the loop's critical path. The
 * result (keys, counters, generator state) is that of tlbs_group_access()
 * called key after key, which test_tlb checks on twin groups.
 */
#include <stdlib.h>

#include "tlbsim.h"
#include "tlb_fast.h"

#define DRAWS 64

/* Victims drawn ahead from a group's generator: slot of draw i, and the
 * generator state after it. */
struct draws {
	u32 victim[DRAWS];
	u64 state[DRAWS];
	u64 before;		/* state before the first draw of the block */
	u32 pos;		/* draws used */
};

static inline void draws_fill(struct draws *d, u64 *rng, u32 n)
{
	u32 i;

	d->before = *rng;
	for (i = 0; i < DRAWS; i++) {
		d->victim[i] = (u32)tlbs_scale(tlbs_rand(rng), n);
		d->state[i] = *rng;
	}
	d->pos = 0;
}

/* The generator state after the draws used so far. */
static inline u64 draws_state(const struct draws *d)
{
	return d->pos ? d->state[d->pos - 1] : d->before;
}

static inline u32 key_class(u64 key)
{
	return (u32)(key >> 1) & 1;
}

/* The class of every key of @g's list if it holds one class, else -1. */
static inline int one_class(const struct tlbs_group *g)
{
	return g->classes == 1u << TLBS_BASE ? TLBS_BASE :
	       g->classes == 1u << TLBS_HUGE ? TLBS_HUGE : -1;
}

/*
 * Fully associative, random replacement, direct index, full. The victims
 * come from the draws made ahead; each inner pass runs at most as many
 * keys as draws are left, since a key uses at most one.
 */
static inline __attribute__((always_inline)) void
fa_random_loop(struct tlbs_group *g, const u64 *keys, u32 n, u64 *walks,
	       int cls)
{
	u32 *direct = g->direct, slot, e, i = 0, m, hit, misses = 0;
	u64 *ek = g->key, rng = g->rng, key, d, hm, dsize = g->dsize;
	u64 miss[TLBS_NCLASS] = { 0, 0 };
	struct draws dr;

	draws_fill(&dr, &rng, g->entries);
	while (i < n) {
		if (dr.pos == DRAWS)
			draws_fill(&dr, &rng, g->entries);
		m = n - i < DRAWS - dr.pos ? n - i : DRAWS - dr.pos;
		for (; m; m--, i++) {
			key = keys[i];
			d = key >> 1;
			if (__builtin_expect(d >= dsize, 0))
				dslot(g, key);	/* aborts */
			/*
			 * The victim's index slot is not cleared (see
			 * direct_find()); on a hit the stores rewrite what
			 * is there.
			 */
			e = direct[d] - 1;
			hit = e != NIL && ek[e] == key;
			hm = -(u64)hit;
			slot = (u32)pick(hm, e, dr.victim[dr.pos]);
			ek[slot] = key;
			direct[d] = slot + 1;
			dr.pos += hit ^ 1;
			misses += hit ^ 1;
			if (cls < 0)
				miss[key_class(key)] += hit ^ 1;
		}
	}
	g->rng = draws_state(&dr);
	g->hits += n - misses;
	g->misses += misses;
	g->fills += misses;
	if (cls >= 0)
		miss[cls] = misses;
	walks[TLBS_BASE] += miss[TLBS_BASE];
	walks[TLBS_HUGE] += miss[TLBS_HUGE];
}

static void fa_random_run(struct tlbs_group *g, const u64 *keys, u32 n,
			  u64 *walks)
{
	switch (one_class(g)) {
	case TLBS_BASE:
		fa_random_loop(g, keys, n, walks, TLBS_BASE);
		break;
	case TLBS_HUGE:
		fa_random_loop(g, keys, n, walks, TLBS_HUGE);
		break;
	default:
		fa_random_loop(g, keys, n, walks, -1);
		break;
	}
}

/*
 * Set associative, random replacement (as sa_random_access()); @ways is a
 * constant where the caller specialises it, and so is @full: a full group
 * stays full through a list (only invalidations, between lists, empty a
 * way), so its loop skips the search for an empty way.
 */
static inline __attribute__((always_inline)) void
sa_random_loop(struct tlbs_group *g, const u64 *keys, u32 n, u64 *walks,
	       u32 ways, int full)
{
	u64 *gk = g->key, rng = g->rng, setmask = g->sets - 1, key, *k, hm, em;
	u64 hits = 0, filled = 0, miss[TLBS_NCLASS] = { 0, 0 };
	u32 match, empty = 0, slot, i = 0, m;
	struct draws dr;

	draws_fill(&dr, &rng, ways);
	while (i < n) {
		if (dr.pos == DRAWS)
			draws_fill(&dr, &rng, ways);
		m = n - i < DRAWS - dr.pos ? n - i : DRAWS - dr.pos;
		for (; m; m--, i++) {
			key = keys[i];
			k = gk + (tlbs_key_vpn(key) & setmask) * ways;
			match = ways_equal(k, ways, key);
			if (!full)
				empty = ways_equal(k, ways, 0);
			hm = -(u64)(match != 0);
			em = -(u64)(empty != 0);
			/* bit 31 stands in for "none": ctz of 0 is
			 * undefined */
			slot = (u32)pick(hm, __builtin_ctz(match | 1u << 31),
					 pick(em, __builtin_ctz(empty | 1u << 31),
					      dr.victim[dr.pos]));
			k[slot] = key;
			dr.pos += !(hm | em);
			filled += ~hm & em & 1;
			hits -= hm;
			miss[key_class(key)] += !hm;
		}
	}
	g->rng = draws_state(&dr);
	g->used += (u32)filled;
	g->hits += hits;
	g->misses += n - hits;
	g->fills += n - hits;
	walks[TLBS_BASE] += miss[TLBS_BASE];
	walks[TLBS_HUGE] += miss[TLBS_HUGE];
}

static void sa_random_run(struct tlbs_group *g, const u64 *keys, u32 n,
			  u64 *walks)
{
	int full = g->used == g->entries;

	if (g->ways == 8 && full)
		sa_random_loop(g, keys, n, walks, 8, 1);
	else if (g->ways == 8)
		sa_random_loop(g, keys, n, walks, 8, 0);
	else if (g->ways == 4 && full)
		sa_random_loop(g, keys, n, walks, 4, 1);
	else
		sa_random_loop(g, keys, n, walks, g->ways, 0);
}

void tlbs_group_run(struct tlbs_group *g, const u64 *keys, u32 n,
		    u64 *walks)
{
	u32 i = 0;

	if (g->repl == TLBS_RANDOM && !is_fa(g)) {
		sa_random_run(g, keys, n, walks);
		return;
	}
	if (g->repl == TLBS_RANDOM && g->direct) {
		/*
		 * Until the group is full a hit changes nothing and a miss
		 * takes the first empty entry, drawing nothing: a branch
		 * that mostly goes one way (a run's keys that fit the group
		 * stay resident).
		 */
		u32 hits = 0;

		for (; i < n && g->used < g->entries; i++) {
			if (direct_find(g, keys[i]) != NIL) {
				hits++;
				continue;
			}
			g->misses++;
			walks[key_class(keys[i])]++;
			tlbs_group_fill(g, keys[i]);
		}
		g->hits += hits;
		if (i < n)
			fa_random_run(g, keys + i, n - i, walks);
		return;
	}
	for (; i < n; i++)
		walks[key_class(keys[i])] +=
			!tlbs_group_access_fast(g, keys[i]);
}
