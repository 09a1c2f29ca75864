/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * tlbsim: a grouped-TLB, two-stage translation simulator.
 *
 * Layers, each in its own file:
 *   tlb.c       one TLB group (entries, ways, replacement, page sizes)
 *   tlb_run.c   a list of keys through one group (batch mode)
 *   machine.c   a machine: its groups, page sizes, costs; geometry files
 *   mmu.c       address spaces: native, two-stage (VZ pair or combined
 *               entry), guest/host huge-page state, THP split/restore
 *   workload.c  synthetic address generators and trace replay
 *   trace.c     the compact trace format, lackey conversion
 *   run.c       the run loop: time, ticks, the module's controller
 */
#ifndef TLBSIM_H
#define TLBSIM_H

#include <stdint.h>
#include <stdio.h>

typedef uint64_t u64;
typedef uint32_t u32;
typedef int64_t s64;

/* Page size classes: every machine has one base and one huge size. */
enum tlbs_class { TLBS_BASE = 0, TLBS_HUGE = 1, TLBS_NCLASS = 2 };

enum tlbs_repl { TLBS_LRU, TLBS_FIFO, TLBS_RANDOM };

/*
 * A TLB key: virtual page number at the entry's page size, the address
 * space it translates (native, guest stage 1, host stage 2, combined) and
 * the size class. Bit 0 is set in every valid key, so 0 means empty.
 */
enum tlbs_space {
	TLBS_SP_NATIVE = 0,	/* VA -> PA */
	TLBS_SP_STAGE1 = 1,	/* GVA -> GPA (MIPS VZ guest entry) */
	TLBS_SP_STAGE2 = 2,	/* GPA -> HPA (MIPS VZ root entry) */
	TLBS_SP_COMBINED = 3,	/* GVA -> HPA (x86/arm64 combined entry) */
};

#define TLBS_KEY_VPN_SHIFT 6

static inline u64 tlbs_key(enum tlbs_space sp, enum tlbs_class cl, u64 vpn)
{
	return (vpn << TLBS_KEY_VPN_SHIFT) | ((u64)sp << 3) |
	       ((u64)cl << 1) | 1;
}

/*
 * 1 for a base-page key of stage 2 or of the combined space (bit 4 set,
 * class bit 1 clear): what the cost model counts apart
 * (walks[TLBS_WALK_S2_BASE]).
 */
static inline u64 tlbs_key_s2_base(u64 key)
{
	return key >> 4 & ~(key >> 1) & 1;
}

/* walks[]: per size class, then the stage-2/combined base-page ones. */
#define TLBS_WALK_S2_BASE TLBS_NCLASS
#define TLBS_NWALK (TLBS_NCLASS + 1)

static inline u64 tlbs_key_vpn(u64 key)
{
	return key >> TLBS_KEY_VPN_SHIFT;
}

struct tlbs_group {
	char name[16];
	u32 entries, ways, sets;
	enum tlbs_repl repl;
	u32 classes;		/* bit per enum tlbs_class it accepts */
	/* storage: sets x ways keys */
	u64 *key;
	u64 *stamp;		/* LRU: last use; FIFO: fill time */
	u64 clock;
	u32 fifo_next;		/* fully associative FIFO pointer */
	/*
	 * fully associative groups: an index from key to entry, either
	 * direct (key >> 1 -> entry, when the keys a run can make are few:
	 * tlbs_group_index_direct) or a hash; and the LRU list
	 */
	u32 *direct;		/* key >> 1 -> entry; absent: entries, whose
				 * key (one past the last) is always 0 */
	u64 dsize;		/* entries of @direct */
	u64 *hkey;		/* hash slot -> key, 0 empty */
	u32 *hslot;		/* hash slot -> entry */
	u32 hmask, hshift;
	u32 *prev, *next;	/* LRU list over entries, head = MRU */
	u32 head, tail;
	u32 used;		/* valid entries (any group) */
	u64 rng;
	/* statistics */
	u64 hits, misses, fills, invalidations;
};

int tlbs_group_init(struct tlbs_group *g, const char *name, u32 entries,
		    u32 ways, enum tlbs_repl repl, u32 classes);
void tlbs_group_free(struct tlbs_group *g);
/* 1 if @key is resident (and touch it for replacement), 0 if not. */
int tlbs_group_lookup(struct tlbs_group *g, u64 key);
/* Install @key (not resident), evicting per the replacement policy. */
void tlbs_group_fill(struct tlbs_group *g, u64 key);
/* Remove @key if resident; returns 1 if it was. */
int tlbs_group_invalidate(struct tlbs_group *g, u64 key);
/*
 * Index a fully associative group directly by key when every key it will
 * see is below @key_bound and the table stays small (the keys of one run's
 * address space). Returns 1 if it indexes directly, 0 if it uses the hash
 * (set associative, bound too large, or a group still holding entries that
 * its direct table does not cover: they move to the hash). A key at or
 * above the bound of a direct table aborts the program: a caller's bug.
 */
int tlbs_group_index_direct(struct tlbs_group *g, u64 key_bound);
/* Look up @key, fill it on a miss; returns 1 on a hit. */
int tlbs_group_access(struct tlbs_group *g, u64 key);
/*
 * tlbs_group_access() on each of @n keys in order (src/tlb_run.c), adding
 * each miss to @walks[size class of its key] and, for a base-page
 * stage-2 or combined key, to @walks[TLBS_WALK_S2_BASE] too.
 */
void tlbs_group_run(struct tlbs_group *g, const u64 *keys, u32 n,
		    u64 *walks);
/* Remove every entry; returns how many were valid. */
u32 tlbs_group_flush(struct tlbs_group *g);
/* Number of valid entries. */
u32 tlbs_group_count(const struct tlbs_group *g);
const char *tlbs_repl_name(enum tlbs_repl r);

#define TLBS_MAX_GROUPS 6
#define TLBS_MAX_PATH 3

struct tlbs_machine {
	char name[32];
	char description[128];
	u32 base_shift, huge_shift;
	u32 ngroups;
	struct tlbs_group g[TLBS_MAX_GROUPS];
	/* groups searched, in order, for a translation of each class */
	u32 path[TLBS_NCLASS][TLBS_MAX_PATH];
	u32 pathlen[TLBS_NCLASS];
	double access_ns;	/* time of one access, TLB hit */
	double refill_ns;	/* extra time of a refill (miss in the path) */
	/*
	 * Under two-stage translation (model vz): a base-page refill of the
	 * guest stage (GVA->GPA), of the host stage (GPA->HPA), and a
	 * huge-page refill of either stage. Each defaults to refill_ns; the
	 * combined model (one GVA->HPA entry) uses refill_ns.
	 */
	double guest_refill_ns, host_refill_ns, huge_refill_ns;
	double l1_miss_ns;	/* extra time of a miss that a later group hit */
	u64 ctrl_huge_entries, ctrl_small_entries;
	int two_stage;		/* enum tlbs_model of a VM on this machine */
};

/*
 * Parse a geometry file's text into @m (groups allocated). On error returns
 * -1 and writes a message naming the line into @err.
 */
/* "4096", "16K", "32M", "2GiB" -> bytes in *out: 0, or -1 if malformed. */
int tlbs_parse_size(const char *s, u64 *out);
int tlbs_machine_parse(struct tlbs_machine *m, const char *text,
		       const char *origin, char *err, size_t errlen);
int tlbs_machine_load(struct tlbs_machine *m, const char *name_or_path,
		      char *err, size_t errlen);
void tlbs_machine_free(struct tlbs_machine *m);
void tlbs_machine_reset_stats(struct tlbs_machine *m);
/* Built-in presets (the files under tlbsim/presets, embedded at build). */
extern const char *const tlbs_preset_names[];
extern const char *const tlbs_preset_texts[];

enum tlbs_model {
	TLBS_NATIVE,		/* one stage */
	TLBS_VZ,		/* GVA->GPA and GPA->HPA entries, both needed */
	TLBS_COMBINED,		/* one GVA->HPA entry, smaller of the sizes */
};

/*
 * Which host huge pages the limiter splits first (src/split_order.c):
 * high = the module's address order, heat = coldest by the simulated
 * accessed bits. The module's split_order tunable maps 0, 1, 2 to high,
 * random, heat (under method safe 0 means heat while safe_split_heat is
 * set: tlbb_split_order()); low is the simulator's own (for comparison).
 */
enum tlbs_split_order { TLBS_SPLIT_LOW, TLBS_SPLIT_HIGH, TLBS_SPLIT_RANDOM,
			TLBS_SPLIT_HEAT };

/* Address spaces and page sizes of one run. */
struct tlbs_mmu {
	struct tlbs_machine *m;
	enum tlbs_model model;
	u64 size;		/* bytes the workload addresses: [0, size) */
	/* stage 1 (native pages, or the guest's) */
	int thp1;		/* native/guest THP */
	/* stage 2 (host) */
	int thp2;		/* host THP */
	u64 hva_offset;		/* HVA - GPA; misaligned => small stage 2 */
	u64 nregions;		/* huge regions of [0, size) */
	unsigned char *huge1;	/* per region: stage-1 mapping is huge */
	/* per host (HVA) region: a THP; host regions cover the memslot */
	u64 host_first, nhost;	/* HVA region numbers */
	unsigned char *thp;
	unsigned char *split_by_limiter;
	u64 *split_stack;	/* restore order: last split first */
	u64 nsplit;
	u64 huge_in_use;	/* N_hc: host THPs over the memslot */
	u64 limit;		/* N_hl applied by tlbs_mmu_apply_limit */
	enum tlbs_split_order split_order;
	u64 rng;
	/* split_order heat: per host region, accessed since the last sample
	 * and its heat (tlbb_heat_fold() of the samples) */
	unsigned char *accessed, *heat;
	u64 heat_cursor;
	/* counters */
	u64 accesses;
	/* refills by size of the translation; [TLBS_WALK_S2_BASE]: those of
	 * base-page stage-2 and combined translations among them */
	u64 walks[TLBS_NWALK];
	u64 l1_misses;		/* missed a group, hit a later one */
	/* per class: the one group its path holds, or NULL (several) */
	struct tlbs_group *only[TLBS_NCLASS];
	u64 splits, restores;
	/*
	 * batch mode (every class's path is one group): the keys of a batch
	 * of accesses, one list per group, run by tlbs_group_run();
	 * list[class] is the list of that class's group
	 */
	int batch;
	u32 list[TLBS_NCLASS];
	u64 *keys[TLBS_NCLASS];
};

int tlbs_mmu_init(struct tlbs_mmu *u, struct tlbs_machine *m,
		  enum tlbs_model model, u64 size, int thp1, int thp2,
		  u64 hva_offset);
void tlbs_mmu_free(struct tlbs_mmu *u);
/* Host regions wholly inside the memslot: the most huge pages possible. */
u64 tlbs_mmu_total_pages(const struct tlbs_mmu *u);
/* Translate @n workload offsets (bytes in [0, size)). */
void tlbs_mmu_run(struct tlbs_mmu *u, const u64 *off, u32 n);
/* Host region of workload offset @off (a VM model). */
u64 tlbs_mmu_host_region(const struct tlbs_mmu *u, u64 off);
/* Split host THPs until N_hc <= limit, or restore split ones up to it. */
void tlbs_mmu_apply_limit(struct tlbs_mmu *u, u64 limit);
/* Size class the stage-2 mapping of workload offset @off has now. */
enum tlbs_class tlbs_mmu_stage2_class(const struct tlbs_mmu *u, u64 off);
/* Estimated time in ns of everything counted so far. */
double tlbs_mmu_time_ns(const struct tlbs_mmu *u);
/* The part of it spent on refills (the cost model: docs/simulator.md). */
double tlbs_mmu_refill_time_ns(const struct tlbs_mmu *u);

/* Workloads: fill a buffer with byte offsets in [0, size). */
struct tlbs_trace_reader;
struct tlbs_workload {
	char kind[16];
	u64 size;
	u64 rng;
	/* chase / hotcold */
	u64 hot_pages, hot_page_bytes, hot_bytes;
	u64 hot_at;		/* hotcold: offset of the hot set */
	u64 drift, drift_every;	/* hotcold: move it by drift bytes */
	u64 since_drift;	/* every drift_every accesses (wrapping) */
	double hot_frac;
	u64 hot_thresh;		/* hot_frac as a 2^32 fraction */
	u64 *hot_base;		/* offset of each hot block */
	u64 stride, pos;
	/* phases */
	u64 period, in_phase;
	u32 phase;
	struct tlbs_trace_reader *trace;
	char trace_path[512];
	u64 trace_loops;
};

/* @huge_shift: the machine's huge page, for packing trace regions. */
int tlbs_workload_parse(struct tlbs_workload *w, const char *spec,
			u32 huge_shift, char *err, size_t errlen);
void tlbs_workload_free(struct tlbs_workload *w);
/* Returns the number of offsets written (< n only at the end of a trace). */
u32 tlbs_workload_fill(struct tlbs_workload *w, u64 *off, u32 n);

/* Trace format (see docs/simulator.md). */
struct tlbs_trace_writer;
struct tlbs_trace_writer *tlbs_trace_create(FILE *f, u32 page_shift);
int tlbs_trace_put(struct tlbs_trace_writer *t, u64 addr);
int tlbs_trace_close(struct tlbs_trace_writer *t, u64 *accesses,
		     u64 *records);
struct tlbs_trace_reader *tlbs_trace_open(const char *path, char *err,
					  size_t errlen);
/* Open, packing distinct regions of 2^region_shift bytes from 0. */
struct tlbs_trace_reader *tlbs_trace_open_regions(const char *path,
						  u32 region_shift,
						  char *err, size_t errlen);
u64 tlbs_trace_accesses(const struct tlbs_trace_reader *t);
/* Fill up to n addresses; 0 at end of trace. Addresses are page-aligned
 * offsets from the trace's lowest page (compacted, see docs). */
u32 tlbs_trace_read(struct tlbs_trace_reader *t, u64 *addr, u32 n);
int tlbs_trace_rewind(struct tlbs_trace_reader *t);
u64 tlbs_trace_span(const struct tlbs_trace_reader *t);
void tlbs_trace_free(struct tlbs_trace_reader *t);
/*
 * Where a trace's accesses go, by region of 2^@shift bytes: one line per
 * region in address order (its recorded address, the index of its first
 * access, its accesses), then "accesses N regions N pages N".
 */
int tlbs_trace_regions(const char *path, u32 shift, FILE *out, char *err,
		       size_t errlen);
/*
 * lackey --trace-mem=yes output (stdin) -> trace (stdout): the accesses
 * after the first @skip, at most @max_accesses of them (0: all).
 */
int tlbs_lackey_convert(FILE *in, FILE *out, u64 skip, u64 max_accesses,
			int with_instr, u64 *accesses, u64 *records);

/*
 * Random numbers: wyrand. The state is a counter advanced by a constant
 * and the output a 64x64->128-bit multiply of it, folded: the chain from
 * one draw to the next is one add (fast when a loop draws every access),
 * and the state after n draws is the start plus n x TLBS_RAND_INC (the
 * victims drawn ahead in tlb_run.c need no saved states).
 */
#define TLBS_RAND_INC 0xa0761d6478bd642fULL

static inline u64 tlbs_rand_at(u64 s)
{
	unsigned __int128 m = (unsigned __int128)s *
			      (s ^ 0xe7037ed1a0b428dbULL);

	return (u64)(m >> 64) ^ (u64)m;
}

static inline u64 tlbs_rand(u64 *s)
{
	*s += TLBS_RAND_INC;
	return tlbs_rand_at(*s);
}

/* A uniform 64-bit value @r scaled to [0, n). */
static inline u64 tlbs_scale(u64 r, u64 n)
{
	return (u64)(((unsigned __int128)r * n) >> 64);
}

static inline u64 tlbs_rand_below(u64 *s, u64 n)
{
	return tlbs_scale(tlbs_rand(s), n);
}

/* split_order.c: which huge page to split / restore next, and the heat */
int tlbs_split_order_parse(const char *name, enum tlbs_split_order *o);
const char *tlbs_split_order_name(enum tlbs_split_order o);
enum tlbs_split_order tlbs_split_order_of_param(u64 v);
/* The next host region to split (a THP), or ~0 if none is left. */
u64 tlbs_split_pick(struct tlbs_mmu *u);
/* Take the next region to restore off u->split_stack (u->nsplit > 0). */
u64 tlbs_restore_pick(struct tlbs_mmu *u);
/* Set the accessed bits of the host regions @n offsets touch. */
int tlbs_heat_mark(struct tlbs_mmu *u, const u64 *off, u32 n);
/*
 * One sample: @budget regions from the cursor folded into their heat, their
 * bits cleared (all bits, with a @window: only the accesses of the next
 * count); the cursor moves on past them on the tick's @last sample only.
 */
int tlbs_heat_sample(struct tlbs_mmu *u, u64 budget, int window, int last);
void tlbs_heat_free(struct tlbs_mmu *u);

#endif /* TLBSIM_H */
