// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Which host huge pages the limiter splits first, and which of the split
 * ones it restores first: the simulator's side of the module's split_order
 * tunable (kernel-module/core/tlbb_params.def, kernel-module/tlbb_thp.c and
 * tlbb_heat.c).
 *
 *   high    address order, highest first (the module's split_order 0);
 *           restores the last split first
 *   low     lowest first (the simulator's own, for comparison)
 *   random  uniformly at random (split_order 1)
 *   heat    the coldest first, ties highest first (split_order 2); restores
 *           the hottest first
 *
 * Under method safe the module splits by heat while split_order is address
 * (0, its default) and safe_split_heat is 1 (its default):
 * tlbb_split_order(); the run maps it before it starts. --split-order sets
 * the order itself, whatever the method.
 *
 * Heat, as the module keeps it: one byte per host region, a count of the
 * accessed-bit samples that found it used (tlbb_heat_fold() of the module's
 * core: a young sample adds 2 up to 255, an old one halves it). Every access
 * sets its region's accessed bit (as if each sample's clearing were followed
 * by a TLB flush: a busy guest's TLB turns over far faster than a tick);
 * each tick samples heat_scan_pmds regions from a cursor that wraps round,
 * as the module's bounded sampling does. With heat_window_ms (below
 * interval_ms) the tick samples tlbb_heat_windows() windows of that length
 * back to back, ending at the tick, each counting only its own accesses
 * (the module arms the windows at the tick and splits after the last one;
 * the run cuts its chunks to 512 accesses, about 0.14 ms, while the windows
 * run). The module can see the accessed bits of huge PMDs only; the
 * simulator samples split regions as well (their PTEs' bits), which orders
 * restores, something the module leaves to khugepaged.
 */
#include <stdlib.h>
#include <string.h>

#include "tlbsim.h"
#include "tlbb_ctrl.h"

enum { H_HUGE = 2 };	/* mmu.c's state of a host region mapped huge */

static const char *const names[] = {
	[TLBS_SPLIT_LOW] = "low",
	[TLBS_SPLIT_HIGH] = "high",
	[TLBS_SPLIT_RANDOM] = "random",
	[TLBS_SPLIT_HEAT] = "heat",
};

int tlbs_split_order_parse(const char *name, enum tlbs_split_order *o)
{
	unsigned int i;
	u64 v;

	/* the module's names (tlbb_choices.def): address, random, heat */
	if (!tlbb_choice_parse(TLBB_P_split_order, name, strlen(name), &v)) {
		*o = tlbs_split_order_of_param(v);
		return 0;
	}
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(name, names[i])) {
			*o = (enum tlbs_split_order)i;
			return 0;
		}
	}
	return -1;
}

const char *tlbs_split_order_name(enum tlbs_split_order o)
{
	return names[o];
}

enum tlbs_split_order tlbs_split_order_of_param(u64 v)
{
	return v == TLBB_SPLIT_RANDOM ? TLBS_SPLIT_RANDOM :
	       v == TLBB_SPLIT_HEAT ? TLBS_SPLIT_HEAT : TLBS_SPLIT_HIGH;
}

static int heat_alloc(struct tlbs_mmu *u)
{
	if (u->heat)
		return 0;
	u->accessed = calloc(u->nhost, 1);
	u->heat = calloc(u->nhost, 1);
	if (u->accessed && u->heat)
		return 0;
	tlbs_heat_free(u);
	return -1;
}

void tlbs_heat_free(struct tlbs_mmu *u)
{
	free(u->accessed);
	free(u->heat);
	u->accessed = u->heat = NULL;
	u->heat_cursor = 0;
}

int tlbs_heat_mark(struct tlbs_mmu *u, const u64 *off, u32 n)
{
	u32 hs = u->m->huge_shift, k;
	unsigned char *acc;

	if (heat_alloc(u))
		return -1;
	acc = u->accessed;
	if (u->model == TLBS_NATIVE)
		return 0;	/* no host stage: nothing to limit */
	if (!(u->hva_offset & ((1ULL << hs) - 1))) {
		/* GPA and HVA congruent: the host region is the guest's */
		for (k = 0; k < n; k++)
			acc[off[k] >> hs] = 1;
		return 0;
	}
	for (k = 0; k < n; k++)
		acc[tlbs_mmu_host_region(u, off[k])] = 1;
	return 0;
}

int tlbs_heat_sample(struct tlbs_mmu *u, u64 budget, int window, int last)
{
	u64 i, c;

	if (heat_alloc(u))
		return -1;
	c = u->heat_cursor;
	for (i = 0; i < budget && i < u->nhost; i++) {
		u->heat[c] = tlbb_heat_fold(u->heat[c], u->accessed[c]);
		u->accessed[c] = 0;
		if (++c == u->nhost)
			c = 0;
	}
	/* the tick's windows sample the same regions; the last moves on */
	if (last)
		u->heat_cursor = c;
	/* with a window, only the accesses of the next window count */
	if (window)
		memset(u->accessed, 0, u->nhost);
	return 0;
}

static unsigned char heat_of(const struct tlbs_mmu *u, u64 r)
{
	return u->heat ? u->heat[r] : 0;
}

u64 tlbs_split_pick(struct tlbs_mmu *u)
{
	u64 r, n = 0, want, best = ~0ULL;

	switch (u->split_order) {
	case TLBS_SPLIT_HIGH:
		for (r = u->nhost; r-- > 0;)
			if (u->thp[r] == H_HUGE)
				return r;
		break;
	case TLBS_SPLIT_HEAT:
		/* the coldest, the highest of equals (address order) */
		for (r = u->nhost; r-- > 0;)
			if (u->thp[r] == H_HUGE &&
			    (best == ~0ULL || heat_of(u, r) < heat_of(u, best)))
				best = r;
		return best;
	case TLBS_SPLIT_RANDOM:
		for (r = 0; r < u->nhost; r++)
			n += u->thp[r] == H_HUGE;
		if (!n)
			break;
		want = tlbs_rand_below(&u->rng, n);
		for (r = 0; r < u->nhost; r++)
			if (u->thp[r] == H_HUGE && !want--)
				return r;
		break;
	default:
		for (r = 0; r < u->nhost; r++)
			if (u->thp[r] == H_HUGE)
				return r;
		break;
	}
	return ~0ULL;
}

u64 tlbs_restore_pick(struct tlbs_mmu *u)
{
	u64 i, best, r;

	best = u->nsplit - 1;		/* the last split */
	if (u->split_order == TLBS_SPLIT_HEAT)
		for (i = u->nsplit - 1; i-- > 0;)
			if (heat_of(u, u->split_stack[i]) >
			    heat_of(u, u->split_stack[best]))
				best = i;
	r = u->split_stack[best];
	memmove(&u->split_stack[best], &u->split_stack[best + 1],
		(u->nsplit - best - 1) * sizeof(*u->split_stack));
	u->nsplit--;
	return r;
}
