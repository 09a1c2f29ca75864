// SPDX-License-Identifier: GPL-2.0
/*
 * The VM object: registration of a QEMU process, lifecycle, locking and the
 * per-VM tick that feeds the controller core and applies its limit.
 *
 * Locking: tlbb_vms_lock (the list, for name lookups) nests outside vm->lock.
 * vm->lock is never taken with a target mmap lock held. The mmu_notifier
 * release callback takes no lock at all: it may run from exit_mmap() in any
 * context, including our own mmput() at the end of a tick.
 *
 * References: vm->pid and each vm->vcpus[i] hold a struct pid reference;
 * vm->mm is pinned (mm_count) by the registered mmu_notifier; a tick takes
 * mm_users with mmget_not_zero() only for its own duration. A stage holds
 * references on its writer (owner), its pid and each of its tids.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/task.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "tlbb.h"
#include "tlbb_cost.h"
#include "tlbb_walk.h"
#include "tlbb_compat.h"

#define CREATE_TRACE_POINTS
#include "tlbb_trace.h"

static const char * const tlbb_mode_names[TLBB_NR_MODES] = {
#define TLBB_MODE(id, name, help) [TLBB_MODE_##id] = name,
#include "core/tlbb_modes.def"
#undef TLBB_MODE
};

const char *tlbb_mode_name(enum tlbb_mode mode)
{
	return tlbb_mode_names[mode];
}

const char *tlbb_vm_state_name(struct tlbb_vm *vm)
{
	if (vm->exited)
		return "exited";
	if (vm->mode == TLBB_MODE_OFF)
		return "off";
	return tlbb_state_name(vm->ctrl.state);
}

static void tlbb_vm_tick_work(struct work_struct *work);
static void tlbb_vm_heat_work(struct work_struct *work);
static void tlbb_vm_exit_work(struct work_struct *work);

/*
 * Called once when the process's address space goes away (exit_mmap), or
 * from mmu_notifier_unregister() when we detach first (then ignored).
 */
static void tlbb_mn_release(struct mmu_notifier *mn, struct mm_struct *mm)
{
	struct tlbb_vm *vm = container_of(mn, struct tlbb_vm, mn);

	if (READ_ONCE(vm->detaching))
		return;
	WRITE_ONCE(vm->released, true);
	queue_work(tlbb_wq, &vm->exit_work);
}

static const struct mmu_notifier_ops tlbb_mn_ops = {
	.release = tlbb_mn_release,
};

struct tlbb_vm *tlbb_vm_create(const char *name)
{
	struct tlbb_vm *vm;

	vm = kmem_cache_zalloc(tlbb_vm_cache, GFP_KERNEL);
	if (!vm)
		return NULL;
	if (!zalloc_cpumask_var(&vm->cpus_allowed, GFP_KERNEL))
		goto err_free;
	if (!zalloc_cpumask_var(&vm->cpus_ran, GFP_KERNEL))
		goto err_mask;

	mutex_init(&vm->lock);
	INIT_LIST_HEAD(&vm->node);
	INIT_LIST_HEAD(&vm->stages);
	INIT_WORK(&vm->exit_work, tlbb_vm_exit_work);
	INIT_DELAYED_WORK(&vm->tick_work, tlbb_vm_tick_work);
	INIT_DELAYED_WORK(&vm->heat_work, tlbb_vm_heat_work);
	strscpy(vm->name, name, sizeof(vm->name));
	tlbb_params_default(&vm->params);
	tlbb_ctrl_init(&vm->ctrl, &vm->params, 0, true);
	strscpy(vm->backend_desc, "none (mode off)", sizeof(vm->backend_desc));

	mutex_lock(&tlbb_vms_lock);
	list_add_tail(&vm->node, &tlbb_vms);
	mutex_unlock(&tlbb_vms_lock);
	atomic_inc(&tlbb_nr_vms);
	return vm;

err_mask:
	free_cpumask_var(vm->cpus_allowed);
err_free:
	kmem_cache_free(tlbb_vm_cache, vm);
	return NULL;
}

static void tlbb_vm_put_vcpus(struct tlbb_vm *vm)
{
	unsigned int i;

	for (i = 0; i < vm->nr_vcpus; i++)
		put_pid(vm->vcpus[i]);
	kvfree(vm->vcpus);
	vm->vcpus = NULL;
	vm->nr_vcpus = 0;
}

/* ---- stages: one per writer (see struct tlbb_stage) ---- */

static void tlbb_stage_put_tids(struct tlbb_stage *st)
{
	unsigned int i;

	for (i = 0; i < st->nr_tids; i++)
		put_pid(st->tids[i]);
	st->nr_tids = 0;
}

static void tlbb_stage_free(struct tlbb_stage *st)
{
	list_del(&st->node);
	tlbb_stage_put_tids(st);
	put_pid(st->pid);
	put_pid(st->owner);
	kvfree(st);
}

/* Has the writer of @st gone (or is it exiting)? Its stage goes with it. */
static bool tlbb_stage_orphaned(struct tlbb_stage *st)
{
	struct task_struct *t;
	bool gone;

	rcu_read_lock();
	t = pid_task(st->owner, PIDTYPE_PID);
	gone = !t || (READ_ONCE(t->flags) & PF_EXITING);
	rcu_read_unlock();
	return gone;
}

/*
 * The calling thread's stage, or NULL; stages of writers that exited are
 * dropped on the way. vm->lock held.
 */
static struct tlbb_stage *tlbb_stage_mine(struct tlbb_vm *vm)
{
	struct tlbb_stage *st, *tmp, *mine = NULL;
	struct pid *me = task_pid(current);

	list_for_each_entry_safe(st, tmp, &vm->stages, node) {
		if (st->owner == me)
			mine = st;
		else if (tlbb_stage_orphaned(st))
			tlbb_stage_free(st);
	}
	return mine;
}

/* Drop every stage (rmdir). vm->lock held. */
static void tlbb_vm_unstage(struct tlbb_vm *vm)
{
	struct tlbb_stage *st, *tmp;

	list_for_each_entry_safe(st, tmp, &vm->stages, node)
		tlbb_stage_free(st);
}

/*
 * Mode off, as unregistration writes it: every other writer's stage is
 * cancelled (its commit then fails with ECANCELED, its writes too, until
 * it writes "stage" or "abort"), so nothing staged before can bring the
 * VM back. vm->lock held.
 */
static void tlbb_vm_cancel_stages(struct tlbb_vm *vm, struct tlbb_stage *keep)
{
	struct tlbb_stage *st;

	list_for_each_entry(st, &vm->stages, node)
		if (st != keep)
			st->cancelled = true;
}

/*
 * A write outside a stage: the deprecated write-by-write registration,
 * kept for one release for the previous release's client (which writes
 * mode off without staging). Said once.
 */
static void tlbb_vm_plain_write(void)
{
	pr_notice_once("write-by-write registration (a write to pid, vcpu_tids, ranges, mode or a tunable without \"stage\") is deprecated and goes in the next release; use stage and commit\n");
}

/*
 * Where a write of the calling thread goes: 1 with *@stp its stage, 0
 * when it has none (the write applies at once), -ECANCELED when its stage
 * was cancelled by mode off. vm->lock held.
 */
static int tlbb_vm_staging(struct tlbb_vm *vm, struct tlbb_stage **stp)
{
	struct tlbb_stage *st = tlbb_stage_mine(vm);

	*stp = st;
	if (!st) {
		tlbb_vm_plain_write();
		return 0;
	}
	return st->cancelled ? -ECANCELED : 1;
}

unsigned int tlbb_vm_nr_stages(struct tlbb_vm *vm)
{
	struct tlbb_stage *st;
	unsigned int n = 0;

	tlbb_stage_mine(vm);		/* drops the orphans */
	list_for_each_entry(st, &vm->stages, node)
		n += !st->cancelled;
	return n;
}

/*
 * For reading commit: "staging", "cancelled" or "idle" for the reader,
 * and the last result it should see: its stage's last refused commit,
 * else the VM's last commit. vm->lock held.
 */
const char *tlbb_vm_stage_state(struct tlbb_vm *vm, int *err,
				const char **msg)
{
	struct tlbb_stage *st = tlbb_stage_mine(vm);

	*err = vm->commit_err;
	*msg = vm->commit_msg;
	if (!st)
		return "idle";
	if (st->commit_msg[0]) {
		*err = st->commit_err;
		*msg = st->commit_msg;
	}
	return st->cancelled ? "cancelled" : "staging";
}

/*
 * Stop monitoring: counters off, limit lifted, the directory unpinned (rmdir
 * works again). vm->lock held.
 */
static void tlbb_vm_stop(struct tlbb_vm *vm)
{
	if (vm->mode == TLBB_MODE_OFF)
		return;
	/*
	 * A heat sample under way is called off; its work, if already
	 * running (waiting for vm->lock), finds nothing armed.
	 */
	cancel_delayed_work(&vm->heat_work);
	vm->heat.armed = 0;
	tlbb_counter_stop(vm);
	if (vm->mm && mmget_not_zero(vm->mm)) {
		tlbb_thp_release(vm, vm->mm);
		mmput(vm->mm);
	} else {
		tlbb_thp_forget(vm);
	}
	vm->lim.stuck = 0;
	vm->lim.last_err = 0;
	vm->mode = TLBB_MODE_OFF;
	strscpy(vm->backend_desc, "none (mode off)", sizeof(vm->backend_desc));
	tlbb_configfs_unpin(vm);
}

/* Let go of the process and everything tied to it. vm->lock held. */
static void tlbb_vm_detach(struct tlbb_vm *vm)
{
	tlbb_vm_stop(vm);
	if (vm->mm) {
		WRITE_ONCE(vm->detaching, true);
		mmu_notifier_unregister(&vm->mn, vm->mm);
		vm->mm = NULL;
		vm->ranges_gen++;
		WRITE_ONCE(vm->released, false);
		WRITE_ONCE(vm->detaching, false);
	}
	tlbb_vm_put_vcpus(vm);
	put_pid(vm->pid);
	vm->pid = NULL;
}

static void tlbb_vm_exit_work(struct work_struct *work)
{
	struct tlbb_vm *vm = container_of(work, struct tlbb_vm, exit_work);

	mutex_lock(&vm->lock);
	if (READ_ONCE(vm->released) && vm->mm) {
		tlbb_vm_detach(vm);
		vm->exited = true;
	}
	mutex_unlock(&vm->lock);
}

/* rmdir: stop everything; the object is freed by tlbb_vm_free() later. */
void tlbb_vm_drop(struct tlbb_vm *vm)
{
	mutex_lock(&tlbb_vms_lock);
	list_del_init(&vm->node);
	mutex_unlock(&tlbb_vms_lock);

	mutex_lock(&vm->lock);
	vm->dying = true;
	tlbb_vm_detach(vm);
	tlbb_vm_unstage(vm);
	mutex_unlock(&vm->lock);

	/* the tick first: it queues the heat work (not once dying is set) */
	cancel_delayed_work_sync(&vm->tick_work);
	cancel_delayed_work_sync(&vm->heat_work);
	cancel_work_sync(&vm->exit_work);
}

void tlbb_vm_free(struct tlbb_vm *vm)
{
	tlbb_heat_free(vm);
	free_cpumask_var(vm->cpus_ran);
	free_cpumask_var(vm->cpus_allowed);
	mutex_destroy(&vm->lock);
	kmem_cache_free(tlbb_vm_cache, vm);
	atomic_dec(&tlbb_nr_vms);
}

/* Only a thread group leader of a user process may be registered. */
static int tlbb_check_process(struct pid *pid, struct mm_struct **mmp)
{
	struct task_struct *task;
	struct mm_struct *mm;
	int ret = 0;

	task = get_pid_task(pid, PIDTYPE_PID);
	if (!task)
		return -ESRCH;
	if (task->flags & PF_KTHREAD)
		ret = -EINVAL;		/* kernel thread: no guest RAM */
	else if (!thread_group_leader(task))
		ret = -EINVAL;		/* a thread id, not a process */
	if (ret) {
		put_task_struct(task);
		return ret;
	}
	mm = get_task_mm(task);
	put_task_struct(task);
	if (!mm)
		return -ESRCH;		/* exiting */
	*mmp = mm;
	return 0;
}

/*
 * Let go of the old process, reset what belonged to it and register @pid
 * (@mm from tlbb_check_process(), its reference is dropped here; NULL pid:
 * only let go). The caller's reference on @pid moves to the VM on success.
 * Fails only on -ENOMEM or a signal (-EINTR); the old process is let go
 * already then, and pid reads 0. vm->lock held, mode off.
 */
static int tlbb_vm_attach(struct tlbb_vm *vm, struct pid **pidp,
			  struct mm_struct *mm)
{
	int ret = 0;

	/* The old process's threads and ranges do not belong to the new. */
	tlbb_vm_detach(vm);
	vm->nr_ranges = 0;
	vm->ranges_gen++;
	vm->exited = false;
	vm->refills_huge_total = 0;
	vm->refills_small_total = 0;
	vm->ticks = 0;
	memset(&vm->lim, 0, sizeof(vm->lim));
	tlbb_heat_free(vm);
	vm->heat.sampled = 0;
	vm->heat.fed = false;
	vm->heat.fed_slots = 0;
	if (!*pidp)
		return 0;

	memset(&vm->mn, 0, sizeof(vm->mn));
	vm->mn.ops = &tlbb_mn_ops;
	ret = mmu_notifier_register(&vm->mn, mm);
	if (!ret) {
		vm->mm = mm;
		vm->pid = *pidp;
		*pidp = NULL;
	}
	/* May be the last user: exit_mmap() then calls our release. */
	mmput(mm);
	return ret;
}

/* Is @pid the live registered process? vm->lock held. */
static bool tlbb_vm_same_process(struct tlbb_vm *vm, struct pid *pid)
{
	return pid && pid == vm->pid && vm->mm && !READ_ONCE(vm->released);
}

int tlbb_vm_set_pid(struct tlbb_vm *vm, int nr)
{
	struct mm_struct *mm = NULL;
	struct pid *pid = NULL;
	struct tlbb_stage *st;
	int ret;

	if (nr < 0)
		return -EINVAL;
	mutex_lock(&vm->lock);
	ret = tlbb_vm_staging(vm, &st);
	if (ret) {
		if (ret < 0)
			goto out;
		/* resolved now, held, checked at commit */
		ret = -ESRCH;
		if (nr) {
			pid = find_get_pid(nr);
			if (!pid)
				goto out;
		}
		swap(st->pid, pid);
		st->pid_nr = nr;
		st->staged |= TLBB_STAGED_PID;
		ret = 0;
		goto out;
	}
	ret = -EBUSY;
	if (vm->mode != TLBB_MODE_OFF)
		goto out;
	if (nr) {
		ret = -ESRCH;
		pid = find_get_pid(nr);
		if (!pid)
			goto out;
	}
	ret = 0;
	if (tlbb_vm_same_process(vm, pid))
		goto out;		/* same live process: nothing to do */
	if (pid) {
		ret = tlbb_check_process(pid, &mm);
		if (ret)
			goto out;
	}
	ret = tlbb_vm_attach(vm, &pid, mm);
out:
	mutex_unlock(&vm->lock);
	put_pid(pid);
	return ret;
}

/*
 * Look up @n thread ids into pids[at..]: each must be a thread of @owner
 * and listed once (also against pids[0..at)). 0, or -ESRCH / -EINVAL with
 * the culprit in *@bad and no reference taken.
 */
static int tlbb_vcpu_pids(struct pid *owner, const int *tids, unsigned int n,
			  struct pid **pids, unsigned int at, int *bad)
{
	unsigned int i, j = at;
	int ret = 0;

	for (i = 0; i < n; i++, j++) {
		struct task_struct *t;
		unsigned int k;

		*bad = tids[i];
		ret = -ESRCH;
		pids[j] = find_get_pid(tids[i]);
		if (!pids[j])
			break;
		rcu_read_lock();
		t = pid_task(pids[j], PIDTYPE_PID);
		if (t && task_tgid(t) != owner)
			t = NULL;	/* not a thread of owner */
		rcu_read_unlock();
		if (!t) {
			put_pid(pids[j]);
			break;
		}
		ret = -EINVAL;
		for (k = 0; k < j; k++)
			if (pids[k] == pids[j])
				break;
		if (k < j) {		/* listed twice */
			put_pid(pids[j]);
			break;
		}
		ret = 0;
	}
	if (ret)
		while (j-- > at)
			put_pid(pids[j]);
	return ret;
}

/*
 * Stage @n thread ids (appended to what the stage holds; with nothing
 * staged yet, "+" appends to the live list): each resolved now and held;
 * that they are threads of the process, once each, is checked at commit.
 */
static int tlbb_stage_vcpus(struct tlbb_vm *vm, struct tlbb_stage *st,
			    const int *tids, unsigned int n, bool append)
{
	unsigned int i, at;
	struct pid **got;

	at = append ? (st->staged & TLBB_STAGED_TIDS ? st->nr_tids :
		       vm->nr_vcpus) : 0;
	if (at + n > TLBB_MAX_VCPUS)
		return -ERANGE;
	got = kvcalloc(max(n, 1U), sizeof(*got), GFP_KERNEL);
	if (!got)
		return -ENOMEM;
	/* all found, or the stage unchanged */
	for (i = 0; i < n; i++) {
		got[i] = find_get_pid(tids[i]);
		if (!got[i]) {
			while (i--)
				put_pid(got[i]);
			kvfree(got);
			return -ESRCH;
		}
	}
	if (append && !(st->staged & TLBB_STAGED_TIDS)) {
		tlbb_stage_put_tids(st);
		for (i = 0; i < vm->nr_vcpus; i++) {
			st->tids[i] = get_pid(vm->vcpus[i]);
			st->tid_nrs[i] = pid_vnr(vm->vcpus[i]);
		}
		st->nr_tids = vm->nr_vcpus;
	} else if (!append) {
		tlbb_stage_put_tids(st);
	}
	for (i = 0; i < n; i++) {
		st->tids[at + i] = got[i];
		st->tid_nrs[at + i] = tids[i];
	}
	st->nr_tids = at + n;
	st->staged |= TLBB_STAGED_TIDS;
	kvfree(got);
	return 0;
}

int tlbb_vm_set_vcpus(struct tlbb_vm *vm, const int *tids, unsigned int n,
		      bool append)
{
	struct pid **pids = NULL;
	unsigned int i, j, total;
	struct tlbb_stage *st;
	int ret, bad;

	mutex_lock(&vm->lock);
	ret = tlbb_vm_staging(vm, &st);
	if (ret) {
		if (ret > 0)
			ret = tlbb_stage_vcpus(vm, st, tids, n, append);
		goto out;
	}
	ret = -EBUSY;
	if (vm->mode != TLBB_MODE_OFF)
		goto out;
	ret = -ESRCH;
	if (n && (!vm->pid || !vm->mm || READ_ONCE(vm->released)))
		goto out;
	total = n + (append ? vm->nr_vcpus : 0);
	ret = -ERANGE;
	if (total > TLBB_MAX_VCPUS)
		goto out;
	ret = -ENOMEM;
	if (total) {
		pids = kvcalloc(total, sizeof(*pids), GFP_KERNEL);
		if (!pids)
			goto out;
	}

	j = 0;
	if (append)
		for (i = 0; i < vm->nr_vcpus; i++)
			pids[j++] = get_pid(vm->vcpus[i]);
	ret = tlbb_vcpu_pids(vm->pid, tids, n, pids, j, &bad);
	if (ret) {
		while (j--)
			put_pid(pids[j]);
		kvfree(pids);
		goto out;
	}
	tlbb_vm_put_vcpus(vm);
	vm->vcpus = pids;
	vm->nr_vcpus = total;
out:
	mutex_unlock(&vm->lock);
	return ret;
}

int tlbb_vm_set_ranges(struct tlbb_vm *vm, const struct tlbb_range *r,
		       unsigned int n)
{
	struct mm_struct *mm = NULL;
	struct tlbb_stage *st;
	int ret;

	mutex_lock(&vm->lock);
	ret = tlbb_vm_staging(vm, &st);
	if (ret) {
		if (ret > 0) {
			memcpy(st->ranges, r, n * sizeof(*r));
			st->nr_ranges = n;	/* checked at commit */
			st->staged |= TLBB_STAGED_RANGES;
			ret = 0;
		}
		goto out;
	}
	ret = -EBUSY;
	if (vm->mode != TLBB_MODE_OFF)
		goto out;
	if (n) {
		ret = -ESRCH;
		if (!vm->mm || READ_ONCE(vm->released) ||
		    !mmget_not_zero(vm->mm))
			goto out;
		mm = vm->mm;
		ret = tlbb_thp_check_ranges(mm, r, n);
		if (ret)
			goto out;
	}
	memcpy(vm->ranges, r, n * sizeof(*r));
	vm->nr_ranges = n;
	vm->ranges_gen++;
	ret = 0;
out:
	mutex_unlock(&vm->lock);
	if (mm)
		mmput(mm);
	return ret;
}

/* Start @mode (not off) on a stopped VM with pid and ranges. vm->lock held. */
static void tlbb_vm_start(struct tlbb_vm *vm, enum tlbb_mode mode)
{
	vm->mode = mode;
	tlbb_ctrl_init(&vm->ctrl, &vm->params,
		       tlbb_thp_total_pages(vm->ranges, vm->nr_ranges),
		       mode == TLBB_MODE_MONITOR);
	vm->refills_huge = 0;
	vm->refills_small = 0;
	cpumask_clear(vm->cpus_ran);
	tlbb_counter_start(vm);
	queue_delayed_work(tlbb_wq, &vm->tick_work,
			   msecs_to_jiffies(vm->params.interval_ms));
}

int tlbb_vm_set_mode(struct tlbb_vm *vm, enum tlbb_mode mode)
{
	struct tlbb_stage *st;
	int ret;

	mutex_lock(&vm->lock);
	ret = tlbb_vm_staging(vm, &st);
	if (ret) {
		if (ret > 0) {
			st->mode = mode;	/* checked at commit */
			st->staged |= TLBB_STAGED_MODE;
			ret = 0;
		}
		goto out;
	}
	/* off unregisters: nothing staged before may bring the VM back */
	if (mode == TLBB_MODE_OFF)
		tlbb_vm_cancel_stages(vm, NULL);
	if (mode == vm->mode)
		goto out;
	if (mode != TLBB_MODE_OFF) {
		ret = -ESRCH;
		if (!vm->mm || READ_ONCE(vm->released))
			goto out;
		ret = -EINVAL;
		if (!vm->nr_ranges)
			goto out;
		/* pinned before the old mode's pin goes: never unpinned */
		ret = tlbb_configfs_pin(vm);
		if (ret)
			goto out;	/* -ENOENT: rmdir under way */
	}
	tlbb_vm_stop(vm);
	if (mode != TLBB_MODE_OFF)
		tlbb_vm_start(vm, mode);
out:
	mutex_unlock(&vm->lock);
	return ret;
}

int tlbb_vm_set_param(struct tlbb_vm *vm, enum tlbb_param_id id, u64 val)
{
	struct tlbb_stage *st;
	struct tlbb_params p;
	int ret;

	BUILD_BUG_ON(TLBB_P_COUNT > 64);	/* staged_params */
	mutex_lock(&vm->lock);
	ret = tlbb_vm_staging(vm, &st);
	if (ret < 0)
		goto out;
	p = st ? st->params : vm->params;
	ret = -ERANGE;
	if (tlbb_param_set(&p, id, val))
		goto out;
	ret = 0;
	if (st) {
		st->params = p;
		st->staged_params |= BIT_ULL(id);
		goto out;
	}
	vm->params = p;
	if (vm->mode != TLBB_MODE_OFF)
		tlbb_ctrl_set_params(&vm->ctrl, &p);
out:
	mutex_unlock(&vm->lock);
	return ret;
}

/* ---- staged registration: "stage", then writes, then "commit" ---- */

/*
 * Begin (or restart) the calling thread's stage, empty: a commit applies
 * only what is written after this.
 */
int tlbb_vm_stage(struct tlbb_vm *vm)
{
	struct tlbb_stage *st = kvzalloc(sizeof(*st), GFP_KERNEL), *old;
	unsigned int n = 0;
	int ret = 0;

	if (!st)
		return -ENOMEM;
	st->owner = get_pid(task_pid(current));
	mutex_lock(&vm->lock);
	old = tlbb_stage_mine(vm);
	if (old) {
		tlbb_stage_free(old);
	} else {
		/* cancelled ones too: each holds its writer's memory */
		list_for_each_entry(old, &vm->stages, node)
			n++;
		ret = -EBUSY;		/* that many writers at once */
		if (n >= TLBB_MAX_STAGES)
			goto out;
		ret = 0;
	}
	st->params = vm->params;
	list_add_tail(&st->node, &vm->stages);
	st = NULL;
out:
	mutex_unlock(&vm->lock);
	if (st) {
		put_pid(st->owner);
		kvfree(st);
	}
	return ret;
}

int tlbb_vm_abort(struct tlbb_vm *vm)
{
	struct tlbb_stage *st;
	int ret = -EINVAL;

	mutex_lock(&vm->lock);
	st = tlbb_stage_mine(vm);
	if (st) {
		tlbb_stage_free(st);
		ret = 0;
	}
	mutex_unlock(&vm->lock);
	return ret;
}

/*
 * Record the outcome of a commit for reading (the VM's last, and a
 * refused one in @st too); returns @err.
 */
__printf(4, 5)
static int tlbb_commit_result(struct tlbb_vm *vm, struct tlbb_stage *st,
			      int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(vm->commit_msg, sizeof(vm->commit_msg), fmt, ap);
	va_end(ap);
	vm->commit_err = err;
	if (st) {
		strscpy(st->commit_msg, vm->commit_msg, sizeof(st->commit_msg));
		st->commit_err = err;
	}
	return err;
}

/* Is @t a live thread of the process @owner? */
static bool tlbb_thread_of(struct pid *tid, struct pid *owner)
{
	struct task_struct *t;
	bool ok;

	rcu_read_lock();
	t = pid_task(tid, PIDTYPE_PID);
	ok = t && task_tgid(t) == owner;
	rcu_read_unlock();
	return ok;
}

/*
 * Check the calling thread's stage against the system and apply what it
 * wrote, at once, or nothing (see docs/kernel-module.md, "Registration").
 * What it did not write stays as it is live. The first fault found is
 * returned and named in the commit file ("<attribute>: <why>"); the VM is
 * then unchanged and the stage kept. Applying fails only on -ENOMEM or a
 * signal while registering a new process (left off, pid 0, as a failed
 * pid write would).
 *
 * Only what changes is redone: a new process re-registers everything; a
 * mode change, or new ranges while monitored, restart the controller; new
 * vcpu_tids restart the counters only; tunables go to the running
 * controller as a plain write does, so its limit and hold stay.
 */
int tlbb_vm_commit(struct tlbb_vm *vm)
{
	struct mm_struct *mm = NULL, *check_mm;
	bool new_proc, live_ok, need_proc, ranges_new = false;
	bool tids_new = false, restart, pinned = false;
	struct pid **pids = NULL, *np = NULL;
	unsigned int i, j, nr_ranges;
	struct tlbb_stage *st;
	struct tlbb_params p;
	enum tlbb_mode mode;
	int ret;

	mutex_lock(&vm->lock);
	st = tlbb_stage_mine(vm);
	if (!st) {
		ret = tlbb_commit_result(vm, NULL, -EINVAL,
					 "commit: nothing staged (write stage first)");
		goto out;
	}
	if (st->cancelled) {
		ret = tlbb_commit_result(vm, st, -ECANCELED,
					 "commit: stage cancelled by mode off (write stage again)");
		goto out;
	}

	live_ok = vm->pid && vm->mm && !READ_ONCE(vm->released);
	new_proc = (st->staged & TLBB_STAGED_PID) &&
		   (st->pid ? !tlbb_vm_same_process(vm, st->pid) : !!vm->pid);
	mode = st->staged & TLBB_STAGED_MODE ? st->mode : vm->mode;
	if (st->staged & TLBB_STAGED_RANGES)
		nr_ranges = st->nr_ranges;
	else
		nr_ranges = new_proc ? 0 : vm->nr_ranges;

	/* the process */
	need_proc = mode != TLBB_MODE_OFF ||
		    (st->staged & TLBB_STAGED_TIDS && st->nr_tids) ||
		    (st->staged & TLBB_STAGED_RANGES && st->nr_ranges);
	if (need_proc && ((new_proc && !st->pid) || (!new_proc && !vm->pid))) {
		if (mode != TLBB_MODE_OFF)
			ret = tlbb_commit_result(vm, st, -ESRCH, "pid: none staged, mode %s needs one",
						 tlbb_mode_name(mode));
		else
			ret = tlbb_commit_result(vm, st, -ESRCH, "pid: none staged for %s",
						 st->staged & TLBB_STAGED_TIDS &&
						 st->nr_tids ? "vcpu_tids" : "ranges");
		goto out;
	}
	if (new_proc && st->pid) {
		ret = tlbb_check_process(st->pid, &mm);
		if (ret) {
			tlbb_commit_result(vm, st, ret, "pid: %d is %s", st->pid_nr,
					   ret == -ESRCH ? "no (live) process" :
					   "not a user process");
			goto out;
		}
	} else if (need_proc && !live_ok) {
		ret = tlbb_commit_result(vm, st, -ESRCH,
					 "pid: the registered process has exited");
		goto out;
	}

	/* the vCPU threads: threads of the process, each once */
	if (st->staged & TLBB_STAGED_TIDS) {
		struct pid *owner = new_proc ? st->pid : vm->pid;

		for (i = 0; i < st->nr_tids; i++) {
			ret = -ESRCH;
			if (!tlbb_thread_of(st->tids[i], owner))
				break;
			ret = -EINVAL;
			for (j = 0; j < i; j++)
				if (st->tids[j] == st->tids[i])
					break;
			if (j < i)
				break;
			ret = 0;
		}
		if (ret) {
			tlbb_commit_result(vm, st, ret, "vcpu_tids: %d is %s",
					   st->tid_nrs[i], ret == -ESRCH ?
					   "not a thread of pid" : "listed twice");
			goto out;
		}
		tids_new = new_proc || st->nr_tids != vm->nr_vcpus;
		for (i = 0; !tids_new && i < st->nr_tids; i++)
			tids_new = st->tids[i] != vm->vcpus[i];
	}

	/* the ranges, against the process's mappings */
	if (st->staged & TLBB_STAGED_RANGES && st->nr_ranges) {
		check_mm = mm ?: vm->mm;
		ret = -ESRCH;
		if (check_mm && mmget_not_zero(check_mm)) {
			ret = tlbb_thp_check_ranges(check_mm, st->ranges,
						    st->nr_ranges);
			mmput(check_mm);
		}
		if (ret) {
			tlbb_commit_result(vm, st, ret, "ranges: %s",
					   ret == -EFAULT ?
					   "outside the process's mappings" :
					   "cannot be checked");
			goto out;
		}
	}
	if (st->staged & TLBB_STAGED_RANGES)
		ranges_new = new_proc || st->nr_ranges != vm->nr_ranges ||
			memcmp(st->ranges, vm->ranges,
			       st->nr_ranges * sizeof(st->ranges[0]));
	if (mode != TLBB_MODE_OFF && !nr_ranges) {
		ret = tlbb_commit_result(vm, st, -EINVAL, "ranges: none staged, mode %s needs them",
					 tlbb_mode_name(mode));
		goto out;
	}

	/* the tunables written (each checked when written) over the live */
	p = vm->params;
	for (i = 0; i < TLBB_P_COUNT; i++)
		if (st->staged_params & BIT_ULL(i))
			tlbb_param_set(&p, i, tlbb_param_get(&st->params, i));

	restart = new_proc || mode != vm->mode ||
		  (ranges_new && mode != TLBB_MODE_OFF);
	if (restart && mode != TLBB_MODE_OFF) {
		ret = tlbb_configfs_pin(vm);
		if (ret) {
			tlbb_commit_result(vm, st, ret, "commit: the VM is being removed");
			goto out;
		}
		pinned = true;
	}
	if (tids_new) {
		/* the stage's references move to the VM */
		ret = -ENOMEM;
		pids = kvcalloc(max(st->nr_tids, 1U), sizeof(*pids),
				GFP_KERNEL);
		if (!pids) {
			tlbb_commit_result(vm, st, ret, "vcpu_tids: out of memory");
			goto out;
		}
	}

	/* Everything checked: apply what changes. */
	if (restart)
		tlbb_vm_stop(vm);
	if (new_proc) {
		np = get_pid(st->pid);
		ret = tlbb_vm_attach(vm, &np, mm);
		mm = NULL;		/* reference dropped by attach */
		if (ret) {
			tlbb_commit_result(vm, st, ret, "pid: registration failed");
			goto out;
		}
	}
	if (tids_new) {
		bool counting = !restart && vm->mode != TLBB_MODE_OFF;

		if (counting)
			tlbb_counter_stop(vm);
		tlbb_vm_put_vcpus(vm);
		memcpy(pids, st->tids, st->nr_tids * sizeof(*pids));
		vm->vcpus = pids;
		vm->nr_vcpus = st->nr_tids;
		pids = NULL;
		st->nr_tids = 0;	/* moved */
		if (counting)
			tlbb_counter_start(vm);
	}
	if (ranges_new) {
		memcpy(vm->ranges, st->ranges, sizeof(vm->ranges));
		vm->nr_ranges = st->nr_ranges;
		vm->ranges_gen++;
	}
	if (memcmp(&p, &vm->params, sizeof(p))) {
		vm->params = p;
		if (!restart && vm->mode != TLBB_MODE_OFF)
			tlbb_ctrl_set_params(&vm->ctrl, &p);
	}
	if (restart && mode != TLBB_MODE_OFF) {
		tlbb_vm_start(vm, mode);
		pinned = false;		/* the started mode owns the pin */
	}
	/* off unregisters: nothing staged before may bring the VM back */
	if (st->staged & TLBB_STAGED_MODE && mode == TLBB_MODE_OFF)
		tlbb_vm_cancel_stages(vm, st);
	tlbb_stage_free(st);
	ret = tlbb_commit_result(vm, NULL, 0, "committed");
out:
	if (pinned)
		tlbb_configfs_unpin(vm);
	mutex_unlock(&vm->lock);
	kvfree(pids);
	if (mm)
		mmput(mm);
	put_pid(np);
	return ret;
}

int tlbb_vm_set_inject(const char *name, bool on, u64 huge, u64 small)
{
	struct tlbb_vm *vm;
	int ret = -ENOENT;

	if (!tlbb_allow_inject)
		return -EPERM;
	if (huge > TLBB_INJECT_MAX_RATE || small > TLBB_INJECT_MAX_RATE)
		return -ERANGE;
	mutex_lock(&tlbb_vms_lock);
	list_for_each_entry(vm, &tlbb_vms, node) {
		if (strcmp(vm->name, name))
			continue;
		mutex_lock(&vm->lock);
		vm->inject = on;
		vm->inject_huge = on ? huge : 0;
		vm->inject_small = on ? small : 0;
		mutex_unlock(&vm->lock);
		ret = 0;
		break;
	}
	mutex_unlock(&tlbb_vms_lock);
	return ret;
}

/*
 * N_hc for the huge_pages attribute: the last tick's count while the VM is
 * monitored, a fresh count while it is off. vm->lock held.
 */
/* The huge pages of the last count (a tick's, or a reader's). */
u64 tlbb_vm_huge_pages(struct tlbb_vm *vm)
{
	return vm->huge_pages;
}

/*
 * A reader of huge_pages or status, while the VM is off (no tick counts
 * then), counts afresh; without vm->lock: the ranges are copied under
 * the lock, the lock dropped for the walk, and the count stored only if
 * the ranges and the process did not change meanwhile. A root write or
 * a tick never waits for a reader's walk (t_readcost). Called without
 * vm->lock.
 */
void tlbb_vm_refresh_huge_pages(struct tlbb_vm *vm)
{
	struct tlbb_range *r;
	struct mm_struct *mm;
	unsigned int nr;
	u64 gen, n;

	r = kmalloc_array(TLBB_MAX_RANGES, sizeof(*r), GFP_KERNEL);
	if (!r)
		return;			/* the last count stands */
	mutex_lock(&vm->lock);
	mm = vm->mm;
	if (vm->mode != TLBB_MODE_OFF || !mm || READ_ONCE(vm->released) ||
	    !mmget_not_zero(mm)) {
		mutex_unlock(&vm->lock);
		kfree(r);
		return;
	}
	nr = vm->nr_ranges;
	memcpy(r, vm->ranges, nr * sizeof(*r));
	gen = vm->ranges_gen;
	mutex_unlock(&vm->lock);

	if (!tlbb_thp_count_ranges(mm, r, nr, &n)) {
		mutex_lock(&vm->lock);
		if (vm->ranges_gen == gen)
			vm->huge_pages = n;
		mutex_unlock(&vm->lock);
	}
	mmput(mm);
	kfree(r);
}

/* Which CPUs the vCPU threads may use and were last seen on. */
static void tlbb_vm_sample_cpus(struct tlbb_vm *vm)
{
	unsigned int i;

	cpumask_clear(vm->cpus_allowed);
	rcu_read_lock();
	for (i = 0; i < vm->nr_vcpus; i++) {
		struct task_struct *t = pid_task(vm->vcpus[i], PIDTYPE_PID);

		if (!t)
			continue;
		cpumask_or(vm->cpus_allowed, vm->cpus_allowed, t->cpus_ptr);
		cpumask_set_cpu(task_cpu(t), vm->cpus_ran);
	}
	rcu_read_unlock();
}

/* The core's decision of this tick, and the step of N_hl it made. */
static void tlbb_vm_trace_tick(struct tlbb_vm *vm,
				const struct tlbb_input *in, u64 old_limit,
				enum tlbb_action act)
{
	trace_tlbb_decision(vm, in, old_limit, act);
	if (vm->ctrl.limit < old_limit)
		trace_tlbb_step_down(vm, old_limit, vm->huge_pages);
	else if (vm->ctrl.limit > old_limit)
		trace_tlbb_step_up(vm, old_limit, vm->huge_pages);
}

/*
 * The limiter's part of a balance tick. Heat order with a window: arm the
 * sample and leave the split to the heat work a window later (a sample
 * still due from a late heat work: that work splits, with this tick's
 * limit). vm->lock held.
 */
static void tlbb_vm_limit(struct tlbb_vm *vm, struct mm_struct *mm)
{
	unsigned long delay;

	if (tlbb_split_order(&vm->params) == TLBB_SPLIT_HEAT) {
		if (vm->heat.armed)
			return;
		delay = tlbb_heat_arm(vm, mm);
		if (delay) {
			/* due then, even if an instance were still pending */
			mod_delayed_work(tlbb_wq, &vm->heat_work, delay);
			return;
		}
	}
	tlbb_thp_enforce(vm, mm, vm->ctrl.limit);
}

/*
 * A window after a heat-order tick: sample the slots the tick cleared. The
 * sample clears them again, so while the tick has windows left
 * (heat_samples) it is the start of the next one and the work queues
 * itself a window on; after the last, count again (the windows let the
 * process change its memory) and enforce the limit. Takes its own mm
 * reference, as the tick does; a VM stopped, released or being removed
 * meanwhile has nothing armed or is skipped.
 */
static void tlbb_vm_heat_work(struct work_struct *work)
{
	struct tlbb_vm *vm = container_of(to_delayed_work(work),
					  struct tlbb_vm, heat_work);
	struct mm_struct *mm = NULL;
	unsigned long sw0 = tlbb_cost_switches(), again = 0;
	u64 t0 = ktime_get_ns();

	mutex_lock(&vm->lock);
	if (vm->mode != TLBB_MODE_BALANCE || vm->dying || !vm->mm ||
	    READ_ONCE(vm->released) || !mmget_not_zero(vm->mm)) {
		vm->heat.armed = 0;	/* stopped, or the process is going */
		goto out;
	}
	mm = vm->mm;
	if (tlbb_heat_collect(vm, mm, &again) &&
	    tlbb_split_order(&vm->params) == TLBB_SPLIT_HEAT) {
		tlbb_thp_count(vm, mm, &vm->huge_pages);
		tlbb_thp_enforce(vm, mm, vm->ctrl.limit);
	} else if (again) {
		mod_delayed_work(tlbb_wq, &vm->heat_work, again);
	}
out:
	mutex_unlock(&vm->lock);
	if (mm) {
		mmput(mm);
		tlbb_cost_account_late(ktime_get_ns() - t0,
				       tlbb_cost_switches() != sw0);
	}
}

static void tlbb_vm_tick_work(struct work_struct *work)
{
	struct tlbb_vm *vm = container_of(to_delayed_work(work),
					  struct tlbb_vm, tick_work);
	struct tlbb_input in = { 0 };
	struct mm_struct *mm = NULL;
	unsigned long sw0 = tlbb_cost_switches();
	u64 t0 = ktime_get_ns(), ctrl_ns = 0, old_limit;
	enum tlbb_action act;

	mutex_lock(&vm->lock);
	if (vm->mode == TLBB_MODE_OFF || vm->dying || !vm->mm ||
	    READ_ONCE(vm->released) || !mmget_not_zero(vm->mm))
		goto out;		/* stopped, or exit work coming */
	mm = vm->mm;

	tlbb_thp_count(vm, mm, &vm->huge_pages);
	tlbb_vm_sample_cpus(vm);
	if (tlbb_counter_read(vm, &in.refills_huge, &in.refills_small)) {
		u64 c0;

		vm->refills_huge = in.refills_huge;
		vm->refills_small = in.refills_small;
		vm->refills_huge_total += in.refills_huge;
		vm->refills_small_total += in.refills_small;
		in.huge_in_use = vm->huge_pages;
		in.nr_vcpus = max(vm->nr_vcpus, 1U);
		old_limit = vm->ctrl.limit;
		c0 = ktime_get_ns();
		act = tlbb_ctrl_tick(&vm->ctrl, &in);
		ctrl_ns = ktime_get_ns() - c0;
		vm->ticks++;
		if (act == TLBB_ACT_RAISE)
			vm->lim.restores++;
		tlbb_vm_trace_tick(vm, &in, old_limit, act);
	}
	if (vm->mode == TLBB_MODE_BALANCE)
		tlbb_vm_limit(vm, mm);

	queue_delayed_work(tlbb_wq, &vm->tick_work,
			   msecs_to_jiffies(vm->params.interval_ms));
out:
	mutex_unlock(&vm->lock);
	if (mm) {
		mmput(mm);
		tlbb_cost_account(ktime_get_ns() - t0, ctrl_ns,
				  tlbb_cost_switches() != sw0);
	}
}
