// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * One TLB group: @entries keys in @sets sets of @ways ways.
 *
 * Set-associative groups index the set with the low bits of the virtual
 * page number (as the hardware does) and search the ways linearly. Fully
 * associative groups (one set) keep an index from key to entry (a hash, or
 * a direct table when a run's keys are few) and, for LRU, a doubly linked
 * recency list, so a lookup costs O(1) whatever the size.
 */
#include <stdlib.h>
#include <string.h>

#include "tlbsim.h"
#include "tlb_fast.h"

const char *tlbs_repl_name(enum tlbs_repl r)
{
	switch (r) {
	case TLBS_LRU:
		return "lru";
	case TLBS_FIFO:
		return "fifo";
	case TLBS_RANDOM:
		return "random";
	}
	return "?";
}

int tlbs_group_init(struct tlbs_group *g, const char *name, u32 entries,
		    u32 ways, enum tlbs_repl repl, u32 classes)
{
	u32 hsize = 1, i;

	memset(g, 0, sizeof(*g));
	snprintf(g->name, sizeof(g->name), "%s", name);
	if (!entries || !ways || entries % ways)
		return -1;
	g->entries = entries;
	g->ways = ways;
	g->sets = entries / ways;
	if (g->sets & (g->sets - 1))
		return -1;	/* the set index is a bit field */
	if (g->sets > 1 && ways > 32)
		return -1;	/* ways are searched as a 32-bit mask */
	g->repl = repl;
	g->classes = classes;
	g->rng = 0x9E3779B97F4A7C15ULL ^ entries;
	/* one more key, always 0: the direct index's "absent" entry */
	g->key = calloc(entries + 1, sizeof(*g->key));
	g->stamp = calloc(entries, sizeof(*g->stamp));
	if (!g->key || !g->stamp)
		return -1;
	if (!is_fa(g))
		return 0;
	while (hsize < 4 * entries)
		hsize <<= 1;
	g->hmask = hsize - 1;
	g->hshift = 64;
	for (i = hsize; i > 1; i >>= 1)
		g->hshift--;
	g->hslot = calloc(hsize, sizeof(*g->hslot));
	g->hkey = calloc(hsize, sizeof(*g->hkey));
	g->prev = malloc(entries * sizeof(*g->prev));
	g->next = malloc(entries * sizeof(*g->next));
	if (!g->hslot || !g->hkey || !g->prev || !g->next)
		return -1;
	g->head = g->tail = NIL;
	return 0;
}

void tlbs_group_free(struct tlbs_group *g)
{
	free(g->key);
	free(g->stamp);
	free(g->hslot);
	free(g->hkey);
	free(g->prev);
	free(g->next);
	free(g->direct);
	g->direct = NULL;
	g->dsize = 0;
	g->key = NULL;
	g->stamp = NULL;
	g->hslot = NULL;
	g->hkey = NULL;
	g->prev = g->next = NULL;
}

/* Linear-probing delete with backward shift (no tombstones). */
static void hdelete(struct tlbs_group *g, u32 s)
{
	u32 j = s, home;

	g->hkey[s] = 0;
	for (;;) {
		j = (j + 1) & g->hmask;
		if (!g->hkey[j])
			return;
		home = hpos(g, g->hkey[j]);
		/* can the entry at j move back to s? */
		if ((s <= j) ? (home <= s || home > j) : (home <= s && home > j)) {
			g->hkey[s] = g->hkey[j];
			g->hslot[s] = g->hslot[j];
			g->hkey[j] = 0;
			s = j;
		}
	}
}

static void idx_insert(struct tlbs_group *g, u64 key, u32 e)
{
	u32 s;

	if (g->direct) {
		g->direct[dslot(g, key)] = e;
		return;
	}
	s = hfind(g, key);
	g->hkey[s] = key;
	g->hslot[s] = e;
}

static void idx_remove(struct tlbs_group *g, u64 key)
{
	if (g->direct)
		g->direct[dslot(g, key)] = g->entries;
	else
		hdelete(g, hfind(g, key));
}

static void fa_remove(struct tlbs_group *g, u32 e)
{
	idx_remove(g, g->key[e]);
	g->key[e] = 0;
	if (g->repl == TLBS_LRU)
		lru_unlink(g, e);
	g->used--;
}

static void fa_fill(struct tlbs_group *g, u64 key)
{
	u32 e;

	if (g->used < g->entries) {
		/* a free entry: the first empty one */
		for (e = 0; g->key[e]; e++)
			;
	} else {
		switch (g->repl) {
		case TLBS_LRU:
			e = g->tail;
			break;
		case TLBS_FIFO:
			e = g->fifo_next;
			g->fifo_next = (g->fifo_next + 1) % g->entries;
			break;
		default:
			e = (u32)tlbs_rand_below(&g->rng, g->entries);
			break;
		}
		fa_remove(g, e);
	}
	g->key[e] = key;
	idx_insert(g, key, e);
	if (g->repl == TLBS_LRU)
		lru_push(g, e);
	g->used++;
}

/* Every key absent: each slot names the always-empty entry. */
static void direct_clear(struct tlbs_group *g)
{
	u64 d;

	for (d = 0; d < g->dsize; d++)
		g->direct[d] = g->entries;
}

/* Index the resident entries of a direct-indexed group by the hash. */
static void direct_to_hash(struct tlbs_group *g)
{
	u32 e;

	free(g->direct);
	g->direct = NULL;
	g->dsize = 0;
	for (e = 0; e < g->entries; e++)
		if (g->key[e])
			idx_insert(g, g->key[e], e);
}

int tlbs_group_index_direct(struct tlbs_group *g, u64 key_bound)
{
	u64 n = (key_bound + 1) >> 1;

	if (!is_fa(g) || g->entries >= NIL)
		return 0;
	if (g->direct && n <= g->dsize)
		return 1;	/* the table in place covers every key */
	if (g->used || n > (256u << 10) / sizeof(*g->direct)) {
		/* resident entries, or a table over 256 KiB: the hash */
		if (g->direct)
			direct_to_hash(g);
		return 0;
	}
	free(g->direct);
	g->direct = malloc(n * sizeof(*g->direct));
	g->dsize = g->direct ? n : 0;
	direct_clear(g);
	return !!g->direct;
}

/* ---- set associative ---- */

static void sa_fill(struct tlbs_group *g, u64 key)
{
	u32 base, w, victim = 0;
	u64 *k = set_of(g, key, &base);

	for (w = 0; w < g->ways; w++)
		if (!k[w])
			break;
	if (w < g->ways) {
		victim = w;
		g->used++;
	} else if (g->repl == TLBS_RANDOM) {
		victim = (u32)tlbs_rand_below(&g->rng, g->ways);
	} else {
		/* LRU: least recently used; FIFO: oldest fill */
		for (w = 1; w < g->ways; w++)
			if (g->stamp[base + w] < g->stamp[base + victim])
				victim = w;
	}
	k[victim] = key;
	if (g->repl != TLBS_RANDOM)
		g->stamp[base + victim] = ++g->clock;
}

int tlbs_group_lookup(struct tlbs_group *g, u64 key)
{
	return tlbs_group_lookup_fast(g, key);
}

int tlbs_group_access(struct tlbs_group *g, u64 key)
{
	return tlbs_group_access_fast(g, key);
}

void tlbs_group_fill(struct tlbs_group *g, u64 key)
{
	g->fills++;
	if (is_fa(g))
		fa_fill(g, key);
	else
		sa_fill(g, key);
}

int tlbs_group_invalidate(struct tlbs_group *g, u64 key)
{
	u32 base, w, e;
	u64 *k;

	if (is_fa(g)) {
		e = idx_find(g, key);
		if (e == NIL)
			return 0;
		fa_remove(g, e);
		g->invalidations++;
		return 1;
	}
	k = set_of(g, key, &base);
	for (w = 0; w < g->ways; w++) {
		if (k[w] == key) {
			k[w] = 0;
			g->used--;
			g->invalidations++;
			return 1;
		}
	}
	return 0;
}

u32 tlbs_group_flush(struct tlbs_group *g)
{
	u32 n = tlbs_group_count(g);

	memset(g->key, 0, g->entries * sizeof(*g->key));
	memset(g->stamp, 0, g->entries * sizeof(*g->stamp));
	if (is_fa(g)) {
		memset(g->hkey, 0, (g->hmask + 1) * sizeof(*g->hkey));
		direct_clear(g);
		g->head = g->tail = NIL;
		g->fifo_next = 0;
	}
	g->used = 0;
	g->invalidations += n;
	return n;
}

u32 tlbs_group_count(const struct tlbs_group *g)
{
	u32 i, n = 0;

	for (i = 0; i < g->entries; i++)
		n += !!g->key[i];
	return n;
}
