// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Workloads: the stream of data addresses a program sends to the TLB.
 *
 *   chase:size=S[,hot_pages=N,hot_frac=F,hot_page=B,seed=X]
 *       random pointer chase over S bytes; with probability F the next
 *       node lies in one of N hot blocks of B bytes spread evenly over S
 *       (the nodes every step comes back to), else anywhere in S
 *   mcf[:...]   chase with the mcf-like defaults (see docs/simulator.md)
 *   seq:size=S[,stride=B]          a sequential stream, wrapping
 *   hotcold:size=S,hot=H[,hot_frac=F,hot_at=A,drift=D,drift_every=N]
 *       a contiguous hot set of H bytes from offset A (default 0) gets F
 *       of the accesses, the rest go uniformly anywhere in S; with drift,
 *       the hot set moves up by D bytes every N accesses (default 1M),
 *       wrapping around the end of S
 *   phases:size=S,period=N[,hot_pages=..]
 *       alternates every N accesses between the chase and a sequential
 *       stream over S
 *   trace:PATH   replay of a recorded trace (see trace.c), looping
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tlbsim.h"

/* mcf-like defaults: see docs/simulator.md, "The mcf-like workload". */
#define MCF_SIZE (1600ULL << 20)
#define MCF_HOT_PAGES 1000
#define MCF_HOT_FRAC 0.815
#define MCF_HOT_PAGE (16ULL << 10)

int tlbs_workload_parse(struct tlbs_workload *w, const char *spec,
			u32 huge_shift, char *err, size_t errlen)
{
	char buf[1024], *args, *tok, *save;

	memset(w, 0, sizeof(*w));
	w->rng = 0x853C49E6748FEA9BULL;
	w->stride = 64;
	w->hot_page_bytes = MCF_HOT_PAGE;
	if (!strncmp(spec, "trace:", 6)) {
		strcpy(w->kind, "trace");
		snprintf(w->trace_path, sizeof(w->trace_path), "%s", spec + 6);
		w->trace = tlbs_trace_open_regions(w->trace_path, huge_shift,
						   err, errlen);
		if (!w->trace)
			return -1;
		w->size = tlbs_trace_span(w->trace);
		return 0;
	}
	snprintf(buf, sizeof(buf), "%s", spec);
	args = strchr(buf, ':');
	if (args)
		*args++ = 0;
	if (!strcmp(buf, "mcf")) {
		strcpy(w->kind, "chase");
		w->size = MCF_SIZE;
		w->hot_pages = MCF_HOT_PAGES;
		w->hot_frac = MCF_HOT_FRAC;
	} else if (!strcmp(buf, "chase") || !strcmp(buf, "seq") ||
		   !strcmp(buf, "hotcold") || !strcmp(buf, "phases")) {
		strcpy(w->kind, buf);
	} else {
		snprintf(err, errlen, "workload '%s': unknown kind '%s' (use "
			 "mcf, chase, seq, hotcold, phases or trace:PATH)",
			 spec, buf);
		return -1;
	}
	for (tok = args ? strtok_r(args, ",", &save) : NULL; tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *val = strchr(tok, '=');
		u64 v = 0;
		int bad;

		if (!val) {
			snprintf(err, errlen, "workload '%s': '%s' is not "
				 "key=value", spec, tok);
			return -1;
		}
		*val++ = 0;
		if (!strcmp(tok, "hot_frac")) {
			char *end;

			errno = 0;
			w->hot_frac = strtod(val, &end);
			bad = errno || *end || w->hot_frac < 0 ||
			      w->hot_frac > 1;
		} else {
			bad = tlbs_parse_size(val, &v);
			if (!strcmp(tok, "size"))
				w->size = v;
			else if (!strcmp(tok, "hot_pages"))
				w->hot_pages = v;
			else if (!strcmp(tok, "hot_page"))
				w->hot_page_bytes = v;
			else if (!strcmp(tok, "hot"))
				w->hot_bytes = v;
			else if (!strcmp(tok, "hot_at"))
				w->hot_at = v;
			else if (!strcmp(tok, "drift"))
				w->drift = v;
			else if (!strcmp(tok, "drift_every"))
				w->drift_every = v;
			else if (!strcmp(tok, "stride"))
				w->stride = v;
			else if (!strcmp(tok, "period"))
				w->period = v;
			else if (!strcmp(tok, "seed"))
				w->rng ^= v * 0x9E3779B97F4A7C15ULL;
			else {
				snprintf(err, errlen, "workload '%s': unknown "
					 "key '%s'", spec, tok);
				return -1;
			}
		}
		if (bad) {
			snprintf(err, errlen, "workload '%s': %s=%s is not a "
				 "valid value", spec, tok, val);
			return -1;
		}
	}
	if (!w->rng)
		w->rng = 1;
	if (w->size < 4096 || w->size > (1ULL << 46)) {
		snprintf(err, errlen, "workload '%s': size must be 4K..64T",
			 spec);
		return -1;
	}
	if (!w->stride || w->stride >= w->size) {
		snprintf(err, errlen, "workload '%s': stride must be 1..size",
			 spec);
		return -1;
	}
	if (!strcmp(w->kind, "hotcold")) {
		if (!w->hot_bytes || w->hot_bytes > w->size ||
		    w->hot_at > w->size - w->hot_bytes) {
			snprintf(err, errlen, "workload '%s': hotcold needs "
				 "hot=BYTES, hot_at + hot at most size", spec);
			return -1;
		}
		if (!args || !strstr(spec, "hot_frac="))
			w->hot_frac = 0.9;
		if (!w->drift_every)
			w->drift_every = 1000000;
		w->drift %= w->size;
	} else if (w->drift || w->drift_every) {
		snprintf(err, errlen, "workload '%s': drift and drift_every "
			 "are for hotcold only", spec);
		return -1;
	}
	if (w->hot_pages && (!w->hot_page_bytes ||
	    (w->hot_page_bytes & (w->hot_page_bytes - 1)) ||
	    w->hot_page_bytes > (1ULL << 32) ||
	    w->hot_pages * w->hot_page_bytes > w->size ||
	    (w->size / w->hot_page_bytes) % 2654435761ULL == 0)) {
		snprintf(err, errlen, "workload '%s': hot_page must be a power "
			 "of two up to 4G and hot_pages x hot_page at most "
			 "size",
			 spec);
		return -1;
	}
	if (!strcmp(w->kind, "phases") && !w->period) {
		snprintf(err, errlen, "workload '%s': phases needs period=N",
			 spec);
		return -1;
	}
	w->hot_thresh = (u64)(w->hot_frac * 4294967296.0);
	if (w->hot_pages) {
		u64 i, nblocks = w->size / w->hot_page_bytes;

		w->hot_base = malloc(w->hot_pages * sizeof(*w->hot_base));
		if (!w->hot_base) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		/*
		 * Hot block i is block (i x prime) mod the block count: a
		 * bijection (the count is never a multiple of the prime), so
		 * the hot blocks are distinct, scattered, in every TLB set.
		 */
		for (i = 0; i < w->hot_pages; i++)
			w->hot_base[i] = (u64)(((unsigned __int128)i *
				2654435761ULL) % nblocks) * w->hot_page_bytes;
	}
	return 0;
}

void tlbs_workload_free(struct tlbs_workload *w)
{
	tlbs_trace_free(w->trace);
	free(w->hot_base);
	w->trace = NULL;
	w->hot_base = NULL;
}

/*
 * One draw per access: its high 32 bits choose hot or cold, its low 32
 * bits the hot block (and, from the fraction left over, the offset in it)
 * or the cold address (scaled to the footprint: a granule of size / 2^32
 * bytes, 0.4 bytes for mcf's 1.6 GB). The generator state and the table
 * live in locals: stores to @off could alias them, and reloading the state
 * would add a store-to-load delay to the generator's chain.
 */
static void fill_chase(struct tlbs_workload *w, u64 *off, u32 n)
{
	u64 size = w->size, hp = w->hot_pages, thresh = w->hot_thresh;
	u64 rng = w->rng, r, lo, prod, hot, cold;
	const u64 *hot_base = w->hot_base;
	u32 hb_shift, k;

	if (!hp) {
		for (k = 0; k < n; k++) {
			r = tlbs_rand(&rng);
			off[k] = (((u64)(u32)r * size) >> 32) & ~7ULL;
		}
		w->rng = rng;
		return;
	}
	/* x hot_page_bytes / 2^32: a power of two up to 2^32 (checked) */
	hb_shift = 32 - (u32)__builtin_ctzll(w->hot_page_bytes);
	/* both candidates, then a select: no unpredictable branch */
	for (k = 0; k < n; k++) {
		r = tlbs_rand(&rng);
		lo = (u32)r;
		prod = lo * hp;
		hot = hot_base[prod >> 32] + ((u32)prod >> hb_shift);
		cold = (lo * size) >> 32;
		off[k] = ((r >> 32) < thresh ? hot : cold) & ~7ULL;
	}
	w->rng = rng;
}

static void fill_seq(struct tlbs_workload *w, u64 *off, u32 n)
{
	u32 k;

	for (k = 0; k < n; k++) {
		off[k] = w->pos;
		w->pos += w->stride;
		if (w->pos >= w->size)
			w->pos = 0;
	}
}

static void fill_hotcold_run(struct tlbs_workload *w, u64 *off, u32 n)
{
	u64 r, rng = w->rng, hot = w->hot_bytes, size = w->size;
	u64 thresh = w->hot_thresh, at = w->hot_at, o;
	u32 k;

	for (k = 0; k < n; k++) {
		r = tlbs_rand(&rng);
		o = (r >> 32) < thresh ? at + tlbs_rand_below(&rng, hot) :
		    tlbs_rand_below(&rng, size);
		off[k] = (o >= size ? o - size : o) & ~7ULL;
	}
	w->rng = rng;
}

/* In runs between two moves of the hot set (none without drift). */
static void fill_hotcold(struct tlbs_workload *w, u64 *off, u32 n)
{
	u32 k, m;

	if (!w->drift) {
		fill_hotcold_run(w, off, n);
		return;
	}
	for (k = 0; k < n; k += m) {
		m = n - k;
		if (m > w->drift_every - w->since_drift)
			m = (u32)(w->drift_every - w->since_drift);
		fill_hotcold_run(w, off + k, m);
		w->since_drift += m;
		if (w->since_drift == w->drift_every) {
			w->since_drift = 0;
			w->hot_at += w->drift;
			if (w->hot_at >= w->size)
				w->hot_at -= w->size;
		}
	}
}

u32 tlbs_workload_fill(struct tlbs_workload *w, u64 *off, u32 n)
{
	u32 k, m;

	switch (w->kind[0]) {
	case 'c':
		fill_chase(w, off, n);
		return n;
	case 's':
		fill_seq(w, off, n);
		return n;
	case 'h':
		fill_hotcold(w, off, n);
		return n;
	case 'p':
		for (k = 0; k < n; k += m) {
			m = n - k;
			if (m > w->period - w->in_phase)
				m = (u32)(w->period - w->in_phase);
			if (w->phase)
				fill_seq(w, off + k, m);
			else
				fill_chase(w, off + k, m);
			w->in_phase += m;
			if (w->in_phase == w->period) {
				w->in_phase = 0;
				w->phase ^= 1;
			}
		}
		return n;
	case 't':
		for (k = 0; k < n; k += m) {
			m = tlbs_trace_read(w->trace, off + k, n - k);
			if (!m) {
				w->trace_loops++;
				if (tlbs_trace_rewind(w->trace))
					break;
			}
		}
		return k;
	}
	return 0;
}
