// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
#include "vm_helper.h"
#include "test_harness.h"

void test_params(struct tlbb_params *p)
{
	tlbb_params_default(p);
	TEST_ASSERT(!tlbb_params_check(p), "defaults fail their own check");
}

void test_vm_init(struct test_vm *vm, const struct tlbb_params *p,
		  u64 total, bool monitor_only)
{
	tlbb_ctrl_init(&vm->c, p, total, monitor_only);
	vm->huge_in_use = total;
	vm->nr_vcpus = 1;
	vm->instant_forming = false;
	vm->lowers = 0;
	vm->raises = 0;
}

enum tlbb_action test_vm_tick(struct test_vm *vm, u64 huge, u64 small)
{
	struct tlbb_input in = {
		.refills_huge = huge,
		.refills_small = small,
		.huge_in_use = vm->huge_in_use,
		.nr_vcpus = vm->nr_vcpus,
	};
	u64 before = vm->c.limit;
	enum tlbb_action act = tlbb_ctrl_tick(&vm->c, &in);

	/* The action must say what happened to the limit. */
	switch (act) {
	case TLBB_ACT_NONE:
		TEST_ASSERT_EQ(vm->c.limit, before);
		break;
	case TLBB_ACT_LOWER:
		TEST_ASSERT(vm->c.limit < before, "LOWER raised %llu -> %llu",
			    (unsigned long long)before,
			    (unsigned long long)vm->c.limit);
		vm->lowers++;
		break;
	case TLBB_ACT_RAISE:
		TEST_ASSERT(vm->c.limit > before, "RAISE lowered %llu -> %llu",
			    (unsigned long long)before,
			    (unsigned long long)vm->c.limit);
		vm->raises++;
		break;
	}
	TEST_ASSERT(vm->c.limit <= vm->c.total_pages, "limit %llu > total",
		    (unsigned long long)vm->c.limit);
	if (vm->c.monitor_only)		/* monitor-only never moves it */
		TEST_ASSERT_EQ(vm->c.limit, before);
	/* The THP limiter: split what is above the limit. */
	if (vm->huge_in_use > vm->c.limit)
		vm->huge_in_use = vm->c.limit;
	if (vm->instant_forming)
		vm->huge_in_use = vm->c.limit;
	return act;
}

u64 test_vm_ticks(struct test_vm *vm, u64 n, u64 huge, u64 small)
{
	u64 acted = 0;

	while (n--)
		acted += test_vm_tick(vm, huge, small) != TLBB_ACT_NONE;
	return acted;
}

void test_vm_form(struct test_vm *vm, u64 n)
{
	vm->huge_in_use += n;
	if (vm->huge_in_use > vm->c.limit)
		vm->huge_in_use = vm->c.limit;
}
