/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints of tlbbalance.ko (system "tlbbalance"), in the style of
 * DAMON's include/trace/events/damon.h: the controller's decision of every
 * tick, the limit stepping down or up, and what the THP limiter did about
 * it (split, restore, error). Emitted where the module applies the core's
 * decision (tlbb_vm.c, tlbb_thp.c); the pure C core (core/) stays free of
 * kernel headers. Every event names the VM by its configfs directory and
 * the QEMU pid, so one VM can be followed with a filter ('vm == "x"').
 * Events and fields: docs/kernel-module.md, "Tracepoints".
 *
 * CREATE_TRACE_POINTS is defined in tlbb_vm.c only. The header lives
 * outside include/trace/events, so TRACE_INCLUDE_PATH points here (the
 * Kbuild adds -I$(src)).
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM tlbbalance

#if !defined(_TLBB_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TLBB_TRACE_H

#include <linux/pid.h>
#include <linux/tracepoint.h>

#include "tlbb.h"

/* Numbers, not only names, in the format files for perf and trace-cmd. */
TRACE_DEFINE_ENUM(TLBB_ST_IDLE);
TRACE_DEFINE_ENUM(TLBB_ST_SUSTAIN);
TRACE_DEFINE_ENUM(TLBB_ST_COUNTING);
TRACE_DEFINE_ENUM(TLBB_ST_LOWERING);
TRACE_DEFINE_ENUM(TLBB_ST_RAISING);
TRACE_DEFINE_ENUM(TLBB_ST_FORMING);
TRACE_DEFINE_ENUM(TLBB_ST_MONITOR);
TRACE_DEFINE_ENUM(TLBB_G_NONE);
TRACE_DEFINE_ENUM(TLBB_G_HUGE);
TRACE_DEFINE_ENUM(TLBB_G_SMALL);
TRACE_DEFINE_ENUM(TLBB_ACT_NONE);
TRACE_DEFINE_ENUM(TLBB_ACT_LOWER);
TRACE_DEFINE_ENUM(TLBB_ACT_RAISE);

/*
 * Every event starts with the VM's name and pid: a fixed array, not
 * __string (__assign_str() changed its arguments in 6.10).
 */
#define tlbb_trace_vm_assign(v)					\
	do {								\
		strscpy(__entry->vm, (v)->name, sizeof(__entry->vm));	\
		__entry->pid = pid_nr((v)->pid);			\
	} while (0)

/* One controller tick: what the core measured and decided. */
TRACE_EVENT(tlbb_decision,
	TP_PROTO(struct tlbb_vm *vm, const struct tlbb_input *in,
		 u64 old_limit, enum tlbb_action act),
	TP_ARGS(vm, in, old_limit, act),
	TP_STRUCT__entry(
		__array(char, vm, TLBB_NAME_MAX + 1)
		__field(int, pid)
		__field(u64, refills_huge)
		__field(u64, refills_small)
		__field(u64, huge_pages)
		__field(u64, load_milli)
		__field(u64, y_milli)
		__field(u64, load_count)
		__field(u64, old_limit)
		__field(u64, limit)
		__field(int, state)
		__field(int, dominant)
		__field(int, action)
	),
	TP_fast_assign(
		tlbb_trace_vm_assign(vm);
		__entry->refills_huge = in->refills_huge;
		__entry->refills_small = in->refills_small;
		__entry->huge_pages = in->huge_in_use;
		__entry->load_milli = vm->ctrl.load_pm_milli;
		__entry->y_milli = vm->ctrl.y_milli;
		__entry->load_count = vm->ctrl.load_count;
		__entry->old_limit = old_limit;
		__entry->limit = vm->ctrl.limit;
		__entry->state = vm->ctrl.state;
		__entry->dominant = vm->ctrl.dominant;
		__entry->action = act;
	),
	TP_printk("vm=%s pid=%d action=%s state=%s limit=%llu->%llu huge_pages=%llu refills_huge=%llu refills_small=%llu load_pm_milli=%llu load_count=%llu y_milli=%llu dominant=%s",
		  __entry->vm, __entry->pid,
		  __print_symbolic(__entry->action, { TLBB_ACT_NONE, "none" },
				   { TLBB_ACT_LOWER, "lower" },
				   { TLBB_ACT_RAISE, "raise" }),
		  __print_symbolic(__entry->state, { TLBB_ST_IDLE, "idle" },
				   { TLBB_ST_SUSTAIN, "sustain" },
				   { TLBB_ST_COUNTING, "counting" },
				   { TLBB_ST_LOWERING, "lowering" },
				   { TLBB_ST_RAISING, "raising" },
				   { TLBB_ST_FORMING, "forming" },
				   { TLBB_ST_MONITOR, "monitor" }),
		  __entry->old_limit, __entry->limit, __entry->huge_pages,
		  __entry->refills_huge, __entry->refills_small,
		  __entry->load_milli, __entry->load_count, __entry->y_milli,
		  __print_symbolic(__entry->dominant, { TLBB_G_NONE, "none" },
				   { TLBB_G_HUGE, "huge" },
				   { TLBB_G_SMALL, "small" }))
);

/* The limit N_hl moved: tlbb_step_down (lower) or tlbb_step_up (raise). */
DECLARE_EVENT_CLASS(tlbb_limit_step,
	TP_PROTO(struct tlbb_vm *vm, u64 old_limit, u64 huge_pages),
	TP_ARGS(vm, old_limit, huge_pages),
	TP_STRUCT__entry(
		__array(char, vm, TLBB_NAME_MAX + 1)
		__field(int, pid)
		__field(u64, old_limit)
		__field(u64, limit)
		__field(u64, huge_pages)
		__field(u64, total_pages)
		__field(u64, y_milli)
	),
	TP_fast_assign(
		tlbb_trace_vm_assign(vm);
		__entry->old_limit = old_limit;
		__entry->limit = vm->ctrl.limit;
		__entry->huge_pages = huge_pages;
		__entry->total_pages = vm->ctrl.total_pages;
		__entry->y_milli = vm->ctrl.y_milli;
	),
	TP_printk("vm=%s pid=%d limit=%llu->%llu huge_pages=%llu total_pages=%llu y_milli=%llu",
		  __entry->vm, __entry->pid, __entry->old_limit,
		  __entry->limit, __entry->huge_pages, __entry->total_pages,
		  __entry->y_milli)
);

DEFINE_EVENT(tlbb_limit_step, tlbb_step_down,
	TP_PROTO(struct tlbb_vm *vm, u64 old_limit, u64 huge_pages),
	TP_ARGS(vm, old_limit, huge_pages)
);

DEFINE_EVENT(tlbb_limit_step, tlbb_step_up,
	TP_PROTO(struct tlbb_vm *vm, u64 old_limit, u64 huge_pages),
	TP_ARGS(vm, old_limit, huge_pages)
);

/* The limiter split huge PMDs down toward the limit (one event a tick). */
TRACE_EVENT(tlbb_split,
	TP_PROTO(struct tlbb_vm *vm, u64 limit, u64 before, u64 split,
		 u64 after),
	TP_ARGS(vm, limit, before, split, after),
	TP_STRUCT__entry(
		__array(char, vm, TLBB_NAME_MAX + 1)
		__field(int, pid)
		__field(u64, limit)
		__field(u64, before)
		__field(u64, split)
		__field(u64, after)
		__field(u64, splits_total)
	),
	TP_fast_assign(
		tlbb_trace_vm_assign(vm);
		__entry->limit = limit;
		__entry->before = before;
		__entry->split = split;
		__entry->after = after;
		__entry->splits_total = vm->lim.splits;
	),
	TP_printk("vm=%s pid=%d limit=%llu huge_pages=%llu->%llu split=%llu splits_total=%llu",
		  __entry->vm, __entry->pid, __entry->limit, __entry->before,
		  __entry->after, __entry->split, __entry->splits_total)
);

/* The hold was lifted: VM_NOHUGEPAGE cleared, huge pages may form again. */
TRACE_EVENT(tlbb_restore,
	TP_PROTO(struct tlbb_vm *vm, unsigned int held, unsigned int cleared),
	TP_ARGS(vm, held, cleared),
	TP_STRUCT__entry(
		__array(char, vm, TLBB_NAME_MAX + 1)
		__field(int, pid)
		__field(u64, limit)
		__field(u64, huge_pages)
		__field(unsigned int, held)
		__field(unsigned int, cleared)
	),
	TP_fast_assign(
		tlbb_trace_vm_assign(vm);
		__entry->limit = vm->ctrl.limit;
		__entry->huge_pages = vm->huge_pages;
		__entry->held = held;
		__entry->cleared = cleared;
	),
	TP_printk("vm=%s pid=%d limit=%llu huge_pages=%llu held_spans=%u vmas_cleared=%u",
		  __entry->vm, __entry->pid, __entry->limit,
		  __entry->huge_pages, __entry->held, __entry->cleared)
);

/* The limiter could not do what the limit asks (errno, which step). */
TRACE_EVENT(tlbb_limiter_error,
	TP_PROTO(struct tlbb_vm *vm, const char *op, int err, u64 count),
	TP_ARGS(vm, op, err, count),
	TP_STRUCT__entry(
		__array(char, vm, TLBB_NAME_MAX + 1)
		__field(int, pid)
		__array(char, op, 8)
		__field(int, err)
		__field(u64, count)
		__field(u64, limit)
		__field(u64, huge_pages)
	),
	TP_fast_assign(
		tlbb_trace_vm_assign(vm);
		strscpy(__entry->op, op, sizeof(__entry->op));
		__entry->err = err;
		__entry->count = count;
		__entry->limit = vm->ctrl.limit;
		__entry->huge_pages = vm->huge_pages;
	),
	TP_printk("vm=%s pid=%d op=%s err=%d count=%llu limit=%llu huge_pages=%llu",
		  __entry->vm, __entry->pid, __entry->op, __entry->err,
		  __entry->count, __entry->limit, __entry->huge_pages)
);

#endif /* _TLBB_TRACE_H */

/* Out of include/trace/events: look for this file in the module's dir. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE tlbb_trace
#include <trace/define_trace.h>
