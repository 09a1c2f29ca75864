/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tlbbalance.ko: shared declarations of the module's parts.
 *
 *   tlbb_main.c         init/exit, module parameters, workqueue, slab cache
 *   tlbb_configfs.c     the configfs interface (attributes, errnos) only
 *   tlbb_parse.c        parsing of writes: numbers, ids, names, lines
 *   tlbb_vm.c           the VM object: lifecycle, locking, the per-VM tick
 *   tlbb_stats.c        the statistics getters, read from the VM's state
 *   tlbb_thp.c          the THP limiter: count, split, hold, release
 *   tlbb_heat.c         heat of the huge pages (accessed-bit sampling)
 *   tlbb_walk.c         page-table walking of the ranges, lock-drop rule
 *   tlbb_cost.c         cost accounting of the tick and heat sampling
 *   tlbb_counter*.c     refill counting backends (PMU, injection)
 *   tlbb_debugfs.c      debugfs: injection file, tick cost file
 *   core/tlbb_ctrl.c    the pure controller (not part of this layer)
 */
#ifndef TLBB_H
#define TLBB_H

#include <linux/cpumask.h>
#include <linux/configfs.h>
#include <linux/list.h>
#include <linux/mmu_notifier.h>
#include <linux/mutex.h>
#include <linux/workqueue.h>

#include "core/tlbb_ctrl.h"

/* TLBB_NAME_MAX, TLBB_MAX_RANGES, TLBB_MAX_VCPUS */
enum {
#define TLBB_LIMIT(name, value, help) TLBB_##name = (value),
#include "core/tlbb_limits.def"
#undef TLBB_LIMIT
};
/* Largest injected rate, refills per second (far above any real TLB). */
#define TLBB_INJECT_MAX_RATE	1000000000000ULL

enum tlbb_mode {
#define TLBB_MODE(id, name, help) TLBB_MODE_##id,
#include "core/tlbb_modes.def"
#undef TLBB_MODE
	TLBB_NR_MODES
};

struct tlbb_range {
	unsigned long hva, len;
	u64 gpa;
};

struct tlbb_vm;

/* A refill counting backend, attached to a VM while it is monitored. */
struct tlbb_counter_ops {
	const char *name;
	/* Set up for vm->vcpus; 0 or -errno with vm->backend_desc explained. */
	int (*start)(struct tlbb_vm *vm);
	/* Refills since the last read (or since start). */
	void (*read)(struct tlbb_vm *vm, u64 *huge, u64 *small);
	void (*stop)(struct tlbb_vm *vm);
};

/*
 * A VMA on which the limiter set VM_NOHUGEPAGE: where it was, and what
 * memory it held (anonymous page offsets and anon_vma move with the memory
 * on mremap, so the flag can be found again at a new address). The anon_vma
 * pointer is only compared, never followed.
 */
struct tlbb_held_vma {
	unsigned long start, end;
	unsigned long pgoff, pgoff_end;
	const void *anon;
};

#define TLBB_MAX_HELD		128

/* The THP limiter's per-VM state (tlbb_thp.c). */
struct tlbb_limiter {
	struct tlbb_held_vma *held;	/* NULL: no hold in force */
	unsigned int nr_held;
	u64 splits;		/* huge PMDs split since the pid was set */
	u64 restores;		/* limit raises since the pid was set */
	int last_err;		/* error of the last enforcement, or 0 */
	u64 stuck;		/* huge pages over the limit left unsplit */
};

/*
 * Heat of the huge-page slots of the ranges (tlbb_heat.c): one byte per
 * slot, its accessed-bit samples folded by the core's tlbb_heat_fold() (a
 * count of the windows that found it used, halved by each that did not),
 * or (fed) what user space last wrote to the VM's heat attribute; NULL
 * until split_order heat (2, or address under method safe with
 * safe_split_heat) first samples or
 * user space first writes.
 */
struct tlbb_heat {
	u8 *heat;
	u64 nslots;		/* slots heat[] covers */
	u64 cursor;		/* next slot to sample */
	u64 armed;		/* slots cleared, their sample due (heat_work) */
	u64 windows_left;	/* the tick's windows after the armed one */
	unsigned long due;	/* jiffies: when it is due */
	u64 sampled;		/* slots sampled since the pid was set */
	bool fed;		/* heat written by user space: no sampling */
	u64 fed_slots;		/* slots set by the writes since then */
};

/* One line of a write to the heat attribute: [hva, hva + len) is heat. */
struct tlbb_heat_line {
	unsigned long hva, len;
	u8 heat;
};

/* Lines one write may carry (a page: at least 12 bytes a line). */
#define TLBB_MAX_HEAT_LINES	(PAGE_SIZE / 12)

/* What a stage has written: only that is applied by its commit. */
enum {
	TLBB_STAGED_PID		= 1 << 0,
	TLBB_STAGED_TIDS	= 1 << 1,
	TLBB_STAGED_RANGES	= 1 << 2,
	TLBB_STAGED_MODE	= 1 << 3,
};

/* Stages in progress on one VM (writers that died are not counted). */
#define TLBB_MAX_STAGES		16

/*
 * A registration being staged ("stage" written to commit) by one writer,
 * the thread that wrote "stage": its writes to pid, vcpu_tids, ranges,
 * mode and the tunables go here instead of the live VM, and its "commit"
 * applies what it wrote, at once. Another writer's writes never reach it;
 * it goes with its writer (a stage whose thread has exited is dropped),
 * and mode off (a commit of off, or a plain write of off) cancels it.
 * Ids are resolved when written: the struct pids are held, so a number
 * reused meanwhile cannot name another process or thread.
 */
struct tlbb_stage {
	struct list_head node;		/* in vm->stages */
	struct pid *owner;		/* the writing thread */
	bool cancelled;			/* by mode off: only abort/stage now */
	unsigned int staged;		/* TLBB_STAGED_* written */
	u64 staged_params;		/* 1 << tlbb_param_id written */
	struct pid *pid;		/* NULL: 0 (let go of the process) */
	int pid_nr;			/* as written, for messages */
	unsigned int nr_tids;
	struct pid *tids[TLBB_MAX_VCPUS];
	int tid_nrs[TLBB_MAX_VCPUS];
	unsigned int nr_ranges;
	struct tlbb_range ranges[TLBB_MAX_RANGES];
	struct tlbb_params params;	/* the staged_params fields */
	enum tlbb_mode mode;
	int commit_err;			/* this stage's last refused commit */
	char commit_msg[96];
};

struct tlbb_vm {
	struct config_group group;
	struct list_head node;		/* in tlbb_vms (tlbb_vms_lock) */
	struct mutex lock;		/* everything below */

	struct pid *pid;		/* QEMU process, NULL = none */
	struct mm_struct *mm;		/* notifier on it (pins mm) */
	struct mmu_notifier mn;
	bool exited;			/* the process has gone */
	bool released;			/* notifier release seen */
	bool detaching;			/* unregistering: no exit */
	bool dying;			/* rmdir in progress */
	struct work_struct exit_work;
	struct delayed_work tick_work;
	struct delayed_work heat_work;	/* a tick's heat sample, a window on */

	struct pid **vcpus;		/* nr_vcpus references */
	unsigned int nr_vcpus;
	struct tlbb_range ranges[TLBB_MAX_RANGES];
	unsigned int nr_ranges;
	u64 ranges_gen;			/* bumped when ranges or mm change */

	enum tlbb_mode mode;
	struct tlbb_params params;
	struct tlbb_ctrl ctrl;
	struct tlbb_limiter lim;
	struct tlbb_heat heat;

	/* Counting backend. */
	const struct tlbb_counter_ops *backend;	/* NULL: unavailable */
	char backend_desc[96];
	void *backend_priv;
	bool inject;			/* injection replaces the backend */
	u64 inject_huge, inject_small;	/* refills per second */

	/* Last tick, for the read-only attributes. */
	u64 huge_pages;
	u64 refills_huge, refills_small;
	u64 refills_huge_total, refills_small_total;
	u64 ticks;			/* controller ticks since pid write */
	cpumask_var_t cpus_allowed, cpus_ran;

	struct list_head stages;	/* tlbb_stage, one per writer */
	int commit_err;			/* outcome of the last commit */
	char commit_msg[96];

	char name[TLBB_NAME_MAX + 1];	/* usercopy region of the slab */
};

static inline struct tlbb_vm *to_tlbb_vm(struct config_item *item)
{
	return container_of(to_config_group(item), struct tlbb_vm, group);
}

/* tlbb_main.c */
extern bool tlbb_allow_inject;
extern struct workqueue_struct *tlbb_wq;
extern struct kmem_cache *tlbb_vm_cache;
extern struct mutex tlbb_vms_lock;
extern struct list_head tlbb_vms;
extern atomic_t tlbb_nr_vms;

/* tlbb_configfs.c */
int tlbb_configfs_init(void);
void tlbb_configfs_exit(void);
int tlbb_configfs_pin(struct tlbb_vm *vm);
void tlbb_configfs_unpin(struct tlbb_vm *vm);

/* tlbb_vm.c */
struct tlbb_vm *tlbb_vm_create(const char *name);
void tlbb_vm_drop(struct tlbb_vm *vm);
void tlbb_vm_free(struct tlbb_vm *vm);
u64 tlbb_vm_huge_pages(struct tlbb_vm *vm);
void tlbb_vm_refresh_huge_pages(struct tlbb_vm *vm);
int tlbb_vm_set_pid(struct tlbb_vm *vm, int nr);
int tlbb_vm_set_vcpus(struct tlbb_vm *vm, const int *tids, unsigned int n,
		      bool append);
int tlbb_vm_set_ranges(struct tlbb_vm *vm, const struct tlbb_range *r,
		       unsigned int n);
int tlbb_vm_set_mode(struct tlbb_vm *vm, enum tlbb_mode mode);
int tlbb_vm_set_param(struct tlbb_vm *vm, enum tlbb_param_id id, u64 val);
int tlbb_vm_set_inject(const char *name, bool on, u64 huge, u64 small);
int tlbb_vm_stage(struct tlbb_vm *vm);
int tlbb_vm_abort(struct tlbb_vm *vm);
int tlbb_vm_commit(struct tlbb_vm *vm);
unsigned int tlbb_vm_nr_stages(struct tlbb_vm *vm);
const char *tlbb_vm_stage_state(struct tlbb_vm *vm, int *err,
				const char **msg);
const char *tlbb_mode_name(enum tlbb_mode mode);
const char *tlbb_vm_state_name(struct tlbb_vm *vm);

/* tlbb_thp.c */
int tlbb_thp_check_ranges(struct mm_struct *mm, const struct tlbb_range *r,
			  unsigned int n);
int tlbb_thp_count(struct tlbb_vm *vm, struct mm_struct *mm, u64 *n);
int tlbb_thp_count_ranges(struct mm_struct *mm, const struct tlbb_range *r,
			  unsigned int nr, u64 *n);
void tlbb_thp_enforce(struct tlbb_vm *vm, struct mm_struct *mm, u64 limit);
void tlbb_thp_release(struct tlbb_vm *vm, struct mm_struct *mm);
void tlbb_thp_forget(struct tlbb_vm *vm);

/* tlbb_heat.c */
unsigned long tlbb_heat_arm(struct tlbb_vm *vm, struct mm_struct *mm);
bool tlbb_heat_collect(struct tlbb_vm *vm, struct mm_struct *mm,
		       unsigned long *again);
u8 tlbb_heat_of(struct tlbb_vm *vm, u64 slot);
void tlbb_heat_free(struct tlbb_vm *vm);
int tlbb_heat_feed(struct tlbb_vm *vm, const struct tlbb_heat_line *l,
		   unsigned int n);
int tlbb_heat_sample(struct tlbb_vm *vm);

/* tlbb_counter.c */
void tlbb_counter_start(struct tlbb_vm *vm);
bool tlbb_counter_read(struct tlbb_vm *vm, u64 *huge, u64 *small);
void tlbb_counter_stop(struct tlbb_vm *vm);
extern const struct tlbb_counter_ops tlbb_counter_pmu_ops;

/* tlbb_debugfs.c */
int tlbb_debugfs_init(void);
void tlbb_debugfs_exit(void);

#endif /* TLBB_H */
