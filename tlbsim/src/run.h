/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * One simulation run: a workload through a machine's TLBs, in simulated
 * time, with the module's controller (kernel-module/core/tlbb_ctrl.c, the
 * same source file) ticking on the simulated refill counts.
 */
#ifndef TLBSIM_RUN_H
#define TLBSIM_RUN_H

#include "tlbsim.h"
#include "tlbb_ctrl.h"

enum tlbs_ctrl_mode { TLBS_CTRL_OFF, TLBS_CTRL_MONITOR, TLBS_CTRL_BALANCE };

struct tlbs_run {
	/* what to run */
	struct tlbs_machine *m;
	struct tlbs_workload *w;
	enum tlbs_model model;
	int thp1, thp2;
	u64 hva_offset;
	enum tlbs_ctrl_mode ctrl;
	struct tlbb_params p;
	u64 max_accesses;	/* 0: no limit */
	double max_seconds;	/* simulated; 0: no limit */
	enum tlbs_split_order split_order;
	u64 fixed_limit;	/* host huge pages held all run, controller
				 * off (--huge-limit); ~0: none */
	double fixed_limit_at_s;	/* ...from this simulated time on
					 * (--huge-limit-at; 0: from the
					 * start, before any fault) */
	int fixed_limit_applied;
	FILE *series;		/* CSV, one line per tick, or NULL */
	/* results */
	struct tlbs_mmu u;
	struct tlbb_ctrl c;
	u64 ticks;
	u64 limit_changes, reversals;
	double first_change_s, last_change_s;
	u64 min_limit;
	double wall_s, cpu_s;
};

/* Fill @r's defaults (controller params from the .def and the machine). */
void tlbs_run_defaults(struct tlbs_run *r, struct tlbs_machine *m,
		       struct tlbs_workload *w);
/* Set a controller parameter by name; -1 with a message naming it. */
int tlbs_run_set_param(struct tlbs_run *r, const char *name,
		       const char *value, char *err, size_t errlen);
int tlbs_run_exec(struct tlbs_run *r, char *err, size_t errlen);
/* The host huge-page limit in force: the controller's, or the held one. */
u64 tlbs_run_limit(const struct tlbs_run *r);
void tlbs_run_free(struct tlbs_run *r);
/* The summary as one JSON object. */
void tlbs_run_json(const struct tlbs_run *r, FILE *f);

/* SHA-256 of the controller source this binary was built from. */
extern const char tlbs_ctrl_source[];
extern const char tlbs_ctrl_sha256[];

#endif /* TLBSIM_RUN_H */
