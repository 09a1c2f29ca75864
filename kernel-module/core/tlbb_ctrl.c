// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * The balance controller: the paper's method, the hill method and the safe
 * method, restated in docs/controller.md, in integer arithmetic only.
 *
 * No libc, no floating point, no kernel headers. The only divisions are of
 * u64 by u64, which compile to one instruction on the 64-bit targets this
 * core is meant for (x86_64, arm64, loongarch64); a 32-bit kernel would need
 * div64_u64() in tlbb_trigger_ticks(), tlbb_mul_div_cap() and tlbb_decide().
 */
#include "tlbb_ctrl.h"

/* Up to this many refills per group and tick, y needs no 128-bit step. */
#define TLBB_REFILLS_MAX	(1ULL << 40)

const struct tlbb_param_desc tlbb_param_descs[TLBB_P_COUNT] = {
#define TLBB_PARAM(name, def, min, max, unit, help) \
	[TLBB_P_##name] = { #name, (u64)(def), (u64)(min), (u64)(max), \
			    unit, help },
#include "tlbb_params.def"
#undef TLBB_PARAM
};

void tlbb_params_default(struct tlbb_params *p)
{
#define TLBB_PARAM(name, def, min, max, unit, help) p->name = (u64)(def);
#include "tlbb_params.def"
#undef TLBB_PARAM
}

/* A function, not an expression, so that "x < 0" draws no warning. */
static u64 tlbb_clamp(u64 v, u64 min, u64 max)
{
	return v < min ? min : v > max ? max : v;
}

int tlbb_params_check(const struct tlbb_params *p)
{
#define TLBB_PARAM(name, def, min, max, unit, help)		\
	if (tlbb_clamp(p->name, min, max) != p->name)		\
		return -(1 + TLBB_P_##name);
#include "tlbb_params.def"
#undef TLBB_PARAM
	return 0;
}

u64 tlbb_param_get(const struct tlbb_params *p, enum tlbb_param_id id)
{
	switch (id) {
#define TLBB_PARAM(name, def, min, max, unit, help) \
	case TLBB_P_##name: return p->name;
#include "tlbb_params.def"
#undef TLBB_PARAM
	default:
		return 0;
	}
}

int tlbb_param_set(struct tlbb_params *p, enum tlbb_param_id id, u64 val)
{
	switch (id) {
#define TLBB_PARAM(name, def, min, max, unit, help)		\
	case TLBB_P_##name:					\
		if (tlbb_clamp(val, min, max) != val)		\
			return -1;				\
		p->name = val;					\
		return 0;
#include "tlbb_params.def"
#undef TLBB_PARAM
	default:
		return -1;
	}
}

const struct tlbb_choice_desc tlbb_choice_descs[] = {
#define TLBB_CHOICE(param, id, value, name, help) \
	{ TLBB_P_##param, (u64)(value), name, help },
#include "tlbb_choices.def"
#undef TLBB_CHOICE
};

const unsigned int tlbb_choice_count =
	sizeof(tlbb_choice_descs) / sizeof(tlbb_choice_descs[0]);

int tlbb_choice_parse(enum tlbb_param_id id, const char *text,
		      unsigned long len, u64 *val)
{
	unsigned int i;
	unsigned long k;

	for (i = 0; i < tlbb_choice_count; i++) {
		const struct tlbb_choice_desc *d = &tlbb_choice_descs[i];

		if (d->param != id)
			continue;
		for (k = 0; k < len && d->name[k] == text[k]; k++)
			;
		if (k == len && !d->name[k]) {
			*val = d->value;
			return 0;
		}
	}
	return -1;
}

const char *tlbb_choice_name(enum tlbb_param_id id, u64 val)
{
	unsigned int i;

	for (i = 0; i < tlbb_choice_count; i++)
		if (tlbb_choice_descs[i].param == id &&
		    tlbb_choice_descs[i].value == val)
			return tlbb_choice_descs[i].name;
	return 0;
}

/* Copy @src into @dst with every field clamped into its range. */
static void tlbb_params_clamp(struct tlbb_params *dst,
			      const struct tlbb_params *src)
{
#define TLBB_PARAM(name, def, min, max, unit, help) \
	dst->name = tlbb_clamp(src->name, min, max);
#include "tlbb_params.def"
#undef TLBB_PARAM
}

static u64 tlbb_min(u64 a, u64 b)
{
	return a < b ? a : b;
}

/*
 * min(@cap, a * b / d), rounded down (b == 0 gives 0). Exact while a * b
 * fits in 64 bits; otherwise a and d are halved together until it does,
 * which keeps the relative error below 2^-18 for any result under 2^44
 * (every cap used here is lower), as d then still has 19 significant bits.
 * d == 0 gives @cap.
 */
static u64 tlbb_mul_div_cap(u64 a, u64 b, u64 d, u64 cap)
{
	u64 prod;

	/* A compiler builtin (the kernel's check_mul_overflow), no libcall. */
	while (__builtin_mul_overflow(a, b, &prod)) {
		a >>= 1;
		d >>= 1;
	}
	if (!d)
		return cap;
	return tlbb_min(prod / d, cap);
}

/* *hi:*lo = a * b, the full 128-bit product, from 32-bit halves. */
static void tlbb_mul_wide(u64 a, u64 b, u64 *hi, u64 *lo)
{
	u64 al = a & 0xffffffffULL, ah = a >> 32;
	u64 bl = b & 0xffffffffULL, bh = b >> 32;
	u64 ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
	u64 mid = (ll >> 32) + (lh & 0xffffffffULL) + (hl & 0xffffffffULL);

	*lo = mid << 32 | (ll & 0xffffffffULL);
	*hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

u64 tlbb_trigger_ticks(const struct tlbb_params *p)
{
	u64 iv = p->interval_ms ? p->interval_ms : 1;
	u64 ms = p->method != TLBB_METHOD_PAPER ? p->hill_sustain_ms :
		 p->sustain_ms;

	return (ms + iv - 1) / iv;
}

u64 tlbb_load_milli(const struct tlbb_params *p, const struct tlbb_input *in)
{
	u64 refills = in->refills_huge + in->refills_small;
	u64 den = p->interval_ms * (in->nr_vcpus ? in->nr_vcpus : 1);

	/*
	 * refills * cost_ns over interval_ms * 1e6 * nr_vcpus ns of vCPU time,
	 * in permille (x1e3) times 1000: the 1e6 factors cancel. A sum that
	 * carried out of 64 bits is halved together with the divisor.
	 */
	if (refills < in->refills_huge) {
		refills = refills >> 1 | 1ULL << 63;
		den >>= 1;
	}
	return tlbb_mul_div_cap(refills, p->refill_cost_ns, den,
				TLBB_LOAD_MAX_MILLI);
}

u64 tlbb_imbalance_milli(const struct tlbb_params *p, u64 refills_huge,
			 u64 refills_small, enum tlbb_group *dominant)
{
	u64 fh, fs, fh_hi, fs_hi;

	/*
	 * Compare f_h = N_hr / huge_entries with f_s = N_sr / small_entries
	 * as N_hr * small_entries against N_sr * huge_entries: no division,
	 * no rounding. Below 2^40 refills the products fit in 64 bits (the
	 * entries are at most 2^20); above, they are formed in 128 bits and
	 * halved together until they fit.
	 */
	if ((refills_huge | refills_small) < TLBB_REFILLS_MAX) {
		fh = refills_huge * p->small_entries;
		fs = refills_small * p->huge_entries;
	} else {
		tlbb_mul_wide(refills_huge, p->small_entries, &fh_hi, &fh);
		tlbb_mul_wide(refills_small, p->huge_entries, &fs_hi, &fs);
		while (fh_hi | fs_hi) {
			fh = fh >> 1 | fh_hi << 63;
			fs = fs >> 1 | fs_hi << 63;
			fh_hi >>= 1;
			fs_hi >>= 1;
		}
	}
	if (fh == fs) {
		*dominant = TLBB_G_NONE;
		return TLBB_Y_BALANCED_MILLI;
	}
	if (fh > fs) {
		*dominant = TLBB_G_HUGE;
		return tlbb_mul_div_cap(fh, 1000, fs, TLBB_Y_MAX_MILLI);
	}
	*dominant = TLBB_G_SMALL;
	return tlbb_mul_div_cap(fs, 1000, fh, TLBB_Y_MAX_MILLI);
}

static void tlbb_window_clear(struct tlbb_ctrl *c)
{
	c->nsamples = 0;
	c->win_cost = 0;
	c->win_est = 0;
	c->win_group = TLBB_G_NONE;
	c->win_mixed = false;
}

/* End a counting run: the limit holds, the load must be sustained again. */
static void tlbb_stop(struct tlbb_ctrl *c, enum tlbb_state st)
{
	tlbb_window_clear(c);
	c->load_count = 0;
	c->run_dir = TLBB_G_NONE;
	c->state = st;
}

static u64 tlbb_floor(const struct tlbb_ctrl *c)
{
	return tlbb_min(c->p.floor_pages, c->total_pages);
}

void tlbb_ctrl_init(struct tlbb_ctrl *c, const struct tlbb_params *p,
		    u64 total_pages, bool monitor_only)
{
	u32 i;

	tlbb_params_clamp(&c->p, p);
	c->trigger = tlbb_trigger_ticks(&c->p);
	c->monitor_only = monitor_only;
	c->total_pages = total_pages;
	c->limit = total_pages;
	c->state = TLBB_ST_IDLE;
	c->load_count = 0;
	c->load_pm_milli = 0;
	for (i = 0; i < TLBB_MAX_SAMPLES; i++)
		c->y_samples[i] = 0;
	c->y_milli = 0;
	c->dominant = TLBB_G_NONE;
	c->ticks = 0;
	c->lowered = 0;
	c->raised = 0;
	c->decisions = 0;
	c->run_dir = TLBB_G_NONE;
	c->cost = 0;
	c->hill_step = 0;
	c->hill_best_cost = 0;
	c->hill_best_limit = total_pages;
	c->hill_held_cost = 0;
	c->hill_dir = TLBB_G_NONE;
	c->est_cost = 0;
	c->safe_start = total_pages;
	c->safe_hc = total_pages;
	c->safe_held = 0;
	c->safe_probe = 0;
	c->safe_phase = TLBB_SAFE_NONE;
	c->safe_down_ok = false;
	c->safe_flipped = false;
	c->safe_pref = TLBB_G_SMALL;
	c->safe_waited = false;
	tlbb_window_clear(c);
}

void tlbb_ctrl_set_params(struct tlbb_ctrl *c, const struct tlbb_params *p)
{
	tlbb_params_clamp(&c->p, p);
	c->trigger = tlbb_trigger_ticks(&c->p);
	if (c->load_count > c->trigger)
		c->load_count = c->trigger;
	tlbb_window_clear(c);
	c->run_dir = TLBB_G_NONE;
	c->hill_step = 0;
	c->hill_held_cost = 0;
	c->safe_phase = TLBB_SAFE_NONE;
	c->state = c->load_count ? TLBB_ST_SUSTAIN : TLBB_ST_IDLE;
}

/* Add one sample of y to the window. */
static void tlbb_sample(struct tlbb_ctrl *c, const struct tlbb_input *in)
{
	enum tlbb_group g;
	u64 y = tlbb_imbalance_milli(&c->p, in->refills_huge,
				     in->refills_small, &g);

	if (!c->nsamples)
		c->win_group = g;
	else if (g != c->win_group)
		c->win_mixed = true;
	c->y_samples[c->nsamples++] = y;
	/* Capped per group: 64 samples of 2^41 stay far below 2^64. */
	c->win_cost += tlbb_min(in->refills_huge, TLBB_REFILLS_MAX) +
		       tlbb_min(in->refills_small, TLBB_REFILLS_MAX);
	/* 2^40 refills x 10^4 ns, twice, 64 samples: below 2^62 */
	c->win_est += tlbb_min(in->refills_huge, TLBB_REFILLS_MAX) *
		      c->p.cost_huge_ns +
		      tlbb_min(in->refills_small, TLBB_REFILLS_MAX) *
		      c->p.cost_small_ns;
}

static enum tlbb_action tlbb_lower(struct tlbb_ctrl *c, u64 huge_in_use)
{
	u64 base = tlbb_min(c->limit, huge_in_use);
	u64 target = base > c->p.step_pages ? base - c->p.step_pages : 0;

	if (target < tlbb_floor(c))
		target = tlbb_floor(c);
	if (target >= c->limit) {		/* at the floor already */
		tlbb_stop(c, TLBB_ST_IDLE);
		return TLBB_ACT_NONE;
	}
	c->run_dir = TLBB_G_HUGE;
	if (c->monitor_only) {
		c->state = TLBB_ST_MONITOR;
		return TLBB_ACT_NONE;
	}
	c->limit = target;
	c->lowered++;
	c->state = TLBB_ST_LOWERING;
	return TLBB_ACT_LOWER;
}

static enum tlbb_action tlbb_raise(struct tlbb_ctrl *c, u64 huge_in_use)
{
	u64 room = c->total_pages - c->limit;

	if (huge_in_use < c->limit) {		/* huge pages still forming */
		tlbb_stop(c, TLBB_ST_FORMING);
		return TLBB_ACT_NONE;
	}
	if (!room) {				/* everything may be huge */
		tlbb_stop(c, TLBB_ST_IDLE);
		return TLBB_ACT_NONE;
	}
	c->run_dir = TLBB_G_SMALL;
	if (c->monitor_only) {
		c->state = TLBB_ST_MONITOR;
		return TLBB_ACT_NONE;
	}
	c->limit += tlbb_min(room, c->p.step_pages);
	c->raised++;
	c->state = TLBB_ST_RAISING;
	return TLBB_ACT_RAISE;
}

/* The window is full: its mean y and refills, its group; empty it. */
static enum tlbb_group tlbb_window_end(struct tlbb_ctrl *c)
{
	enum tlbb_group g = c->win_mixed ? TLBB_G_NONE : c->win_group;
	u64 sum = 0;
	u32 i;

	for (i = 0; i < c->nsamples; i++)
		sum += c->y_samples[i];	/* <= 64 x 10^12: no overflow */
	c->y_milli = sum / c->nsamples;
	c->cost = c->win_cost / c->nsamples;
	c->est_cost = c->win_est / c->nsamples;
	c->dominant = g;
	c->decisions++;
	tlbb_window_clear(c);
	return g;
}

/* The paper's method: act on the window's imbalance. */
static enum tlbb_action tlbb_decide(struct tlbb_ctrl *c, u64 huge_in_use)
{
	enum tlbb_group g = tlbb_window_end(c);

	if (g == TLBB_G_NONE ||
	    c->y_milli <= c->p.imbalance_threshold * 1000 ||
	    (c->run_dir != TLBB_G_NONE && g != c->run_dir)) {
		tlbb_stop(c, TLBB_ST_IDLE);
		return TLBB_ACT_NONE;
	}
	if (g == TLBB_G_HUGE)
		return tlbb_lower(c, huge_in_use);
	return tlbb_raise(c, huge_in_use);
}

/* Method hill: set the limit to @target, saying which way it moved. */
static enum tlbb_action tlbb_hill_set(struct tlbb_ctrl *c, u64 target,
				      enum tlbb_state st)
{
	enum tlbb_action act = TLBB_ACT_NONE;

	if (target < c->limit) {
		c->lowered++;
		act = TLBB_ACT_LOWER;
	} else if (target > c->limit) {
		c->raised++;
		act = TLBB_ACT_RAISE;
	}
	c->limit = target;
	c->state = st;
	return act;
}

/* Method hill: the search is over; hold its best limit. */
static enum tlbb_action tlbb_hill_hold(struct tlbb_ctrl *c)
{
	c->hill_step = 0;
	c->hill_held_cost = c->hill_best_cost;
	return tlbb_hill_set(c, c->hill_best_limit, TLBB_ST_HOLDING);
}

/* Method hill: try the limit hill_step pages past the best one. */
static enum tlbb_action tlbb_hill_move(struct tlbb_ctrl *c)
{
	u64 base = c->hill_best_limit, target;

	if (c->hill_dir == TLBB_G_HUGE) {
		target = base > c->hill_step ? base - c->hill_step : 0;
		if (target < tlbb_floor(c))
			target = tlbb_floor(c);
		if (target >= base)		/* at the floor */
			return tlbb_hill_hold(c);
		return tlbb_hill_set(c, target, TLBB_ST_LOWERING);
	}
	target = base + tlbb_min(c->total_pages - base, c->hill_step);
	if (target == base)			/* everything may be huge */
		return tlbb_hill_hold(c);
	return tlbb_hill_set(c, target, TLBB_ST_RAISING);
}

/*
 * Method hill: the window is full. During a search it measured the last
 * move: keep a move that cut the mean refills per tick by more than
 * hill_gain_pm and step on; otherwise halve the step and try again from
 * the best limit, and hold that limit once the step reaches 0. Outside a
 * search a window starts one, in the direction the imbalance says, unless
 * the refills stay within hill_retry_pm of those of the last search's end.
 */
static enum tlbb_action tlbb_hill_decide(struct tlbb_ctrl *c, u64 huge_in_use)
{
	enum tlbb_group g = tlbb_window_end(c);
	u64 held = c->hill_held_cost, dist;

	if (c->hill_step) {
		if (c->cost * 1000 <
		    c->hill_best_cost * (1000 - c->p.hill_gain_pm)) {
			c->hill_best_cost = c->cost;
			c->hill_best_limit = c->limit;
		} else {
			c->hill_step >>= 1;
			if (!c->hill_step)
				return tlbb_hill_hold(c);
		}
		return tlbb_hill_move(c);
	}
	dist = c->cost > held ? c->cost - held : held - c->cost;
	if (held && dist * 1000 <= held * c->p.hill_retry_pm) {
		c->state = TLBB_ST_HOLDING;
		return TLBB_ACT_NONE;
	}
	c->hill_best_cost = c->cost;
	c->hill_best_limit = c->limit;
	if (g == TLBB_G_NONE ||
	    c->y_milli <= c->p.imbalance_threshold * 1000)
		return tlbb_hill_hold(c);	/* no clear way to go */
	if (g == TLBB_G_HUGE) {
		c->hill_best_limit = tlbb_min(c->limit, huge_in_use);
		if (c->hill_best_limit < tlbb_floor(c))
			c->hill_best_limit = tlbb_floor(c);
	} else if (huge_in_use < c->limit) {	/* huge pages still forming */
		c->hill_held_cost = 0;
		c->state = TLBB_ST_FORMING;
		return TLBB_ACT_NONE;
	}
	if (c->monitor_only) {
		c->hill_held_cost = 0;
		c->state = TLBB_ST_MONITOR;
		return TLBB_ACT_NONE;
	}
	c->hill_dir = g;
	c->hill_step = tlbb_mul_div_cap(c->total_pages, c->p.hill_first_step_pm,
					1000, c->total_pages);
	if (!c->hill_step)
		c->hill_step = 1;
	return tlbb_hill_move(c);
}

/*
 * Method safe. The objective is the estimated refill time per tick
 * (refills of each group times cost_huge_ns or cost_small_ns), measured a
 * window after each move: a move is kept only if it cut that by more than
 * hill_gain_pm below the best limit's, else it is undone (the next try
 * starts from the best limit again). A pattern search: at each step size
 * it tries the best limit plus the step, then (while no move of this
 * search was kept) minus it, then halves the step, in the direction of the
 * kept moves; it ends at the best limit when the step reaches 0. The first
 * search after the load starts begins with safe_first_step_pm of the VM
 * (default: all of it, so a far better limit is not missed), later ones
 * with hill_first_step_pm. A held limit is measured every window: a cost
 * that moved by more than hill_retry_pm from the one measured when it was
 * reached (the load changed, the hot set moved) starts a new search at
 * once; otherwise, after probe_ms, a search upward only (toward no
 * controller), an interval that doubles (up to probe_max_ms) after every
 * search that ended where it started. Lowering is tried only by a search
 * whose first window the huge group dominated.
 */

static u64 tlbb_safe_windows(const struct tlbb_ctrl *c, u64 ms)
{
	u64 w = tlbb_mul_div_cap(ms, 1, c->p.interval_ms * c->p.samples, ms);

	return w ? w : 1;
}

/* Method safe: the search is over; hold its best limit, measure it. */
static enum tlbb_action tlbb_safe_hold(struct tlbb_ctrl *c)
{
	u64 max = tlbb_safe_windows(c, c->p.probe_max_ms);

	if (c->hill_best_limit != c->safe_start)
		c->safe_probe = tlbb_safe_windows(c, c->p.probe_ms);
	else
		c->safe_probe = c->safe_probe > max / 2 ? max :
				c->safe_probe * 2;
	c->hill_step = 0;
	c->safe_held = 0;
	c->safe_phase = TLBB_SAFE_REF;
	return tlbb_hill_set(c, c->hill_best_limit, TLBB_ST_HOLDING);
}

/*
 * The limit @c->hill_step past the best one in @c->hill_dir (the best one
 * if that way is closed); a step longer than the way left is shortened to
 * it, so that halving it tries new limits.
 */
static u64 tlbb_safe_target(struct tlbb_ctrl *c)
{
	u64 best = c->hill_best_limit, base = best, fl = tlbb_floor(c);

	if (c->hill_dir == TLBB_G_SMALL) {
		if (best >= c->total_pages)
			return best;
		c->hill_step = tlbb_min(c->hill_step, c->total_pages - best);
		return best + c->hill_step;
	}
	/* a limit above the pages in use would change nothing */
	if (best == c->safe_start && c->safe_hc < best)
		base = c->safe_hc;
	if (!c->safe_down_ok || base <= fl)
		return best;
	c->hill_step = tlbb_min(c->hill_step, base - fl);
	return base - c->hill_step;
}

/*
 * Method safe: the next try. After a try that did not pay (@failed): while
 * no move of this search was kept, the other direction at the same step;
 * then half the step, in the direction of the kept moves (upward if none).
 * A direction that cannot move (top, floor, lowering not allowed) counts
 * as a try that did not pay.
 */
static enum tlbb_action tlbb_safe_next(struct tlbb_ctrl *c, bool failed)
{
	u64 target;

	for (;;) {
		if (failed && !c->safe_flipped) {
			c->safe_flipped = true;
			c->hill_dir = c->hill_dir == TLBB_G_SMALL ?
				      TLBB_G_HUGE : TLBB_G_SMALL;
		} else if (failed) {
			c->safe_flipped = false;
			c->hill_step >>= 1;
			if (!c->hill_step)
				return tlbb_safe_hold(c);
			c->hill_dir = c->safe_pref;
		}
		target = tlbb_safe_target(c);
		if (target != c->hill_best_limit)
			return tlbb_hill_set(c, target,
					     target < c->hill_best_limit ?
					     TLBB_ST_LOWERING :
					     TLBB_ST_RAISING);
		failed = true;
	}
}

/*
 * Method safe: a try whose first tick already cost more than hill_retry_pm
 * above the best is judged at once (its window ends early): a bad try
 * costs one tick, not a window.
 */
static bool tlbb_safe_clearly_worse(const struct tlbb_ctrl *c)
{
	u64 best = c->hill_best_cost;

	return c->p.method == TLBB_METHOD_SAFE &&
	       c->safe_phase == TLBB_SAFE_SEARCH &&
	       c->win_est / c->nsamples > best +
	       tlbb_mul_div_cap(best, c->p.hill_retry_pm, 1000, ~0ULL);
}

/* Method safe: a full window (the state machine above). */
static enum tlbb_action tlbb_safe_decide(struct tlbb_ctrl *c, u64 huge_in_use)
{
	enum tlbb_group g = tlbb_window_end(c);
	u64 cost = c->est_cost, held = c->hill_held_cost, best, dist;
	u64 first = c->p.hill_first_step_pm;

	switch (c->safe_phase) {
	case TLBB_SAFE_SEARCH:
		/* a raise gets one more window for its pages to form */
		if (c->hill_dir == TLBB_G_SMALL && huge_in_use < c->limit &&
		    !c->safe_waited) {
			c->safe_waited = true;
			c->state = TLBB_ST_FORMING;
			return TLBB_ACT_NONE;
		}
		c->safe_waited = false;
		best = c->hill_best_cost;
		if (cost >= best - tlbb_mul_div_cap(best, c->p.hill_gain_pm,
						    1000, best))
			return tlbb_safe_next(c, true);	/* undo */
		c->hill_best_cost = cost;
		c->hill_best_limit = c->limit;
		c->safe_pref = c->hill_dir;
		c->safe_flipped = true;	/* not back to where it came from */
		return tlbb_safe_next(c, false);
	case TLBB_SAFE_REF:
		c->hill_held_cost = cost;
		c->safe_phase = TLBB_SAFE_HOLD;
		c->state = TLBB_ST_HOLDING;
		return TLBB_ACT_NONE;
	case TLBB_SAFE_HOLD:
		dist = cost > held ? cost - held : held - cost;
		if (dist > tlbb_mul_div_cap(held, c->p.hill_retry_pm, 1000,
					    ~0ULL))
			c->safe_probe = tlbb_safe_windows(c, c->p.probe_ms);
		else if (++c->safe_held < c->safe_probe) {
			c->state = TLBB_ST_HOLDING;
			return TLBB_ACT_NONE;
		} else {
			g = TLBB_G_NONE;	/* a probe: upward only */
		}
		break;
	default:	/* the load (re)started: search the whole range */
		c->safe_probe = tlbb_safe_windows(c, c->p.probe_ms);
		first = c->p.safe_first_step_pm;
		break;
	}
	if (c->monitor_only) {
		c->safe_phase = TLBB_SAFE_NONE;
		c->state = TLBB_ST_MONITOR;
		return TLBB_ACT_NONE;
	}
	c->safe_start = c->limit;
	c->safe_hc = huge_in_use;
	c->hill_best_cost = cost;
	c->hill_best_limit = c->limit;
	c->safe_down_ok = g == TLBB_G_HUGE;
	/* upward first: the safe way back toward no controller */
	c->hill_dir = TLBB_G_SMALL;
	c->safe_pref = TLBB_G_SMALL;
	c->safe_flipped = false;
	c->safe_waited = false;
	c->safe_phase = TLBB_SAFE_SEARCH;
	c->hill_step = tlbb_mul_div_cap(c->total_pages, first, 1000,
					c->total_pages);
	if (!c->hill_step)
		c->hill_step = 1;
	return tlbb_safe_next(c, false);
}

enum tlbb_action tlbb_ctrl_tick(struct tlbb_ctrl *c,
				const struct tlbb_input *in)
{
	enum tlbb_action act = TLBB_ACT_NONE, dec;
	u64 trig = c->trigger;

	c->ticks++;
	/* A floor raised mid-run lifts the limit (never in monitor mode). */
	if (!c->monitor_only && c->limit < tlbb_floor(c)) {
		c->limit = tlbb_floor(c);
		c->raised++;
		act = TLBB_ACT_RAISE;
	}

	c->load_pm_milli = tlbb_load_milli(&c->p, in);
	if (c->load_pm_milli <= c->p.load_threshold_pm * 1000) {
		if (c->load_count >= trig)	/* load gone while counting */
			c->load_count = 0;
		else if (c->load_count)
			c->load_count--;
		tlbb_window_clear(c);
		c->run_dir = TLBB_G_NONE;
		c->hill_step = 0;	/* a search ends; its limit holds */
		/* method safe: from its try back to the best limit measured */
		if (c->safe_phase == TLBB_SAFE_SEARCH)
			act = tlbb_hill_set(c, c->hill_best_limit,
					    TLBB_ST_IDLE);
		c->safe_phase = TLBB_SAFE_NONE;
		c->state = TLBB_ST_IDLE;
		return act;
	}
	if (c->load_count < trig) {
		c->load_count++;
		c->state = TLBB_ST_SUSTAIN;
		return act;
	}

	if (c->state == TLBB_ST_IDLE || c->state == TLBB_ST_SUSTAIN ||
	    c->state == TLBB_ST_FORMING)
		c->state = TLBB_ST_COUNTING;
	tlbb_sample(c, in);
	/* The array bounds the window even if c->p was written directly. */
	if (c->nsamples < c->p.samples && c->nsamples < TLBB_MAX_SAMPLES &&
	    !tlbb_safe_clearly_worse(c))
		return act;
	if (c->p.method == TLBB_METHOD_HILL)
		dec = tlbb_hill_decide(c, in->huge_in_use);
	else if (c->p.method == TLBB_METHOD_SAFE)
		dec = tlbb_safe_decide(c, in->huge_in_use);
	else
		dec = tlbb_decide(c, in->huge_in_use);
	return dec != TLBB_ACT_NONE ? dec : act;
}

u64 tlbb_split_order(const struct tlbb_params *p)
{
	if (p->method == TLBB_METHOD_SAFE && p->safe_split_heat &&
	    p->split_order == TLBB_SPLIT_ADDRESS)
		return TLBB_SPLIT_HEAT;
	return p->split_order;
}

u8 tlbb_heat_fold(u8 heat, bool young)
{
	if (!young)
		return heat >> 1;
	return heat > 255 - TLBB_HEAT_STEP ? 255 : heat + TLBB_HEAT_STEP;
}

u64 tlbb_heat_windows(const struct tlbb_params *p, u64 window_ms)
{
	u64 fit;

	if (!p->heat_window_ms || p->heat_window_ms >= p->interval_ms)
		return 0;
	if (window_ms < p->heat_window_ms)
		window_ms = p->heat_window_ms;
	fit = p->interval_ms / (2 * window_ms);
	if (!fit)
		fit = 1;
	return p->heat_samples < fit ? p->heat_samples : fit;
}

const char *tlbb_state_name(enum tlbb_state s)
{
	switch (s) {
	case TLBB_ST_IDLE:
		return "idle";
	case TLBB_ST_SUSTAIN:
		return "sustain";
	case TLBB_ST_COUNTING:
		return "counting";
	case TLBB_ST_LOWERING:
		return "lowering";
	case TLBB_ST_RAISING:
		return "raising";
	case TLBB_ST_FORMING:
		return "forming";
	case TLBB_ST_MONITOR:
		return "monitor";
	case TLBB_ST_HOLDING:
		return "holding";
	default:
		return "unknown";
	}
}

const char *tlbb_group_name(enum tlbb_group g)
{
	switch (g) {
	case TLBB_G_NONE:
		return "none";
	case TLBB_G_HUGE:
		return "huge";
	case TLBB_G_SMALL:
		return "small";
	default:
		return "unknown";
	}
}
