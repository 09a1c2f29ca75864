// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * The run loop. Simulated time advances by the machine's cost model
 * (access_ns per access, refill_ns per refill, l1_miss_ns per miss that a
 * later group hit). Every interval_ms of simulated time is one controller
 * tick: the refills of the tick, split by the page size of the translation
 * (what a PMU counting walks by size reports), and the host's huge pages in
 * use go into tlbb_ctrl_tick(); the limit it returns is applied to the
 * simulated host mapping at once (split, or restore of split regions).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "run.h"

#define CHUNK 4096
#define HEAT_CHUNK 512	/* accesses per chunk while heat windows run */

static const char *const model_names[] = { "native", "vz", "combined" };
static const char *const ctrl_names[] = { "off", "monitor", "balance" };

void tlbs_run_defaults(struct tlbs_run *r, struct tlbs_machine *m,
		       struct tlbs_workload *w)
{
	memset(r, 0, sizeof(*r));
	r->m = m;
	r->w = w;
	r->model = TLBS_VZ;
	r->fixed_limit = ~0ULL;
	tlbb_params_default(&r->p);
	/* the machine's groups: the controller must use the same sizes */
	r->p.huge_entries = m->ctrl_huge_entries;
	r->p.small_entries = m->ctrl_small_entries;
}

int tlbs_run_set_param(struct tlbs_run *r, const char *name,
		       const char *value, char *err, size_t errlen)
{
	char *end;
	u64 v;
	bool bad;
	int i;

	for (i = 0; i < TLBB_P_COUNT; i++) {
		const struct tlbb_param_desc *d = &tlbb_param_descs[i];

		if (strcmp(d->name, name))
			continue;
		v = strtoull(value, &end, 10);
		bad = !*value || *end;
		if (bad)	/* a named value (tlbb_choices.def)? */
			bad = tlbb_choice_parse((enum tlbb_param_id)i, value,
						strlen(value), &v) != 0;
		if (bad || tlbb_param_set(&r->p, (enum tlbb_param_id)i, v)) {
			snprintf(err, errlen, "param %s=%s: need a decimal "
				 "integer in %llu..%llu (%s)%s", name, value,
				 (unsigned long long)d->min,
				 (unsigned long long)d->max, d->unit,
				 tlbb_choice_name((enum tlbb_param_id)i, d->min) ?
				 " or its name (kernel-module/core/"
				 "tlbb_choices.def)" : "");
			return -1;
		}
		return 0;
	}
	snprintf(err, errlen, "param %s: unknown controller parameter "
		 "(see kernel-module/core/tlbb_params.def)", name);
	return -1;
}

u64 tlbs_run_limit(const struct tlbs_run *r)
{
	u64 total;

	if (r->ctrl != TLBS_CTRL_OFF)
		return r->c.limit;
	total = tlbs_mmu_total_pages(&r->u);
	return r->fixed_limit < total ? r->fixed_limit : total;
}

static double now_s(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* @windows: tlbb_heat_windows() of the run, counted once by the caller */
static void tick(struct tlbs_run *r, double t_ns, u64 *prev, u64 windows)
{
	struct tlbs_mmu *u = &r->u;
	struct tlbb_input in = {
		.refills_huge = u->walks[TLBS_HUGE] - prev[TLBS_HUGE],
		.refills_small = u->walks[TLBS_BASE] - prev[TLBS_BASE],
		.nr_vcpus = 1,
	};
	u64 old = r->c.limit;

	if (u->split_order == TLBS_SPLIT_HEAT)
		tlbs_heat_sample(u, r->p.heat_scan_pmds, windows != 0, 1);
	if (r->fixed_limit != ~0ULL && !r->fixed_limit_applied &&
	    t_ns / 1e9 >= r->fixed_limit_at_s) {
		r->fixed_limit_applied = 1;
		tlbs_mmu_apply_limit(u, tlbs_run_limit(r));
		r->min_limit = tlbs_run_limit(r);
	}
	prev[TLBS_HUGE] = u->walks[TLBS_HUGE];
	prev[TLBS_BASE] = u->walks[TLBS_BASE];
	in.huge_in_use = u->huge_in_use;
	r->ticks++;
	if (r->ctrl != TLBS_CTRL_OFF) {
		tlbb_ctrl_tick(&r->c, &in);
		if (r->c.limit != old) {
			if (!r->limit_changes)
				r->first_change_s = t_ns / 1e9;
			r->limit_changes++;
			r->last_change_s = t_ns / 1e9;
			tlbs_mmu_apply_limit(u, r->c.limit);
			if (r->c.limit < r->min_limit)
				r->min_limit = r->c.limit;
		}
	}
	if (r->series)
		fprintf(r->series, "%.3f,%llu,%llu,%llu,%llu,%s,%.3f,%.3f\n",
			t_ns / 1e9, (unsigned long long)in.refills_huge,
			(unsigned long long)in.refills_small,
			(unsigned long long)u->huge_in_use,
			(unsigned long long)tlbs_run_limit(r),
			r->ctrl ? tlbb_state_name(r->c.state) : "off",
			r->c.load_pm_milli / 1000.0, r->c.y_milli / 1000.0);
}

int tlbs_run_exec(struct tlbs_run *r, char *err, size_t errlen)
{
	u64 *buf = malloc(CHUNK * sizeof(*buf)), prev[TLBS_NCLASS] = { 0 };
	double tick_ns = (double)r->p.interval_ms * 1e6, next = tick_ns, t;
	double t0 = now_s(CLOCK_MONOTONIC), stop_ns = r->max_seconds * 1e9;
	double c0 = now_s(CLOCK_THREAD_CPUTIME_ID);
	/* split_order heat: the tick's windows, back to back, end at it */
	u64 windows = tlbb_heat_windows(&r->p, r->p.heat_window_ms);
	double window_ns = windows ? (double)r->p.heat_window_ms * 1e6 : 0;
	double span_ns = window_ns * windows;
	double win_end = next - span_ns + window_ns;	/* the window's */
	double t_last = 0, dur = 0;
	int heat = r->split_order == TLBS_SPLIT_HEAT, last_dir = 0;
	u64 last_limit;
	u32 n;

	if (!buf) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (r->fixed_limit != ~0ULL && (r->ctrl != TLBS_CTRL_OFF ||
					r->model == TLBS_NATIVE)) {
		free(buf);
		snprintf(err, errlen, "--huge-limit holds the host's huge "
			 "pages in a VM model, with --controller off");
		return -1;
	}
	if (tlbs_mmu_init(&r->u, r->m, r->model, r->w->size, r->thp1,
			  r->thp2, r->hva_offset)) {
		free(buf);
		snprintf(err, errlen, "cannot set up %llu bytes of address "
			 "space", (unsigned long long)r->w->size);
		return -1;
	}
	r->u.split_order = r->split_order;
	tlbs_machine_reset_stats(r->m);
	if (tlbb_params_check(&r->p)) {
		free(buf);
		snprintf(err, errlen, "controller parameter %s out of range",
			 tlbb_param_descs[-tlbb_params_check(&r->p) - 1].name);
		return -1;
	}
	tlbb_ctrl_init(&r->c, &r->p, tlbs_mmu_total_pages(&r->u),
		       r->ctrl == TLBS_CTRL_MONITOR);
	if (r->ctrl == TLBS_CTRL_BALANCE ||
	    (r->fixed_limit != ~0ULL && r->fixed_limit_at_s <= 0)) {
		r->fixed_limit_applied = 1;
		tlbs_mmu_apply_limit(&r->u, tlbs_run_limit(r));
	}
	r->min_limit = tlbs_run_limit(r);
	last_limit = r->c.limit;
	if (r->series)
		fprintf(r->series, "t_s,refills_huge,refills_small,"
			"huge_pages,huge_limit,state,load_pm,imbalance\n");
	for (;;) {
		n = CHUNK;
		/* short chunks while the windows run: each window its own */
		if (heat && windows && t_last + 2 * dur > next - span_ns)
			n = HEAT_CHUNK;
		if (r->max_accesses) {
			if (r->u.accesses >= r->max_accesses)
				break;
			if (r->max_accesses - r->u.accesses < n)
				n = (u32)(r->max_accesses - r->u.accesses);
		}
		n = tlbs_workload_fill(r->w, buf, n);
		if (!n)
			break;
		tlbs_mmu_run(&r->u, buf, n);
		t = tlbs_mmu_time_ns(&r->u);
		dur = t - t_last;
		t_last = t;
		/* accessed bits count from the first window before the tick */
		if (heat && (!window_ns || t > next - span_ns) &&
		    tlbs_heat_mark(&r->u, buf, n)) {
			free(buf);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		/* each window but the last ends in a sample; the tick takes
		 * the last */
		while (heat && windows && win_end < next - window_ns / 2 &&
		       t >= win_end) {
			tlbs_heat_sample(&r->u, r->p.heat_scan_pmds, 1, 0);
			win_end += window_ns;
		}
		while (t >= next) {
			tick(r, next, prev, windows);
			if (r->c.limit != last_limit) {
				int dir = r->c.limit < last_limit ? -1 : 1;

				if (last_dir && dir != last_dir)
					r->reversals++;
				last_dir = dir;
				last_limit = r->c.limit;
			}
			next += tick_ns;
			win_end = next - span_ns + window_ns;
		}
		if (stop_ns > 0 && t >= stop_ns)
			break;
	}
	free(buf);
	r->wall_s = now_s(CLOCK_MONOTONIC) - t0;
	r->cpu_s = now_s(CLOCK_THREAD_CPUTIME_ID) - c0;
	return 0;
}

void tlbs_run_free(struct tlbs_run *r)
{
	tlbs_mmu_free(&r->u);
}

void tlbs_run_json(const struct tlbs_run *r, FILE *f)
{
	const struct tlbs_mmu *u = &r->u;
	const struct tlbs_machine *m = r->m;
	double t = tlbs_mmu_time_ns(u) / 1e9;
	u64 rh = u->walks[TLBS_HUGE], rs = u->walks[TLBS_BASE];
	u32 i;

	fprintf(f, "{\"machine\": \"%s\", \"model\": \"%s\", ", m->name,
		model_names[r->model]);
	fprintf(f, "\"workload\": \"%s\", \"footprint_bytes\": %llu, ",
		r->w->kind, (unsigned long long)r->w->size);
	fprintf(f, "\"thp_guest\": %s, \"thp_host\": %s, "
		"\"hva_offset\": %llu, \"controller\": \"%s\", "
		"\"split_order\": \"%s\", ",
		r->thp1 ? "true" : "false", r->u.thp2 ? "true" : "false",
		(unsigned long long)r->hva_offset, ctrl_names[r->ctrl],
		tlbs_split_order_name(r->split_order));
	fprintf(f, "\"accesses\": %llu, \"est_time_s\": %.6f, ",
		(unsigned long long)u->accesses, t);
	fprintf(f, "\"refills_huge\": %llu, \"refills_small\": %llu, "
		"\"refills_stage2\": %llu, \"l1_misses\": %llu, ",
		(unsigned long long)rh, (unsigned long long)rs,
		(unsigned long long)u->walks[TLBS_WALK_S2_BASE],
		(unsigned long long)u->l1_misses);
	fprintf(f, "\"refills_per_s\": %.1f, \"refills_huge_per_s\": %.1f, "
		"\"refills_small_per_s\": %.1f, ",
		t > 0 ? (rh + rs) / t : 0.0, t > 0 ? rh / t : 0.0,
		t > 0 ? rs / t : 0.0);
	fprintf(f, "\"refill_share\": %.6f, ",
		t > 0 ? tlbs_mmu_refill_time_ns(u) / 1e9 / t : 0.0);
	fprintf(f, "\"total_pages\": %llu, \"huge_pages\": %llu, "
		"\"huge_limit\": %llu, \"min_limit\": %llu, "
		"\"splits\": %llu, \"restores\": %llu, ",
		(unsigned long long)tlbs_mmu_total_pages(u),
		(unsigned long long)u->huge_in_use,
		(unsigned long long)tlbs_run_limit(r),
		(unsigned long long)r->min_limit,
		(unsigned long long)u->splits,
		(unsigned long long)u->restores);
	fprintf(f, "\"ticks\": %llu, \"limit_changes\": %llu, "
		"\"reversals\": %llu, ", (unsigned long long)r->ticks,
		(unsigned long long)r->limit_changes,
		(unsigned long long)r->reversals);
	if (r->limit_changes)
		fprintf(f, "\"first_change_s\": %.3f, "
			"\"converged_s\": %.3f, ", r->first_change_s,
			r->last_change_s);
	else
		fprintf(f, "\"first_change_s\": null, \"converged_s\": null, ");
	fprintf(f, "\"ctrl_state\": \"%s\", \"ctrl_lowered\": %llu, "
		"\"ctrl_raised\": %llu, ", tlbb_state_name(r->c.state),
		(unsigned long long)r->c.lowered,
		(unsigned long long)r->c.raised);
	fprintf(f, "\"params\": {");
	for (i = 0; i < TLBB_P_COUNT; i++)
		fprintf(f, "%s\"%s\": %llu", i ? ", " : "",
			tlbb_param_descs[i].name, (unsigned long long)
			tlbb_param_get(&r->p, (enum tlbb_param_id)i));
	fprintf(f, "}, \"groups\": [");
	for (i = 0; i < m->ngroups; i++) {
		const struct tlbs_group *g = &m->g[i];

		fprintf(f, "%s{\"name\": \"%s\", \"entries\": %u, "
			"\"ways\": %u, \"replace\": \"%s\", \"hits\": %llu, "
			"\"misses\": %llu, \"fills\": %llu}", i ? ", " : "",
			g->name, g->entries, g->ways, tlbs_repl_name(g->repl),
			(unsigned long long)g->hits,
			(unsigned long long)g->misses,
			(unsigned long long)g->fills);
	}
	fprintf(f, "], \"wall_s\": %.3f, \"cpu_s\": %.3f, "
		"\"accesses_per_cpu_s\": %.0f, \"ctrl_sha256\": \"%s\"}\n",
		r->wall_s, r->cpu_s,
		r->cpu_s > 0 ? u->accesses / r->cpu_s : 0.0, tlbs_ctrl_sha256);
}
