/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * The hit path of a TLB group, inline for the per-access loop (mmu.c);
 * misses, fills and invalidations live in tlb.c.
 */
#ifndef TLBSIM_TLB_FAST_H
#define TLBSIM_TLB_FAST_H

#include "tlbsim.h"

#define NIL 0xffffffffu

static inline int is_fa(const struct tlbs_group *g)
{
	return g->sets == 1;
}

/* ---- fully associative: hash index ---- */

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
	u32 s = hfind(g, key), e;

	if (!g->hkey[s])
		return 0;
	if (g->repl == TLBS_LRU) {
		e = g->hslot[s];
		if (g->head != e) {
			lru_unlink(g, e);
			lru_push(g, e);
		}
	}
	return 1;
}

static inline u64 *set_of(const struct tlbs_group *g, u64 key, u32 *base)
{
	*base = (u32)(tlbs_key_vpn(key) & (g->sets - 1)) * g->ways;
	return g->key + *base;
}

static inline int sa_lookup(struct tlbs_group *g, u64 key)
{
	u32 base, w, match = 0;
	u64 *k = set_of(g, key, &base);

	/* compare every way, no early exit: no mispredicted loop end */
	for (w = 0; w < g->ways; w++)
		match |= (u32)(k[w] == key) << w;
	if (!match)
		return 0;
	if (g->repl == TLBS_LRU)
		g->stamp[base + __builtin_ctz(match)] = ++g->clock;
	return 1;
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

#endif /* TLBSIM_TLB_FAST_H */
