// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * The compact trace format (read through zlib, so a .gz file works as is):
 *
 *   header  "TLBSTRC1", u32 page_shift (little endian), u32 flags (0)
 *   record  varint v; page += unzigzag(v >> 1); the access repeats
 *           1 + varint times if (v & 1), else once
 *
 * A trace holds page numbers only: within a page every access hits the same
 * TLB entry, so the page sequence decides every hit and miss. Consecutive
 * accesses to one page become one record with a repeat count.
 *
 * On replay the reader packs the trace's distinct huge regions (size given
 * by the machine) next to each other from 0, keeping each address's offset
 * inside its region: the layout a THP-backed heap would have, with the
 * program's scattered mappings (heap, libraries, stack) made contiguous.
 */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "tlbsim.h"

#define MAGIC "TLBSTRC1"

struct tlbs_trace_writer {
	FILE *f;
	u32 page_shift;
	u64 last, cur, rep;
	int have;
	u64 accesses, records;
};

static int put_varint(FILE *f, u64 v)
{
	unsigned char b[10];
	int n = 0;

	do {
		b[n] = v & 0x7f;
		v >>= 7;
		if (v)
			b[n] |= 0x80;
		n++;
	} while (v);
	return fwrite(b, 1, n, f) == (size_t)n ? 0 : -1;
}

struct tlbs_trace_writer *tlbs_trace_create(FILE *f, u32 page_shift)
{
	struct tlbs_trace_writer *t = calloc(1, sizeof(*t));
	unsigned char h[8] = { page_shift, 0, 0, 0, 0, 0, 0, 0 };

	if (!t)
		return NULL;
	t->f = f;
	t->page_shift = page_shift;
	if (fwrite(MAGIC, 1, 8, f) != 8 || fwrite(h, 1, 8, f) != 8) {
		free(t);
		return NULL;
	}
	return t;
}

static int flush_rec(struct tlbs_trace_writer *t)
{
	s64 d;
	u64 z;

	if (!t->have)
		return 0;
	d = (s64)(t->cur - t->last);
	z = ((u64)d << 1) ^ (u64)(d >> 63);
	t->last = t->cur;
	t->records++;
	if (put_varint(t->f, (z << 1) | (t->rep > 1)))
		return -1;
	return t->rep > 1 ? put_varint(t->f, t->rep - 1) : 0;
}

int tlbs_trace_put(struct tlbs_trace_writer *t, u64 addr)
{
	u64 page = addr >> t->page_shift;

	t->accesses++;
	if (t->have && page == t->cur) {
		t->rep++;
		return 0;
	}
	if (flush_rec(t))
		return -1;
	t->cur = page;
	t->rep = 1;
	t->have = 1;
	return 0;
}

int tlbs_trace_close(struct tlbs_trace_writer *t, u64 *accesses,
		     u64 *records)
{
	int rc = flush_rec(t);

	if (fflush(t->f))
		rc = -1;
	if (accesses)
		*accesses = t->accesses;
	if (records)
		*records = t->records;
	free(t);
	return rc;
}

struct tlbs_trace_reader {
	gzFile z;
	u32 page_shift, region_shift;
	u64 page, rep_left;
	/* region -> slot map (open addressing, keys + 1) */
	u64 *rkey;
	u32 *rslot;
	u32 rmask, nregions;
	u64 last_region, last_base;
	u64 accesses;
	unsigned char buf[65536];
	int blen, bpos;
};

static int get_byte(struct tlbs_trace_reader *t)
{
	if (t->bpos == t->blen) {
		t->blen = gzread(t->z, t->buf, sizeof(t->buf));
		t->bpos = 0;
		if (t->blen <= 0) {
			t->blen = 0;
			return -1;
		}
	}
	return t->buf[t->bpos++];
}

static int get_varint(struct tlbs_trace_reader *t, u64 *v)
{
	int c, s = 0;

	*v = 0;
	do {
		c = get_byte(t);
		if (c < 0 || s > 63)
			return -1;
		*v |= (u64)(c & 0x7f) << s;
		s += 7;
	} while (c & 0x80);
	return 0;
}

/* Next record: 1, 0 at the end, -1 if malformed. */
static int next_rec(struct tlbs_trace_reader *t, u64 *page, u64 *count)
{
	u64 v, z, r = 0;
	int c = get_byte(t);

	if (c < 0)
		return 0;
	t->bpos--;
	if (get_varint(t, &v))
		return -1;
	z = v >> 1;
	t->page += (u64)((s64)(z >> 1) ^ -(s64)(z & 1));
	if ((v & 1) && get_varint(t, &r))
		return -1;
	*page = t->page;
	*count = r + 1;
	return 1;
}

static int header(struct tlbs_trace_reader *t, char *err, size_t errlen,
		  const char *path)
{
	unsigned char h[16];

	gzrewind(t->z);
	t->blen = t->bpos = 0;
	t->page = 0;
	t->rep_left = 0;
	if (gzread(t->z, h, 16) != 16 || memcmp(h, MAGIC, 8)) {
		snprintf(err, errlen, "%s: not a tlbsim trace (magic %s)",
			 path, MAGIC);
		return -1;
	}
	t->page_shift = h[8];
	if (t->page_shift < 9 || t->page_shift > 30) {
		snprintf(err, errlen, "%s: bad page shift %u", path,
			 t->page_shift);
		return -1;
	}
	return 0;
}

static u32 *region_slot(struct tlbs_trace_reader *t, u64 region, int add)
{
	u32 i = (u32)((region * 0x9E3779B97F4A7C15ULL) >> 40) & t->rmask;

	while (t->rkey[i] && t->rkey[i] != region + 1)
		i = (i + 1) & t->rmask;
	if (!t->rkey[i]) {
		if (!add)
			return NULL;
		t->rkey[i] = region + 1;
		t->rslot[i] = t->nregions++;
	}
	return &t->rslot[i];
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

struct tlbs_trace_reader *tlbs_trace_open_regions(const char *path,
						  u32 region_shift,
						  char *err, size_t errlen)
{
	struct tlbs_trace_reader *t = calloc(1, sizeof(*t));
	u64 page, count, *sorted;
	u32 i, n;
	int rc;

	if (!t) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	t->z = gzopen(path, "rb");
	if (!t->z) {
		snprintf(err, errlen, "%s: cannot open", path);
		free(t);
		return NULL;
	}
	gzbuffer(t->z, 1 << 17);
	t->region_shift = region_shift;
	t->rmask = (1u << 16) - 1;
	t->rkey = calloc(t->rmask + 1, sizeof(*t->rkey));
	t->rslot = calloc(t->rmask + 1, sizeof(*t->rslot));
	if (!t->rkey || !t->rslot || header(t, err, errlen, path))
		goto bad;
	if (region_shift < t->page_shift) {
		snprintf(err, errlen, "%s: pages of the trace (2^%u) larger "
			 "than its regions (2^%u: the machine's huge page)",
			 path, t->page_shift, region_shift);
		goto bad;
	}
	/* pass 1: count accesses, collect the distinct regions */
	while ((rc = next_rec(t, &page, &count)) == 1) {
		t->accesses += count;
		if (t->nregions > t->rmask / 2) {
			snprintf(err, errlen, "%s: more than %u distinct huge "
				 "regions", path, t->rmask / 2);
			goto bad;
		}
		region_slot(t, page >> (region_shift - t->page_shift), 1);
	}
	if (rc < 0 || !t->accesses) {
		snprintf(err, errlen, "%s: %s", path,
			 rc < 0 ? "truncated or corrupt record" : "empty trace");
		goto bad;
	}
	/* slots in address order, so the packed layout keeps the order */
	n = t->nregions;
	sorted = malloc(n * sizeof(*sorted));
	if (!sorted)
		goto bad;
	for (i = 0, n = 0; i <= t->rmask; i++)
		if (t->rkey[i])
			sorted[n++] = t->rkey[i] - 1;
	qsort(sorted, n, sizeof(*sorted), cmp_u64);
	for (i = 0; i < n; i++)
		*region_slot(t, sorted[i], 0) = i;
	free(sorted);
	if (header(t, err, errlen, path))
		goto bad;
	t->last_region = ~0ULL;
	return t;
bad:
	tlbs_trace_free(t);
	return NULL;
}

struct tlbs_trace_reader *tlbs_trace_open(const char *path, char *err,
					  size_t errlen)
{
	return tlbs_trace_open_regions(path, 21, err, errlen);
}

u32 tlbs_trace_read(struct tlbs_trace_reader *t, u64 *addr, u32 n)
{
	u32 k = 0, ps = t->page_shift, rs = t->region_shift;
	u64 page, count;

	while (k < n) {
		if (!t->rep_left) {
			if (next_rec(t, &page, &count) != 1)
				break;
			t->rep_left = count;
			if ((page >> (rs - ps)) != t->last_region) {
				t->last_region = page >> (rs - ps);
				t->last_base = (u64)*region_slot(
					t, t->last_region, 0) << rs;
			}
		}
		addr[k++] = t->last_base |
			    ((t->page << ps) & ((1ULL << rs) - 1));
		t->rep_left--;
	}
	return k;
}

int tlbs_trace_rewind(struct tlbs_trace_reader *t)
{
	char err[64];

	return header(t, err, sizeof(err), "trace");
}

u64 tlbs_trace_span(const struct tlbs_trace_reader *t)
{
	return (u64)t->nregions << t->region_shift;
}

u64 tlbs_trace_accesses(const struct tlbs_trace_reader *t)
{
	return t->accesses;
}

void tlbs_trace_free(struct tlbs_trace_reader *t)
{
	if (!t)
		return;
	if (t->z)
		gzclose(t->z);
	free(t->rkey);
	free(t->rslot);
	free(t);
}

/* A set of page numbers (open addressing on page + 1, grown at half). */
struct page_set {
	u64 *key;
	u64 mask, n;
};

static int page_set_add(struct page_set *ps, u64 page)
{
	u64 i, k = page + 1, *old = ps->key, oldsize = ps->mask + 1;

	if (!old || 2 * (ps->n + 1) > oldsize) {
		u64 size = old ? 2 * oldsize : 1 << 16;

		ps->key = calloc(size, sizeof(*ps->key));
		if (!ps->key) {
			ps->key = old;
			return -1;
		}
		ps->mask = size - 1;
		ps->n = 0;
		for (i = 0; old && i < oldsize; i++)
			if (old[i])
				page_set_add(ps, old[i] - 1);
		free(old);
	}
	for (i = (k * 0x9E3779B97F4A7C15ULL) >> 40 & ps->mask; ps->key[i];
	     i = (i + 1) & ps->mask)
		if (ps->key[i] == k)
			return 0;
	ps->key[i] = k;
	ps->n++;
	return 0;
}

int tlbs_trace_regions(const char *path, u32 shift, FILE *out, char *err,
		       size_t errlen)
{
	struct tlbs_trace_reader *t = tlbs_trace_open_regions(path, shift,
							      err, errlen);
	struct page_set ps = { NULL, 0, 0 };
	u64 page, count, region, acc = 0, *first = NULL, *cnt = NULL;
	u64 *addr = NULL;
	u32 slot, i;
	int rc = -1;

	if (!t)
		return -1;
	first = calloc(t->nregions, sizeof(*first));
	cnt = calloc(t->nregions, sizeof(*cnt));
	addr = calloc(t->nregions, sizeof(*addr));
	if (!first || !cnt || !addr) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	/* the reader numbered the regions in address order */
	while (next_rec(t, &page, &count) == 1) {
		region = page >> (shift - t->page_shift);
		slot = *region_slot(t, region, 0);
		if (!cnt[slot]) {
			first[slot] = acc;
			addr[slot] = region << shift;
		}
		cnt[slot] += count;
		acc += count;
		if (page_set_add(&ps, page)) {
			snprintf(err, errlen, "out of memory");
			goto out;
		}
	}
	for (i = 0; i < t->nregions; i++)
		fprintf(out, "0x%llx %llu %llu\n", (unsigned long long)addr[i],
			(unsigned long long)first[i],
			(unsigned long long)cnt[i]);
	fprintf(out, "accesses %llu regions %u pages %llu\n",
		(unsigned long long)acc, t->nregions,
		(unsigned long long)ps.n);
	rc = 0;
out:
	free(first);
	free(cnt);
	free(addr);
	free(ps.key);
	tlbs_trace_free(t);
	return rc;
}

/*
 * valgrind --tool=lackey --trace-mem=yes prints one access per line:
 * "I  0401bd10,3" (instruction fetch), " L addr,size", " S addr,size",
 * " M addr,size" (modify: load and store of one address). Lines starting
 * "==" are valgrind's own. Data accesses only unless @with_instr. The
 * first @skip accesses (a program's start-up) are read and dropped.
 */
int tlbs_lackey_convert(FILE *in, FILE *out, u64 skip, u64 max_accesses,
			int with_instr, u64 *accesses, u64 *records)
{
	struct tlbs_trace_writer *w = tlbs_trace_create(out, 12);
	char line[256];
	int rc = 0;

	if (!w)
		return -1;
	while (fgets(line, sizeof(line), in)) {
		char *p = line, kind;
		u64 a;

		if (p[0] == '=')
			continue;
		while (*p == ' ')
			p++;
		kind = *p;
		if (kind != 'L' && kind != 'S' && kind != 'M' &&
		    !(kind == 'I' && with_instr))
			continue;
		if (skip) {
			skip--;
			continue;
		}
		p++;
		while (*p == ' ')
			p++;
		a = strtoull(p, NULL, 16);
		if (tlbs_trace_put(w, a)) {
			rc = -1;
			break;
		}
		if (max_accesses && w->accesses >= max_accesses)
			break;
	}
	if (tlbs_trace_close(w, accesses, records))
		rc = -1;
	return rc;
}
