// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Cost of the controller per VM per tick: 1000 controllers (VMs) ticked
 * with varied inputs. Run under `valgrind --tool=callgrind
 * --toggle-collect=tlbb_ctrl_tick` (bench/run.sh) so that only the work
 * inside tlbb_ctrl_tick() is counted; natively it also prints ns per tick.
 *
 * Usage: bench_ctrl idle|mixed|worst|hill [vms] [ticks]
 *   idle   every VM below the load threshold: the common case on a host
 *   mixed  every VM its own workload: the paper's mcf case, load on the
 *          small group, idle, noise around the thresholds, phase changes,
 *          monitor-only VMs; default parameters (10 s sustain, 3 samples)
 *   worst  every VM samples and decides on every tick (sustain 0,
 *          1 sample), huge counts that take the 128-bit path
 *   hill   the mixed workloads under method hill (method=1, its 1 s
 *          sustain): searches, holds and new searches at phase changes
 * Prints the number of ticks run and how they ended, for the script to
 * divide by.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tlbb_ctrl.h"
#include "../tests/xorshift.h"

struct vm {
	struct tlbb_ctrl c;
	u64 in_use;
	unsigned int kind;
};

static u64 rng_state = 0x2545f4914f6cdd1dULL;

static u64 rng(void)
{
	return xorshift64(&rng_state);
}

/* This tick's counts for a VM of workload @kind at tick @t. */
static void workload(unsigned int kind, u64 t, struct tlbb_input *in)
{
	u64 noise = rng() % 1000;

	switch (kind) {
	case 0:		/* mcf: huge group ~2.18 M/s, small < 450/s */
		in->refills_huge = 218000 + noise;
		in->refills_small = noise % 45;
		break;
	case 1:		/* the load sits on the small group */
		in->refills_huge = noise % 20;
		in->refills_small = 200000 + noise;
		break;
	case 2:		/* idle VM */
		in->refills_huge = noise % 5;
		in->refills_small = noise % 50;
		break;
	case 3:		/* around the load threshold (40 000 / tick) */
		in->refills_huge = 30000 + rng() % 20000;
		in->refills_small = rng() % 2000;
		break;
	case 4:		/* phase changes every 30 s */
		if (t / 300 % 2) {
			in->refills_huge = 218000 + noise;
			in->refills_small = noise % 45;
		} else {
			in->refills_huge = noise % 20;
			in->refills_small = 200000 + noise;
		}
		break;
	default:	/* balanced, loaded: y near 1 */
		in->refills_huge = 50000 + noise;
		in->refills_small = 1600000 + noise * 32;
		break;
	}
}

int main(int argc, char **argv)
{
	unsigned long nvms = 1000, nticks = 1000, i, t;
	u64 acted = 0, states[TLBB_ST_COUNT] = { 0 }, decisions = 0;
	struct tlbb_params p;
	struct timespec t0, t1;
	struct vm *vms;
	int worst, idle;
	double ns;

	if (argc < 2 || (strcmp(argv[1], "idle") &&
			 strcmp(argv[1], "mixed") && strcmp(argv[1], "worst") &&
			 strcmp(argv[1], "hill"))) {
		fprintf(stderr, "usage: %s idle|mixed|worst|hill [vms] [ticks]\n",
			argv[0]);
		return 2;
	}
	worst = !strcmp(argv[1], "worst");
	idle = !strcmp(argv[1], "idle");
	if (argc > 2)
		nvms = strtoul(argv[2], NULL, 10);
	if (argc > 3)
		nticks = strtoul(argv[3], NULL, 10);
	vms = calloc(nvms, sizeof(*vms));
	if (!vms || !nvms || !nticks) {
		fprintf(stderr, "bad vms/ticks or out of memory\n");
		return 2;
	}

	tlbb_params_default(&p);
	if (!strcmp(argv[1], "hill"))
		p.method = TLBB_METHOD_HILL;
	if (worst) {
		p.sustain_ms = 0;
		p.samples = 1;
	}
	for (i = 0; i < nvms; i++) {
		vms[i].kind = i % 6;
		vms[i].in_use = 16384;	/* 32 GiB of 2 MiB pages */
		tlbb_ctrl_init(&vms[i].c, &p, 16384, i % 10 == 0);
	}

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (t = 0; t < nticks; t++) {
		for (i = 0; i < nvms; i++) {
			struct vm *vm = &vms[i];
			struct tlbb_input in;

			if (worst) {
				in.refills_huge = (1ULL << 41) + rng() % 1000;
				in.refills_small = (t & 1) ? 1 : (1ULL << 50);
			} else {
				workload(idle ? 2 : vm->kind, t, &in);
			}
			in.huge_in_use = vm->in_use;
			in.nr_vcpus = 1 + i % 4;
			acted += tlbb_ctrl_tick(&vm->c, &in) != TLBB_ACT_NONE;
			/* The limiter splits at once; pages re-form slowly. */
			if (vm->in_use > vm->c.limit)
				vm->in_use = vm->c.limit;
			else if (vm->in_use < vm->c.limit && t % 7 == 0)
				vm->in_use++;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);

	for (i = 0; i < nvms; i++) {
		states[vms[i].c.state]++;
		decisions += vms[i].c.decisions;
	}
	ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
	printf("scenario %s: %lu VMs x %lu ticks = %lu ticks\n", argv[1],
	       nvms, nticks, nvms * nticks);
	printf("ticks %lu\n", nvms * nticks);
	printf("decisions %llu (full windows), limit changes %llu\n",
	       (unsigned long long)decisions, (unsigned long long)acted);
	printf("end states:");
	for (i = 0; i < TLBB_ST_COUNT; i++)
		printf(" %s=%llu", tlbb_state_name(i),
		       (unsigned long long)states[i]);
	printf("\nwall clock (this run, incl. input generation): "
	       "%.1f ns per tick\n", ns / (nvms * nticks));
	free(vms);
	return 0;
}
