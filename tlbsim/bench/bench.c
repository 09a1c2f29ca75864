// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * make bench: simulated accesses per second on one core (thread CPU time,
 * and wall time, which other load on the machine inflates) for the GS464V
 * preset, then one run of 1 G accesses (mcf-like, VM with both THP levels
 * and the controller), timed.
 *
 * TLBSIM_BENCH_ACCESSES (default 100000000) sets the per-case count;
 * TLBSIM_BENCH_BIG (default 1000000000) the long run's, 0 to skip it.
 */
#include <stdlib.h>
#include <string.h>

#include "run.h"

struct bench_case {
	const char *name, *workload;
	enum tlbs_model model;
	int thp1, thp2;
	enum tlbs_ctrl_mode ctrl;
};

static const struct bench_case cases[] = {
	{ "native, huge pages, mcf-like", "mcf", TLBS_NATIVE, 1, 0,
	  TLBS_CTRL_OFF },
	{ "native, base pages, mcf-like", "mcf", TLBS_NATIVE, 0, 0,
	  TLBS_CTRL_OFF },
	{ "VM vz, both THP, sequential", "seq:size=1G", TLBS_VZ, 1, 1,
	  TLBS_CTRL_OFF },
	{ "VM vz, guest THP only, mcf-like", "mcf", TLBS_VZ, 1, 0,
	  TLBS_CTRL_OFF },
	{ "VM vz, both THP, mcf-like", "mcf", TLBS_VZ, 1, 1, TLBS_CTRL_OFF },
	{ "VM vz, both THP + controller, mcf-like", "mcf", TLBS_VZ, 1, 1,
	  TLBS_CTRL_BALANCE },
};

static int one(const struct bench_case *c, u64 accesses, double *cpu,
	       double *wall, u64 *done)
{
	struct tlbs_machine m;
	struct tlbs_workload w;
	struct tlbs_run r;
	char err[256];

	if (tlbs_machine_load(&m, "gs464v", err, sizeof(err)) ||
	    tlbs_workload_parse(&w, c->workload, m.huge_shift, err,
				sizeof(err))) {
		fprintf(stderr, "bench: %s\n", err);
		return -1;
	}
	tlbs_run_defaults(&r, &m, &w);
	r.model = c->model;
	r.thp1 = c->thp1;
	r.thp2 = c->thp2;
	r.ctrl = c->ctrl;
	r.max_accesses = accesses;
	if (tlbs_run_exec(&r, err, sizeof(err))) {
		fprintf(stderr, "bench: %s\n", err);
		return -1;
	}
	*cpu = r.cpu_s;
	*wall = r.wall_s;
	*done = r.u.accesses;
	tlbs_run_free(&r);
	tlbs_workload_free(&w);
	tlbs_machine_free(&m);
	return 0;
}

static u64 env_u64(const char *name, u64 def)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 10) : def;
}

int main(void)
{
	u64 n = env_u64("TLBSIM_BENCH_ACCESSES", 100000000ULL);
	u64 big = env_u64("TLBSIM_BENCH_BIG", 1000000000ULL), done;
	double cpu, wall, min_rate = 0;
	size_t i;

	printf("tlbsim bench: GS464V preset, %llu accesses per case, one "
	       "thread\n", (unsigned long long)n);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (one(&cases[i], n, &cpu, &wall, &done))
			return 1;
		printf("  %-42s %6.1f M accesses/s (CPU)  %6.1f M/s (wall)\n",
		       cases[i].name, done / cpu / 1e6, done / wall / 1e6);
		if (!min_rate || done / cpu < min_rate)
			min_rate = done / cpu;
	}
	printf("slowest case: %.1f M accesses/s per CPU second (target >= "
	       "50)\n", min_rate / 1e6);
	if (big) {
		if (one(&cases[5], big, &cpu, &wall, &done))
			return 1;
		printf("%llu accesses (VM, both THP + controller, mcf-like): "
		       "%.1f s CPU, %.1f s wall (target < 30 s)\n",
		       (unsigned long long)done, cpu, wall);
	}
	return 0;
}
