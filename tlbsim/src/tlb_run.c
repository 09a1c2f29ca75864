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

/*
 * Victims drawn ahead from a group's generator. Its state is a counter
 * (tlbs_rand()), so the state after the draws used is the state before
 * them plus as many increments.
 */
struct draws {
	u32 victim[DRAWS];
	u64 before;		/* state before the first draw of the block */
	u32 pos;		/* draws used */
};

static inline void draws_fill(struct draws *d, u64 rng, u32 n)
{
	u32 i, sh = 64 - (u32)__builtin_ctz(n);

	d->before = rng;
	if (!(n & (n - 1))) {
		/* tlbs_scale() by a power of two is a shift */
		for (i = 0; i < DRAWS; i++)
			d->victim[i] = (u32)(tlbs_rand_at(rng + (i + 1) *
						TLBS_RAND_INC) >> sh);
	} else {
		for (i = 0; i < DRAWS; i++)
			d->victim[i] = (u32)tlbs_scale(tlbs_rand_at(rng +
						(i + 1) * TLBS_RAND_INC), n);
	}
	d->pos = 0;
}

/* The generator state after the draws used so far. */
static inline u64 draws_state(const struct draws *d)
{
	return d->before + d->pos * TLBS_RAND_INC;
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
 * keys as draws are left, since a key uses at most one. A miss is a key
 * that took a victim, so the misses are the draws used.
 */
static inline __attribute__((always_inline)) void
fa_random_loop(struct tlbs_group *g, const u64 *keys, u32 n, u64 *walks,
	       int cls)
{
	u32 *direct = g->direct, e, slot, victim;
	u64 *ek = g->key, key, d, miss, dsize = g->dsize, used = 0, pos;
	u64 miss_by[TLBS_NCLASS] = { 0, 0 };
	const u64 *end = keys + n, *stop;
	struct draws dr;

	draws_fill(&dr, g->rng, g->entries);
	pos = 0;
	while (keys < end) {
		if (pos == DRAWS) {
			dr.pos = DRAWS;
			used += DRAWS;
			draws_fill(&dr, draws_state(&dr), g->entries);
			pos = 0;
		}
		stop = (u64)(end - keys) < DRAWS - pos ? end :
		       keys + (DRAWS - pos);
		for (; keys < stop; keys++) {
			key = *keys;
			d = key >> 1;
			if (__builtin_expect(d >= dsize, 0))
				dslot(g, key);	/* aborts */
			/*
			 * The victim's index slot is not cleared (see
			 * direct_find()); on a hit the stores rewrite what
			 * is there.
			 */
			e = direct[d];
			miss = ek[e] != key;
			victim = dr.victim[pos];
			/* a select, not a branch: misses come at random */
			slot = select_u32((u32)miss, victim, e);
			ek[slot] = key;
			direct[d] = slot;
			pos += miss;
			if (cls < 0)
				miss_by[key_class(key)] += miss;
		}
	}
	dr.pos = (u32)pos;
	used += pos;
	g->rng = draws_state(&dr);
	g->hits += n - used;
	g->misses += used;
	g->fills += used;
	if (cls >= 0)
		miss_by[cls] = used;
	walks[TLBS_BASE] += miss_by[TLBS_BASE];
	walks[TLBS_HUGE] += miss_by[TLBS_HUGE];
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
 * Set associative, random replacement (as sa_random_access()); @ways,
 * @full and @cls are constants where the caller specialises them. A full
 * group stays full through a list (only invalidations, between lists,
 * empty a way), so its loop skips the search for an empty way, and its
 * misses are the draws used.
 */
static inline __attribute__((always_inline)) void
sa_random_loop(struct tlbs_group *g, const u64 *keys, u32 n, u64 *walks,
	       u32 ways, int full, int cls)
{
	u64 *gk = g->key, setmask = g->sets - 1, key, *k, used = 0, pos;
	u64 filled = 0, misses = 0, miss_by[TLBS_NCLASS] = { 0, 0 };
	u32 match, empty, miss, alt, hit_way, slot, fresh;
	const u64 *end = keys + n, *stop;
	struct draws dr;

	draws_fill(&dr, g->rng, ways);
	pos = 0;
	while (keys < end) {
		if (pos == DRAWS) {
			dr.pos = DRAWS;
			used += DRAWS;
			draws_fill(&dr, draws_state(&dr), ways);
			pos = 0;
		}
		stop = (u64)(end - keys) < DRAWS - pos ? end :
		       keys + (DRAWS - pos);
		for (; keys < stop; keys++) {
			key = *keys;
			k = gk + (tlbs_key_vpn(key) & setmask) * ways;
			match = ways_equal(k, ways, key);
			miss = match == 0;
			/* bit 31 stands in for "none": ctz of 0 is
			 * undefined */
			hit_way = (u32)__builtin_ctz(match | 1u << 31);
			alt = dr.victim[pos];
			fresh = 0;
			if (!full) {
				/* the first empty way, else the victim */
				empty = ways_equal(k, ways, 0);
				fresh = empty != 0;
				alt = select_u32(fresh, (u32)__builtin_ctz(
						empty | 1u << 31), alt);
				filled += miss & fresh;
			}
			/* selects, not branches: misses come at random */
			slot = select_u32(miss, alt, hit_way);
			k[slot] = key;
			pos += miss & (fresh ^ 1);
			if (!full)
				misses += miss;
			if (cls < 0)
				miss_by[key_class(key)] += miss;
		}
	}
	dr.pos = (u32)pos;
	used += pos;
	if (full)
		misses = used;
	g->rng = draws_state(&dr);
	g->used += (u32)filled;
	g->hits += n - misses;
	g->misses += misses;
	g->fills += misses;
	if (cls >= 0)
		miss_by[cls] = misses;
	walks[TLBS_BASE] += miss_by[TLBS_BASE];
	walks[TLBS_HUGE] += miss_by[TLBS_HUGE];
}

/* The specialisations: 8- and 4-way, full or not, one class or both. */
#define SA_CASE(W, F)							\
	do {								\
		if (cls == TLBS_BASE)					\
			sa_random_loop(g, keys, n, walks, W, F, TLBS_BASE); \
		else if (cls == TLBS_HUGE)				\
			sa_random_loop(g, keys, n, walks, W, F, TLBS_HUGE); \
		else							\
			sa_random_loop(g, keys, n, walks, W, F, -1);	\
	} while (0)

static void sa_random_run(struct tlbs_group *g, const u64 *keys, u32 n,
			  u64 *walks)
{
	int full = g->used == g->entries, cls = one_class(g);

	if (g->ways == 8 && full)
		SA_CASE(8, 1);
	else if (g->ways == 8)
		SA_CASE(8, 0);
	else if (g->ways == 4 && full)
		SA_CASE(4, 1);
	else
		sa_random_loop(g, keys, n, walks, g->ways, 0, -1);
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
