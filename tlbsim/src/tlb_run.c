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
 * Victims drawn ahead from a group's generator, a block of DRAWS at a
 * time. The generator's state is a counter (tlbs_rand()), so the state
 * after the draws a list used is its state before plus as many increments:
 * nothing but the count is kept. A loop takes victim[pos] and advances
 * pos (a local, kept in a register) on each miss.
 */
struct draws {
	u32 victim[DRAWS];
	u64 start;		/* the group's state before the list */
	u64 used;		/* draws of the blocks before this one */
	u32 n;			/* victims are in [0, n) */
};

static inline void draws_fill(struct draws *d)
{
	u64 rng = d->start + d->used * TLBS_RAND_INC;
	u32 i, sh = 64 - (u32)__builtin_ctz(d->n);

	if (!(d->n & (d->n - 1))) {
		/* tlbs_scale() by a power of two is a shift */
		for (i = 0; i < DRAWS; i++)
			d->victim[i] = (u32)(tlbs_rand_at(rng + (i + 1) *
						TLBS_RAND_INC) >> sh);
	} else {
		for (i = 0; i < DRAWS; i++)
			d->victim[i] = (u32)tlbs_scale(tlbs_rand_at(rng +
						(i + 1) * TLBS_RAND_INC), d->n);
	}
}

static inline void draws_start(struct draws *d, const struct tlbs_group *g,
			       u32 n)
{
	d->start = g->rng;
	d->used = 0;
	d->n = n;
	draws_fill(d);
}

/*
 * Where the next pass over @keys (up to @end) stops: at most as many keys
 * as draws are left, since a key takes at most one. An exhausted block is
 * replaced first (and *@pos set back to 0).
 */
static inline const u64 *draws_pass(struct draws *d, u64 *pos,
				    const u64 *keys, const u64 *end)
{
	if (*pos == DRAWS) {
		d->used += DRAWS;
		draws_fill(d);
		*pos = 0;
	}
	return (u64)(end - keys) < DRAWS - *pos ? end : keys + (DRAWS - *pos);
}

/* The list is done with @pos draws of the last block taken: the draws
 * used in all, and the group's generator advanced past them. */
static inline u64 draws_finish(struct draws *d, struct tlbs_group *g,
			       u64 pos)
{
	d->used += pos;
	g->rng = d->start + d->used * TLBS_RAND_INC;
	return d->used;
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
 * Count one lookup's @miss (0 or 1, no branch on it) by page size and, for
 * base pages of the host stage, in @miss_s2; @cls as one_class() gives it
 * (a huge-only group has no base-page key to count).
 */
static inline __attribute__((always_inline)) void
count_miss(int cls, u64 key, u64 miss, u64 *miss_by, u64 *miss_s2)
{
	if (cls == TLBS_BASE)
		*miss_s2 += miss & key >> 4;
	else if (cls < 0)
		*miss_s2 += miss & tlbs_key_s2_base(key);
	if (cls < 0)
		miss_by[key_class(key)] += miss;
}

/*
 * A list of @n keys ran with @misses misses (a fill each); @miss_by holds
 * them by size class unless the group holds one class, @cls.
 */
static inline void list_done(struct tlbs_group *g, u32 n, u64 misses,
			     u64 *miss_by, int cls, u64 *walks, u64 miss_s2)
{
	walks[TLBS_WALK_S2_BASE] += miss_s2;
	g->hits += n - misses;
	g->misses += misses;
	g->fills += misses;
	if (cls >= 0)
		miss_by[cls] = misses;
	walks[TLBS_BASE] += miss_by[TLBS_BASE];
	walks[TLBS_HUGE] += miss_by[TLBS_HUGE];
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
	u64 *ek = g->key, key, d, miss, dsize = g->dsize, pos = 0;
	u64 miss_by[TLBS_NCLASS] = { 0, 0 }, miss_s2 = 0;
	const u64 *end = keys + n, *stop;
	struct draws dr;

	draws_start(&dr, g, g->entries);
	while (keys < end) {
		stop = draws_pass(&dr, &pos, keys, end);
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
			count_miss(cls, key, miss, miss_by, &miss_s2);
		}
	}
	list_done(g, n, draws_finish(&dr, g, pos), miss_by, cls, walks,
		  miss_s2);
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
	u64 *gk = g->key, setmask = g->sets - 1, key, *k, pos = 0, used;
	u64 filled = 0, misses = 0, miss_by[TLBS_NCLASS] = { 0, 0 };
	u64 miss_s2 = 0;
	u32 match, empty, miss, alt, hit_way, slot, fresh;
	const u64 *end = keys + n, *stop;
	struct draws dr;

	draws_start(&dr, g, ways);
	while (keys < end) {
		stop = draws_pass(&dr, &pos, keys, end);
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
				misses += miss;
			}
			/* selects, not branches: misses come at random */
			slot = select_u32(miss, alt, hit_way);
			k[slot] = key;
			pos += miss & (fresh ^ 1);
			count_miss(cls, key, miss, miss_by, &miss_s2);
		}
	}
	used = draws_finish(&dr, g, pos);
	g->used += (u32)filled;
	/* a full group takes a victim on every miss */
	list_done(g, n, full ? used : misses, miss_by, cls, walks, miss_s2);
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
			walks[TLBS_WALK_S2_BASE] += tlbs_key_s2_base(keys[i]);
			tlbs_group_fill(g, keys[i]);
		}
		g->hits += hits;
		if (i < n)
			fa_random_run(g, keys + i, n - i, walks);
		return;
	}
	for (; i < n; i++) {
		u64 miss = !tlbs_group_access_fast(g, keys[i]);

		walks[key_class(keys[i])] += miss;
		walks[TLBS_WALK_S2_BASE] += miss & tlbs_key_s2_base(keys[i]);
	}
}
