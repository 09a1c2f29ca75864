/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * The balance controller: one pure C core, no kernel headers.
 *
 * Compiled into tlbbalance.ko, into the userspace library used by the unit
 * tests (kernel-module/core/tests) and into the simulator (tlbsim/). Integer
 * arithmetic only (the kernel has no FPU in this context). Every constant is a
 * field of struct tlbb_params, whose list lives in tlbb_params.def.
 *
 * The caller owns time and memory management: once per tick it passes what
 * it measured (struct tlbb_input) and applies the limit the core returns.
 */
#ifndef TLBB_CTRL_H
#define TLBB_CTRL_H

#include "tlbb_types.h"

#define TLBB_MAX_SAMPLES 64

/*
 * Fixed-point caps (x1000 values). The load estimate is a share of the
 * vCPUs' time, so it never exceeds 1000 permille; y saturates at one
 * billion (also its value when one group has refills and the other none).
 */
#define TLBB_LOAD_MAX_MILLI	1000000ULL
#define TLBB_Y_MAX_MILLI	1000000000000ULL
#define TLBB_Y_BALANCED_MILLI	1000ULL	/* y when both groups are idle */

struct tlbb_params {
#define TLBB_PARAM(name, def, min, max, unit, help) u64 name;
#include "tlbb_params.def"
#undef TLBB_PARAM
};

/* Index of each parameter, in .def order. */
enum tlbb_param_id {
#define TLBB_PARAM(name, def, min, max, unit, help) TLBB_P_##name,
#include "tlbb_params.def"
#undef TLBB_PARAM
	TLBB_P_COUNT
};

/*
 * Values of the enumerated tunables (split_order: which huge pages the
 * limiter, module and simulator, splits first; method: the controller's
 * method), from tlbb_choices.def: TLBB_SPLIT_ADDRESS, TLBB_METHOD_HILL, ...
 */
#define TLBB_CHOICE_split_order(id, value) TLBB_##id = (value),
#define TLBB_CHOICE_method(id, value)
#define TLBB_CHOICE(param, id, value, name, help) \
	TLBB_CHOICE_##param(id, value)
enum tlbb_split_order {
#include "tlbb_choices.def"
};
#undef TLBB_CHOICE_split_order
#undef TLBB_CHOICE_method
#define TLBB_CHOICE_split_order(id, value)
#define TLBB_CHOICE_method(id, value) TLBB_##id = (value),
enum tlbb_method {
#include "tlbb_choices.def"
};
#undef TLBB_CHOICE_split_order
#undef TLBB_CHOICE_method
#undef TLBB_CHOICE

/* One named value of an enumerated tunable (tlbb_choices.def). */
struct tlbb_choice_desc {
	enum tlbb_param_id param;
	u64 value;
	const char *name, *help;
};

extern const struct tlbb_choice_desc tlbb_choice_descs[];
extern const unsigned int tlbb_choice_count;

/*
 * The value of tunable @id named by the @len bytes at @text (no NUL
 * needed): 0 and *@val set, or -1 when @id has no such name.
 */
int tlbb_choice_parse(enum tlbb_param_id id, const char *text,
		      unsigned long len, u64 *val);
/* The name of value @val of tunable @id, or NULL when it has none. */
const char *tlbb_choice_name(enum tlbb_param_id id, u64 val);

struct tlbb_param_desc {
	const char *name;
	u64 def, min, max;
	const char *unit, *help;
};

extern const struct tlbb_param_desc tlbb_param_descs[TLBB_P_COUNT];

/* Fill @p with the defaults from tlbb_params.def. */
void tlbb_params_default(struct tlbb_params *p);
/* Check every field against its range: 0, or -(1 + id) of the first bad one. */
int tlbb_params_check(const struct tlbb_params *p);
/* Get/set a field by id (for the configfs and tool layers). */
u64 tlbb_param_get(const struct tlbb_params *p, enum tlbb_param_id id);
/* 0 or -ERANGE-like -1 when out of range (then @p is unchanged). */
int tlbb_param_set(struct tlbb_params *p, enum tlbb_param_id id, u64 val);

enum tlbb_state {
	TLBB_ST_IDLE,		/* not loaded (C_L decaying), or a run stopped */
	TLBB_ST_SUSTAIN,	/* load above threshold, C_L rising */
	TLBB_ST_COUNTING,	/* C_L reached: sampling y per tick */
	TLBB_ST_LOWERING,	/* huge group dominates: N_hl stepping down */
	TLBB_ST_RAISING,	/* small dominates, N_hc >= N_hl: N_hl up */
	TLBB_ST_FORMING,	/* small dominates, N_hc < N_hl: wait, reset */
	TLBB_ST_MONITOR,	/* monitor-only: y computed, limit untouched */
	TLBB_ST_HOLDING,	/* method hill: converged, limit held */
	TLBB_ST_COUNT
};

enum tlbb_group { TLBB_G_NONE, TLBB_G_HUGE, TLBB_G_SMALL };

/* What the caller measured over the last tick. */
struct tlbb_input {
	u64 refills_huge;	/* N_hr over the tick */
	u64 refills_small;	/* N_r - N_hr over the tick */
	u64 huge_in_use;	/* N_hc now */
	u32 nr_vcpus;		/* vCPUs whose refills were counted (0: 1) */
};

struct tlbb_ctrl {
	struct tlbb_params p;
	bool monitor_only;
	u64 total_pages;	/* VM memory in huge pages: the highest limit */
	u64 limit;		/* N_hl */
	enum tlbb_state state;
	u64 load_count;		/* C_L, ticks */
	u64 load_pm_milli;	/* last load estimate, permille x1000 */
	u32 nsamples;
	u64 y_samples[TLBB_MAX_SAMPLES];	/* y x1000 */
	u64 y_milli;		/* last averaged y x1000 */
	enum tlbb_group dominant;	/* last window's, NONE if mixed */
	u64 ticks, lowered, raised;
	/* Added after the first API: the sampling window and the run. */
	enum tlbb_group win_group;	/* group of the window's 1st sample */
	bool win_mixed;			/* window saw other groups too */
	enum tlbb_group run_dir;	/* group acted on in this run */
	u64 decisions;			/* full windows evaluated */
	u64 trigger;			/* tlbb_trigger_ticks(&p), cached */
	/* Method hill (p.method == TLBB_METHOD_HILL): its search. */
	u64 win_cost;		/* refills summed over the window */
	u64 cost;		/* last window's mean refills per tick */
	u64 hill_step;		/* pages per move; 0: no search under way */
	u64 hill_best_cost;	/* lowest mean refills per tick seen */
	u64 hill_best_limit;	/* the limit that gave it */
	u64 hill_held_cost;	/* converged at this cost; 0: not converged */
	enum tlbb_group hill_dir;	/* HUGE: lowering, SMALL: raising */
	/*
	 * Method safe (p.method == TLBB_METHOD_SAFE) shares the search
	 * fields above (with costs in estimated ns per tick) and adds these.
	 */
	u64 win_est;		/* estimated refill ns summed over the window */
	u64 est_cost;		/* last window's mean of it, ns per tick */
	u64 safe_start;		/* the limit the search started from */
	u64 safe_hc;		/* N_hc then: the first step down is from it */
	u64 safe_held;		/* windows held since the search ended */
	u64 safe_probe;		/* hold this many windows, then probe */
	u32 safe_phase;		/* enum tlbb_safe_phase */
	enum tlbb_group safe_pref;	/* way of the last kept move */
	bool safe_down_ok;	/* this search may lower the limit */
	bool safe_flipped;	/* this step tried (or came from) both ways */
	bool safe_waited;	/* a raise got its one window to form */
};

/* Method safe: no search yet, searching, holding (reference pending / set). */
enum tlbb_safe_phase { TLBB_SAFE_NONE, TLBB_SAFE_SEARCH, TLBB_SAFE_REF,
		       TLBB_SAFE_HOLD };

enum tlbb_action { TLBB_ACT_NONE, TLBB_ACT_LOWER, TLBB_ACT_RAISE };

/*
 * Start a controller for a VM of @total_pages huge pages. The limit starts at
 * @total_pages (everything may be huge). @p should have passed
 * tlbb_params_check(); a field out of range is clamped into its range.
 */
void tlbb_ctrl_init(struct tlbb_ctrl *c, const struct tlbb_params *p,
		    u64 total_pages, bool monitor_only);
/*
 * Replace the parameters of a running controller (clamped like init):
 * empties the sampling window and forgets the run's direction; C_L is kept,
 * capped at the new trigger. A floor raised above the limit lifts it at the
 * next tick. Write c->p only through this function.
 */
void tlbb_ctrl_set_params(struct tlbb_ctrl *c, const struct tlbb_params *p);
/*
 * One tick (the method and its state machine: docs/controller.md). Updates
 * c->limit and returns what changed; the caller then enforces c->limit.
 */
enum tlbb_action tlbb_ctrl_tick(struct tlbb_ctrl *c,
				const struct tlbb_input *in);

/*
 * Ticks of sustained load before counting starts: ceil(sustain/interval),
 * with the method's sustain (hill_sustain_ms for method hill).
 */
u64 tlbb_trigger_ticks(const struct tlbb_params *p);
/* One tick's load estimate, permille x1000 (at most TLBB_LOAD_MAX_MILLI). */
u64 tlbb_load_milli(const struct tlbb_params *p, const struct tlbb_input *in);
/* One tick's imbalance y x1000 and the dominant group (NONE on a tie). */
u64 tlbb_imbalance_milli(const struct tlbb_params *p, u64 refills_huge,
			 u64 refills_small, enum tlbb_group *dominant);

/*
 * The split order in force: split_order, except under method safe with
 * safe_split_heat set (the default), where address (split_order's
 * default) means heat. A new name rather than a new split_order value, so
 * that a release that does not know it can ignore it (docs/upgrade.md,
 * "Names only grow").
 */
u64 tlbb_split_order(const struct tlbb_params *p);

/*
 * Heat of a huge page (split_order heat; the module's tlbb_heat.c and
 * tlbsim's split_order.c): a count of the accessed-bit samples that found
 * it used, folded one sample at a time. A young sample adds
 * TLBB_HEAT_STEP (at most 255), an old one halves it: a page used in
 * every window climbs to 255 and stays, one left alone for a window falls
 * by half and needs 128 / TLBB_HEAT_STEP used windows to be back. So it
 * orders pages by how often they are found unused, which a single bit per
 * window cannot do when even the cold pages are touched in most windows.
 */
#define TLBB_HEAT_STEP 2
u8 tlbb_heat_fold(u8 heat, bool young);
/*
 * Heat samples per tick: 0 without a window (heat_window_ms 0 or at least
 * interval_ms: one sample of the whole tick), else heat_samples windows
 * back to back, no more than fit in half the tick (at least one), so that
 * the last ends well before the next tick even when its work runs late.
 * @window_ms is what one window really lasts, if longer than
 * heat_window_ms: in the module a delayed work's whole jiffies (4 ms at
 * HZ=250), in tlbsim heat_window_ms itself.
 */
u64 tlbb_heat_windows(const struct tlbb_params *p, u64 window_ms);

const char *tlbb_state_name(enum tlbb_state s);
const char *tlbb_group_name(enum tlbb_group g);

#endif /* TLBB_CTRL_H */
