// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Address spaces of one run and the per-access translation.
 *
 * The workload addresses bytes [0, size). Natively that is the virtual
 * address. In a VM it is the guest virtual address; the guest maps it to
 * the same guest-physical huge region (the guest's THP), and, where the
 * guest maps small pages, scatters the base pages inside the region as a
 * buddy allocator would. The host maps GPA to HVA = GPA + hva_offset (one
 * memslot); a stage-2 mapping is huge only if the host region is a THP and
 * GPA and HVA are congruent modulo the huge page size (KVM's rule).
 *
 * Host regions start untouched; the first access faults one in, as a THP if
 * host THP is on, the region lies wholly inside the memslot and the limit
 * allows another huge page, else as base pages.
 */
#include <stdlib.h>
#include <string.h>

#include "tlbsim.h"
#include "tlb_fast.h"

enum { H_UNTOUCHED = 0, H_SMALL = 1, H_HUGE = 2, H_OUTSIDE = 3 };

/* Accesses per batch in batch mode (see tlbs_mmu_run()). */
#define BATCH 512

/*
 * Every key this run can make has a page number below the address space's
 * end at its page size (GVA, GPA and native addresses all lie in
 * [0, regions x huge page)); fully associative groups holding only keys
 * of such small ranges index them directly.
 */
static void index_groups(struct tlbs_mmu *u)
{
	struct tlbs_machine *m = u->m;
	u32 bs = m->base_shift, hs = m->huge_shift, i;
	u64 vpn_end[TLBS_NCLASS] = { u->nregions << (hs - bs), u->nregions };
	u64 bound = 0, b;
	int c;

	for (i = 0; i < m->ngroups; i++) {
		for (c = 0; c < TLBS_NCLASS; c++) {
			if (!(m->g[i].classes & (1u << c)))
				continue;
			b = tlbs_key(TLBS_SP_COMBINED, c, vpn_end[c]);
			bound = b > bound ? b : bound;
		}
		tlbs_group_index_direct(&m->g[i], bound);
		bound = 0;
	}
	for (c = 0; c < TLBS_NCLASS; c++)
		u->only[c] = m->pathlen[c] == 1 ? &m->g[m->path[c][0]] : NULL;
	u->batch = u->only[TLBS_BASE] && u->only[TLBS_HUGE];
	u->list[TLBS_BASE] = 0;
	u->list[TLBS_HUGE] = u->only[TLBS_HUGE] != u->only[TLBS_BASE];
}

int tlbs_mmu_init(struct tlbs_mmu *u, struct tlbs_machine *m,
		  enum tlbs_model model, u64 size, int thp1, int thp2,
		  u64 hva_offset)
{
	u64 hs = m->huge_shift, hmask = (1ULL << hs) - 1, r, first, last;

	memset(u, 0, sizeof(*u));
	u->m = m;
	u->model = model;
	u->size = size;
	u->thp1 = thp1;
	u->thp2 = model == TLBS_NATIVE ? 0 : thp2;
	u->hva_offset = hva_offset;
	u->rng = 0x243F6A8885A308D3ULL;
	u->split_order = TLBS_SPLIT_HIGH;
	if (!size)
		return -1;
	u->nregions = (size + hmask) >> hs;
	u->huge1 = calloc(u->nregions, 1);
	if (!u->huge1)
		return -1;
	for (r = 0; r < u->nregions; r++)
		u->huge1[r] = thp1 && ((r + 1) << hs) <= size;
	/* host regions overlapping HVA [hva_offset, hva_offset + size) */
	first = hva_offset >> hs;
	last = (hva_offset + size - 1) >> hs;
	u->host_first = first;
	u->nhost = last - first + 1;
	u->thp = calloc(u->nhost, 1);
	u->split_by_limiter = calloc(u->nhost, 1);
	u->split_stack = calloc(u->nhost, sizeof(*u->split_stack));
	if (!u->thp || !u->split_by_limiter || !u->split_stack)
		return -1;
	for (r = 0; r < u->nhost; r++) {
		u64 lo = (first + r) << hs, hi = lo + hmask;

		if (lo < hva_offset || hi > hva_offset + size - 1)
			u->thp[r] = H_OUTSIDE;	/* partial: never a THP */
	}
	u->limit = ~0ULL;
	for (r = 0; r < TLBS_NCLASS; r++) {
		/* two keys per access at most (stage 1 and stage 2), and
		 * the slot emit() may write without counting */
		u->keys[r] = malloc((2 * BATCH + 1) * sizeof(*u->keys[r]));
		if (!u->keys[r])
			return -1;
	}
	index_groups(u);
	return 0;
}

void tlbs_mmu_free(struct tlbs_mmu *u)
{
	free(u->huge1);
	free(u->thp);
	free(u->split_by_limiter);
	free(u->split_stack);
	free(u->keys[0]);
	free(u->keys[1]);
	tlbs_heat_free(u);
	u->huge1 = u->thp = u->split_by_limiter = NULL;
	u->split_stack = NULL;
	u->keys[0] = u->keys[1] = NULL;
}

u64 tlbs_mmu_total_pages(const struct tlbs_mmu *u)
{
	u64 r, n = 0;

	for (r = 0; r < u->nhost; r++)
		n += u->thp[r] != H_OUTSIDE;
	return n;
}

/*
 * The per-access path reads the run's constants from a local copy, so that
 * its stores (keys, counters, all u64) cannot make the compiler reload
 * them from the structs after each one.
 */
struct xctx {
	u32 bs, hs;
	u64 pmask;		/* base pages per huge region - 1 */
	u64 hva_offset, host_first;
	int aligned;		/* GPA and HVA congruent modulo huge */
	int all_huge1;		/* every region's stage 1 is huge */
	const unsigned char *huge1;
	unsigned char *thp;
	/* a key of class c: (address >> sh[c]) << 6 | space tag | tag[c] */
	u32 sh[TLBS_NCLASS];
	/* same-page memo (see same_page()) */
	u64 last, skipped;
};

static inline int aligned2(const struct tlbs_mmu *u)
{
	return !(u->hva_offset & ((1ULL << u->m->huge_shift) - 1));
}

static void xctx_init(struct xctx *x, struct tlbs_mmu *u)
{
	memset(x, 0, sizeof(*x));
	x->bs = u->m->base_shift;
	x->hs = u->m->huge_shift;
	x->pmask = (1ULL << (x->hs - x->bs)) - 1;
	x->hva_offset = u->hva_offset;
	x->host_first = u->host_first;
	x->aligned = aligned2(u);
	x->all_huge1 = u->thp1 && !(u->size & ((1ULL << x->hs) - 1));
	x->huge1 = u->huge1;
	x->thp = u->thp;
	x->sh[TLBS_BASE] = x->bs;
	x->sh[TLBS_HUGE] = x->hs;
	x->last = ~0ULL;
}

/* The key of a translation of class @c of address @a in space @sp. */
static inline u64 key_of(const struct xctx *x, enum tlbs_space sp,
			 enum tlbs_class c, u64 a)
{
	return tlbs_key(sp, c, a >> x->sh[c]);
}

/* Guest-physical address of workload offset @off, in huge region @r. */
static inline u64 gpa_of(const struct xctx *x, u64 off, u64 r)
{
	u64 idx;

	if (x->huge1[r])
		return off;
	/* base pages scattered inside the region: a bijection on the index */
	idx = (off >> x->bs) & x->pmask;
	idx = ((idx ^ (r * 0x5bd1e995ULL)) * 0x9E3779B1ULL) & x->pmask;
	return (r << x->hs) | (idx << x->bs) | (off & ((1ULL << x->bs) - 1));
}

static inline unsigned char fault_in(struct tlbs_mmu *u, u64 hi)
{
	unsigned char st = H_SMALL;

	if (u->thp2 && u->huge_in_use < u->limit) {
		st = H_HUGE;
		u->huge_in_use++;
	}
	u->thp[hi] = st;
	return st;
}

static inline u64 host_region(const struct xctx *x, u64 gpa)
{
	return ((gpa + x->hva_offset) >> x->hs) - x->host_first;
}

/*
 * Size class of the stage-2 mapping of @gpa, in guest region @r; faults
 * the host region in at first touch. @aligned is x->aligned, a constant
 * where the caller is specialised: then the host region is @r itself.
 */
static inline __attribute__((always_inline)) enum tlbs_class
class2(struct tlbs_mmu *u, const struct xctx *x, u64 gpa, u64 r,
       int aligned)
{
	u64 hi = aligned ? r : host_region(x, gpa);
	unsigned char st = x->thp[hi];

	if (__builtin_expect(st == H_UNTOUCHED, 0))
		st = fault_in(u, hi);
	/* no branch on the state: split and huge regions mix at random */
	return (enum tlbs_class)((st == H_HUGE) & aligned);
}

enum tlbs_class tlbs_mmu_stage2_class(const struct tlbs_mmu *u, u64 off)
{
	struct xctx x;
	u64 gpa;

	xctx_init(&x, (struct tlbs_mmu *)u);
	gpa = gpa_of(&x, off, off >> x.hs);
	return (u->thp[host_region(&x, gpa)] == H_HUGE && x.aligned) ?
	       TLBS_HUGE : TLBS_BASE;
}

u64 tlbs_mmu_host_region(const struct tlbs_mmu *u, u64 off)
{
	struct xctx x;

	xctx_init(&x, (struct tlbs_mmu *)u);
	return host_region(&x, gpa_of(&x, off, off >> x.hs));
}

/* Look a translation up along its class's path; fill on a miss. */
static inline __attribute__((always_inline)) void
translate(struct tlbs_mmu *u, enum tlbs_class c, u64 key)
{
	struct tlbs_machine *m = u->m;
	u32 n, i, j;

	if (u->only[c]) {	/* one group for the size: the common case */
		u64 miss = !tlbs_group_access_fast(u->only[c], key);

		u->walks[c] += miss;
		u->walks[TLBS_WALK_S2_BASE] += miss & tlbs_key_s2_base(key);
		return;
	}
	n = m->pathlen[c];
	for (i = 0; i < n; i++) {
		if (tlbs_group_lookup_fast(&m->g[m->path[c][i]], key)) {
			if (i) {
				u->l1_misses++;
				for (j = 0; j < i; j++)
					tlbs_group_fill(&m->g[m->path[c][j]],
							key);
			}
			return;
		}
	}
	u->walks[c]++;
	u->walks[TLBS_WALK_S2_BASE] += tlbs_key_s2_base(key);
	for (i = 0; i < n; i++)
		tlbs_group_fill(&m->g[m->path[c][i]], key);
}

/* How run_model() hands on the keys it makes. */
enum emit_mode {
	EMIT_TRANSLATE,		/* look up now, access by access */
	EMIT_ONE_LIST,		/* batch mode, one group for both classes */
	EMIT_TWO_LISTS,		/* batch mode, a group per class */
};

/* Key lists of a batch: where the next base / huge key goes. */
struct lists {
	u64 *base, *huge;
};

/*
 * Translate now, or in batch mode append the key to its group's list (run
 * by tlbs_group_run() at the end of the batch). With two lists the key is
 * written to both and only its class's list advances: no branch on the
 * class (the lists have a slot to spare for the write that does not count).
 */
static inline __attribute__((always_inline)) void
emit(struct tlbs_mmu *u, struct lists *l, enum emit_mode mode,
     enum tlbs_class c, u64 key)
{
	switch (mode) {
	case EMIT_TRANSLATE:
		translate(u, c, key);
		break;
	case EMIT_ONE_LIST:
		*l->base++ = key;
		break;
	case EMIT_TWO_LISTS:
		if (__builtin_constant_p(c)) {	/* a specialised caller */
			if (c == TLBS_HUGE)
				*l->huge++ = key;
			else
				*l->base++ = key;
			break;
		}
		/* hide that @c is 0 or 1, or the compiler branches on it */
		__asm__("" : "+r"(c));
		*l->base = key;
		*l->huge = key;
		l->base += 1 - c;
		l->huge += c;
		break;
	}
}

/*
 * An access to the base page of the access before it needs no lookup: that
 * translation's entries were just hit or filled and nothing ran in between
 * (limits change only between calls), so they hit again, and a hit on the
 * most recent entry changes no replacement state. Count the hits only, in
 * the first group of each translation's path; the classes are those of
 * the page now (it was touched, so nothing faults in).
 */
static __attribute__((noinline)) void memo_flush(struct tlbs_mmu *u,
						 struct xctx *x)
{
	struct tlbs_machine *m = u->m;
	u64 a = x->last << x->bs;
	enum tlbs_class c1, c2;

	if (!x->skipped)
		return;
	c1 = x->huge1[a >> x->hs];
	if (u->model != TLBS_NATIVE) {
		c2 = tlbs_mmu_stage2_class(u, a);
		if (u->model == TLBS_VZ)
			m->g[m->path[c2][0]].hits += x->skipped;
		else
			c1 = c1 < c2 ? c1 : c2;
	}
	m->g[m->path[c1][0]].hits += x->skipped;
	x->skipped = 0;
}

static inline __attribute__((always_inline)) int
same_page(struct tlbs_mmu *u, struct xctx *x, u64 a)
{
	u64 p = a >> x->bs;

	if (p == x->last) {
		x->skipped++;
		return 1;
	}
	if (__builtin_expect(x->skipped != 0, 0))
		memo_flush(u, x);
	x->last = p;
	return 0;
}

/*
 * The keys of @n accesses. @aligned and @huge1 are x->aligned and
 * x->all_huge1 as constants (the caller picks the specialisation): when
 * GPA and HVA are congruent the host region is the guest's, and when every
 * stage-1 mapping is huge its class and GPA need no lookup.
 */
static inline __attribute__((always_inline)) void
run_model(struct tlbs_mmu *u, struct xctx *xp, const u64 *off, u32 n,
	  struct lists *lp, enum emit_mode batched, int aligned, int huge1)
{
	/*
	 * Work on copies whose address does not escape, so that the key
	 * stores (u64, like the memo's fields) need not be assumed to change
	 * them: they stay in registers.
	 */
	struct xctx xc = *xp, *x = &xc;
	struct lists lc = *lp, *l = &lc;
	u32 hs = x->hs, k;

	switch (u->model) {
	case TLBS_NATIVE:
		for (k = 0; k < n; k++) {
			u64 a = off[k];
			enum tlbs_class c;

			if (same_page(u, x, a))
				continue;
			c = x->huge1[a >> hs];
			emit(u, l, batched, c, key_of(x, TLBS_SP_NATIVE, c, a));
		}
		break;
	case TLBS_VZ:
		for (k = 0; k < n; k++) {
			u64 a = off[k], r = a >> hs, g;
			enum tlbs_class c1, c2;

			if (same_page(u, x, a))
				continue;
			c1 = huge1 ? TLBS_HUGE : (enum tlbs_class)x->huge1[r];
			g = huge1 ? a : gpa_of(x, a, r);
			c2 = class2(u, x, g, r, aligned);
			emit(u, l, batched, c1, key_of(x, TLBS_SP_STAGE1, c1, a));
			emit(u, l, batched, c2, key_of(x, TLBS_SP_STAGE2, c2, g));
		}
		break;
	case TLBS_COMBINED:
		for (k = 0; k < n; k++) {
			u64 a = off[k], r = a >> hs, g;
			enum tlbs_class c1, c2, c;

			if (same_page(u, x, a))
				continue;
			c1 = huge1 ? TLBS_HUGE : (enum tlbs_class)x->huge1[r];
			g = huge1 ? a : gpa_of(x, a, r);
			c2 = class2(u, x, g, r, aligned);
			c = c1 < c2 ? c1 : c2;
			emit(u, l, batched, c, key_of(x, TLBS_SP_COMBINED, c, a));
		}
		break;
	}
	*xp = xc;
	*lp = lc;
}

static inline __attribute__((always_inline)) void
run_keys(struct tlbs_mmu *u, struct xctx *x, const u64 *off, u32 n,
	 struct lists *l, enum emit_mode batched)
{
	if (x->aligned && x->all_huge1)
		run_model(u, x, off, n, l, batched, 1, 1);
	else if (x->aligned)
		run_model(u, x, off, n, l, batched, 1, 0);
	else
		run_model(u, x, off, n, l, batched, 0, 0);
}

/*
 * In batch mode each group's hits and misses depend only on its own keys
 * in order, and nothing else changes the groups within a call (limits,
 * splits and shoot-downs happen between calls): the keys of up to BATCH
 * accesses are listed per group, then each list runs through its group.
 * First touches (host faults) still happen in access order. Same results
 * as translating access by access (test_mmu compares the two).
 */
void tlbs_mmu_run(struct tlbs_mmu *u, const u64 *off, u32 n)
{
	struct xctx x;
	struct lists l = { NULL, NULL };
	u32 m;

	xctx_init(&x, u);
	u->accesses += n;
	if (!u->batch) {
		run_keys(u, &x, off, n, &l, EMIT_TRANSLATE);
		memo_flush(u, &x);
		return;
	}
	for (; n; off += m, n -= m) {
		m = n < BATCH ? n : BATCH;
		l.base = u->keys[TLBS_BASE];
		l.huge = u->keys[TLBS_HUGE];
		if (u->list[TLBS_HUGE]) {
			run_keys(u, &x, off, m, &l, EMIT_TWO_LISTS);
			tlbs_group_run(u->only[TLBS_HUGE], u->keys[TLBS_HUGE],
				       (u32)(l.huge - u->keys[TLBS_HUGE]),
				       u->walks);
		} else {
			run_keys(u, &x, off, m, &l, EMIT_ONE_LIST);
		}
		tlbs_group_run(u->only[TLBS_BASE], u->keys[TLBS_BASE],
			       (u32)(l.base - u->keys[TLBS_BASE]), u->walks);
	}
	memo_flush(u, &x);
}

static void invalidate_all(struct tlbs_mmu *u, enum tlbs_class c, u64 key)
{
	struct tlbs_machine *m = u->m;
	u32 i;

	for (i = 0; i < m->pathlen[c]; i++)
		tlbs_group_invalidate(&m->g[m->path[c][i]], key);
}

/*
 * Host region @hi changed size: drop the TLB entries that mapped it, as the
 * MMU notifier does (the huge stage-2 entry on a split; the base-page
 * entries on a collapse). The guest maps GPA region == GVA region.
 */
static void shoot_down(struct tlbs_mmu *u, u64 hi, int was_huge)
{
	u32 bs = u->m->base_shift, hs = u->m->huge_shift;
	u64 gr, p, npages = 1ULL << (hs - bs);
	enum tlbs_space sp = u->model == TLBS_VZ ? TLBS_SP_STAGE2
						 : TLBS_SP_COMBINED;

	if (!aligned2(u) || u->model == TLBS_NATIVE)
		return;	/* stage 2 was never huge */
	gr = (((hi + u->host_first) << hs) - u->hva_offset) >> hs;
	if (was_huge) {
		invalidate_all(u, TLBS_HUGE, tlbs_key(sp, TLBS_HUGE, gr));
		return;
	}
	/* every base page of the region: stage-2 entries are keyed by GPA,
	 * combined ones by GVA; both cover the same region number */
	for (p = 0; p < npages; p++)
		invalidate_all(u, TLBS_BASE, tlbs_key(sp, TLBS_BASE,
						      (gr << (hs - bs)) | p));
}

void tlbs_mmu_apply_limit(struct tlbs_mmu *u, u64 limit)
{
	u64 r;

	u->limit = limit;
	while (u->huge_in_use > limit) {
		r = tlbs_split_pick(u);
		if (r == ~0ULL)
			break;
		u->thp[r] = H_SMALL;
		u->huge_in_use--;
		u->splits++;
		if (!u->split_by_limiter[r]) {
			u->split_by_limiter[r] = 1;
			u->split_stack[u->nsplit++] = r;
		}
		shoot_down(u, r, 1);
	}
	/* raising the limit lets the split regions collapse again, last
	 * split first or hottest first (khugepaged's work, done at once
	 * here) */
	while (u->huge_in_use < limit && u->nsplit) {
		r = tlbs_restore_pick(u);
		u->split_by_limiter[r] = 0;
		if (u->thp[r] != H_SMALL)
			continue;
		u->thp[r] = H_HUGE;
		u->huge_in_use++;
		u->restores++;
		shoot_down(u, r, 0);
	}
}

double tlbs_mmu_refill_time_ns(const struct tlbs_mmu *u)
{
	const struct tlbs_machine *m = u->m;
	u64 base = u->walks[TLBS_BASE], huge = u->walks[TLBS_HUGE];
	u64 host = u->walks[TLBS_WALK_S2_BASE];

	if (u->model != TLBS_VZ)
		return (double)(base + huge) * m->refill_ns;
	return (double)(base - host) * m->guest_refill_ns +
	       (double)host * m->host_refill_ns +
	       (double)huge * m->huge_refill_ns;
}

double tlbs_mmu_time_ns(const struct tlbs_mmu *u)
{
	const struct tlbs_machine *m = u->m;

	return (double)u->accesses * m->access_ns +
	       (double)u->l1_misses * m->l1_miss_ns +
	       tlbs_mmu_refill_time_ns(u);
}
