// SPDX-License-Identifier: GPL-2.0
/*
 * Refill counting: which backend feeds a VM's controller.
 *
 * The PMU backend (tlbb_counter_pmu.c) is tried whenever a VM starts
 * monitoring. When it is unavailable the reason is kept in backend_desc
 * ("unavailable: ...") and the controller stays idle: no tick is run on
 * made-up numbers. Injection (debugfs, allow_inject=1 only) overrides both
 * and is reported as "inject" in the backend attribute.
 */
#include <linux/string.h>

#include "tlbb.h"

void tlbb_counter_start(struct tlbb_vm *vm)
{
	vm->backend = NULL;
	if (!tlbb_counter_pmu_ops.start(vm))
		vm->backend = &tlbb_counter_pmu_ops;
}

/* Refills of the last tick; false when nothing counts them. */
bool tlbb_counter_read(struct tlbb_vm *vm, u64 *huge, u64 *small)
{
	if (vm->inject) {
		/* rates are per second, the tick is interval_ms long */
		*huge = div_u64(vm->inject_huge * vm->params.interval_ms, 1000);
		*small = div_u64(vm->inject_small * vm->params.interval_ms,
				 1000);
		return true;
	}
	if (!vm->backend)
		return false;
	vm->backend->read(vm, huge, small);
	return true;
}

void tlbb_counter_stop(struct tlbb_vm *vm)
{
	if (vm->backend)
		vm->backend->stop(vm);
	vm->backend = NULL;
}
