/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * The shared helper of the controller tests: a VM as the module sees it.
 *
 * struct test_vm holds a controller plus what the caller owns: the huge pages
 * in use (N_hc) and the vCPU count. test_vm_tick() feeds one tick of refill
 * counts and then plays the THP limiter: huge pages above the limit are split
 * at once (N_hc = min(N_hc, N_hl)). Huge pages form again only when a test
 * says so (test_vm_form), or at once when vm->instant_forming is set.
 */
#ifndef TLBB_TEST_VM_HELPER_H
#define TLBB_TEST_VM_HELPER_H

#include "../tlbb_ctrl.h"

struct test_vm {
	struct tlbb_ctrl c;
	u64 huge_in_use;
	u32 nr_vcpus;
	bool instant_forming;
	u64 lowers, raises;	/* actions returned, counted by the helper */
};

/* The paper's mcf case per 100 ms tick: huge ~2.18 M/s, small < 450/s. */
#define MCF_HUGE_PER_TICK	218000ULL
#define MCF_SMALL_PER_TICK	44ULL
/* The same load moved onto the small group. */
#define SMALLLOAD_HUGE_PER_TICK	10ULL
#define SMALLLOAD_SMALL_PER_TICK 218000ULL

/* A tunable's bounds, from tlbb_params.def: never restated in a test. */
#define PARAM_MIN(name)	(tlbb_param_descs[TLBB_P_##name].min)
#define PARAM_MAX(name)	(tlbb_param_descs[TLBB_P_##name].max)

/* Defaults from tlbb_params.def (checked by the params tests). */
void test_params(struct tlbb_params *p);
/* A VM of @total huge pages, all of them huge and in use. */
void test_vm_init(struct test_vm *vm, const struct tlbb_params *p,
		  u64 total, bool monitor_only);
enum tlbb_action test_vm_tick(struct test_vm *vm, u64 huge, u64 small);
/* @n ticks of the same counts; returns the number of ticks that acted. */
u64 test_vm_ticks(struct test_vm *vm, u64 n, u64 huge, u64 small);
/* Let up to @n huge pages form again (never above the limit). */
void test_vm_form(struct test_vm *vm, u64 n);

#endif /* TLBB_TEST_VM_HELPER_H */
