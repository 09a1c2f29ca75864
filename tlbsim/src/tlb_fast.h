/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * The per-access path of a TLB group, inline for the loop in mmu.c:
 * lookups, and the combined lookup-and-fill of tlbs_group_access_fast().
 * Slow-path fills, invalidations and set-up live in tlb.c.
 *
 * The simulated hits and misses of a random pointer chase are themselves
 * random, so a branch on "hit?" is mispredicted about as often as not and
 * costs more than the rest of the access. For random replacement, the
 * common case of the presets, the access is therefore branch-free once
 * the group is full: the victim is drawn every time and used only on a
 * miss (the generator state advances only then, so the sequence of
 * victims is the one lookup + fill would draw).
 */
#ifndef TLBSIM_TLB_FAST_H
#define TLBSIM_TLB_FAST_H

#include <stdlib.h>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "tlbsim.h"

#define NIL 0xffffffffu

static inline int is_fa(const struct tlbs_group *g)
{
	return g->sets == 1;
}

/* ---- fully associative: the key -> entry index ---- */

static inline u32 hpos(const struct tlbs_group *g, u64 key)
{
	return (u32)((key * 0x9E3779B97F4A7C15ULL) >> g->hshift) & g->hmask;
}

/* Hash slot holding @key, or the empty slot where it would go. */
static inline u32 hfind(const struct tlbs_group *g, u64 key)
{
	u32 s = hpos(g, key);

	while (g->hkey[s] && g->hkey[s] != key)
		s = (s + 1) & g->hmask;
	return s;
}

/* Direct index slot of @key; a key beyond the bound is a caller's bug. */
static inline u64 dslot(const struct tlbs_group *g, u64 key)
{
	u64 d = key >> 1;

	if (__builtin_expect(d >= g->dsize, 0)) {
		fprintf(stderr, "tlbsim: key %#llx beyond the direct index of "
			"group %s\n", (unsigned long long)key, g->name);
		abort();
	}
	return d;
}

/*
 * Direct index: the entry @key was last put in, or NIL. An entry whose key
 * was evicted by random replacement keeps its index slot (clearing it
 * would wait on loading the victim's key), so the entry is checked; an
 * absent key's slot names entry @entries, whose key is always 0.
 */
static inline u32 direct_find(const struct tlbs_group *g, u64 key)
{
	u32 e = g->direct[dslot(g, key)];

	return g->key[e] == key ? e : NIL;
}

/* Entry holding @key, or NIL. */
static inline u32 idx_find(const struct tlbs_group *g, u64 key)
{
	u32 s;

	if (g->direct)
		return direct_find(g, key);
	s = hfind(g, key);
	return g->hkey[s] ? g->hslot[s] : NIL;
}

static inline void lru_unlink(struct tlbs_group *g, u32 e)
{
	if (g->prev[e] != NIL)
		g->next[g->prev[e]] = g->next[e];
	else
		g->head = g->next[e];
	if (g->next[e] != NIL)
		g->prev[g->next[e]] = g->prev[e];
	else
		g->tail = g->prev[e];
}

static inline void lru_push(struct tlbs_group *g, u32 e)
{
	g->prev[e] = NIL;
	g->next[e] = g->head;
	if (g->head != NIL)
		g->prev[g->head] = e;
	g->head = e;
	if (g->tail == NIL)
		g->tail = e;
}

static inline int fa_lookup(struct tlbs_group *g, u64 key)
{
	u32 e = idx_find(g, key);

	if (e == NIL)
		return 0;
	if (g->repl == TLBS_LRU && g->head != e) {
		lru_unlink(g, e);
		lru_push(g, e);
	}
	return 1;
}

/* @a where @m is all ones, else @b: a select the compiler cannot turn
 * into a branch */
static inline u64 pick(u64 m, u64 a, u64 b)
{
	return (a & m) | (b & ~m);
}

/* @a if @cond, else @b, without a branch (a conditional move on x86). */
static inline u32 select_u32(u32 cond, u32 a, u32 b)
{
#if defined(__x86_64__)
	__asm__("test %1, %1\n\tcmovnz %2, %0"
		: "+r"(b) : "r"(cond), "r"(a) : "cc");
	return b;
#else
	return b ^ ((a ^ b) & -cond);
#endif
}

/*
 * Full, random replacement, direct index: no branch on the outcome. The
 * victim's index slot is left as it is (see direct_find()).
 */
static inline int fa_random_access(struct tlbs_group *g, u64 key)
{
	u64 d = dslot(g, key), rng = g->rng, r, hm;
	u32 e = g->direct[d], slot;
	int hit = g->key[e] == key;

	hm = -(u64)hit;
	r = tlbs_rand(&rng);
	slot = (u32)pick(hm, e, tlbs_scale(r, g->entries));
	g->key[slot] = key;
	g->direct[d] = slot;
	g->rng = pick(hm, g->rng, rng);
	g->hits += hit;
	g->misses += !hit;
	g->fills += !hit;
	return hit;
}

/* ---- set associative ---- */

static inline u64 *set_of(const struct tlbs_group *g, u64 key, u32 *base)
{
	*base = (u32)(tlbs_key_vpn(key) & (g->sets - 1)) * g->ways;
	return g->key + *base;
}

/*
 * Bit w set where way w of the set holds @v. Every way is compared, with
 * no early exit; 4- and 8-way sets use AVX2 compares where the build
 * target has them (the Makefile adds -mavx2 on a CPU with AVX2), else
 * unrolled scalar code.
 */
static inline u32 ways_equal4(const u64 *k, u64 v)
{
#if defined(__AVX2__)
	__m256i x = _mm256_set1_epi64x((long long)v);
	__m256i a = _mm256_loadu_si256((const __m256i *)k);

	return (u32)_mm256_movemask_pd(_mm256_castsi256_pd(
		_mm256_cmpeq_epi64(a, x)));
#else
	return (u32)(k[0] == v) | (u32)(k[1] == v) << 1 |
	       (u32)(k[2] == v) << 2 | (u32)(k[3] == v) << 3;
#endif
}

static inline u32 ways_equal8(const u64 *k, u64 v)
{
	return ways_equal4(k, v) | ways_equal4(k + 4, v) << 4;
}

static inline u32 ways_equal(const u64 *k, u32 ways, u64 v)
{
	u32 w, m = 0;

	if (ways == 8)
		return ways_equal8(k, v);
	if (ways == 4)
		return ways_equal4(k, v);
	for (w = 0; w < ways; w++)
		m |= (u32)(k[w] == v) << w;
	return m;
}

static inline int sa_lookup(struct tlbs_group *g, u64 key)
{
	u32 base, match;
	u64 *k = set_of(g, key, &base);

	match = ways_equal(k, g->ways, key);
	if (!match)
		return 0;
	if (g->repl == TLBS_LRU)
		g->stamp[base + __builtin_ctz(match)] = ++g->clock;
	return 1;
}

/*
 * Random replacement: the victim is the first empty way, else a random
 * one (as sa_fill in tlb.c), chosen without a branch on the outcome.
 * Random replacement keeps no stamps.
 */
static inline int sa_random_access(struct tlbs_group *g, u64 key)
{
	u32 base, match, empty, slot;
	u64 *k = set_of(g, key, &base), rng = g->rng, r, hm, em;
	int hit;

	match = ways_equal(k, g->ways, key);
	empty = ways_equal(k, g->ways, 0);
	hit = match != 0;
	hm = -(u64)hit;
	em = -(u64)(empty != 0);
	r = tlbs_rand(&rng);
	/* bit 31 stands in for "none": ctz of 0 is undefined */
	slot = (u32)pick(hm, __builtin_ctz(match | 1u << 31),
			 pick(em, __builtin_ctz(empty | 1u << 31),
			      tlbs_scale(r, g->ways)));
	k[slot] = key;
	g->rng = pick(hm | em, g->rng, rng);
	g->used += !hit & (empty != 0);
	g->hits += hit;
	g->misses += !hit;
	g->fills += !hit;
	return hit;
}

static inline int tlbs_group_lookup_fast(struct tlbs_group *g, u64 key)
{
	int hit = is_fa(g) ? fa_lookup(g, key) : sa_lookup(g, key);

	if (hit)
		g->hits++;
	else
		g->misses++;
	return hit;
}

/* Look @key up and fill it on a miss; returns 1 on a hit. */
static inline __attribute__((always_inline)) int
tlbs_group_access_fast(struct tlbs_group *g, u64 key)
{
	if (g->repl == TLBS_RANDOM) {
		if (!is_fa(g))
			return sa_random_access(g, key);
		if (g->direct && g->used == g->entries)
			return fa_random_access(g, key);
	}
	if (tlbs_group_lookup_fast(g, key))
		return 1;
	tlbs_group_fill(g, key);
	return 0;
}

#endif /* TLBSIM_TLB_FAST_H */
