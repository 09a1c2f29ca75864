// SPDX-License-Identifier: GPL-2.0
/*
 * debugfs: /sys/kernel/debug/tlbbalance/
 *
 *   inject     (allow_inject=1 only) "<vm> <huge/s> <small/s>" replaces the
 *              VM's counting backend by constant refill rates, "<vm> off"
 *              ends it; reading lists the VMs with injection on.
 *   tick_cost  cost of the per-VM tick, for the benchmark: "vms", "ticks",
 *              "tick_ns" (whole tick: count, controller, limiter; with a
 *              heat window also the heat work that ends the tick), "ctrl_ns"
 *              (controller core only), the two per-tick averages: on-CPU
 *              time, from the ticks that ran without a context switch
 *              (tlbb_cost.h); "wall_ticks", "wall_ns" and
 *              "wall_ns_per_vm_tick": every tick's wall time, which also
 *              holds the time it waited for a lock or for the CPU; then
 *              "ktime_ns", the cost of one clock read (two are in each
 *              figure), "heat_ns"/"heat_pmds" (accessed-bit sampling,
 *              split_order 2: time and huge-page slots sampled); writing
 *              "0" resets the sums.
 */
#include <linux/atomic.h>
#include <linux/capability.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "tlbb.h"
#include "tlbb_cost.h"
#include "tlbb_parse.h"

static struct dentry *tlbb_debugfs_dir;

/* What one ktime_get_ns() costs here: each figure above includes two. */
static u64 tlbb_ktime_cost(void)
{
	u64 t0 = ktime_get_ns(), t1 = t0;
	int i;

	for (i = 0; i < 1000; i++)
		t1 = ktime_get_ns();
	return div_u64(t1 - t0, 1000);
}

static int tlbb_cost_show(struct seq_file *m, void *v)
{
	u64 ticks = atomic64_read(&tlbb_ticks);
	u64 tick_ns = atomic64_read(&tlbb_tick_ns);
	u64 ctrl_ns = atomic64_read(&tlbb_ctrl_ns);
	u64 wall_ticks = atomic64_read(&tlbb_wall_ticks);
	u64 wall_ns = atomic64_read(&tlbb_wall_ns);

	seq_printf(m, "vms %d\nticks %llu\ntick_ns %llu\nctrl_ns %llu\n",
		   atomic_read(&tlbb_nr_vms), ticks, tick_ns, ctrl_ns);
	seq_printf(m, "tick_ns_per_vm_tick %llu\nctrl_ns_per_vm_tick %llu\n",
		   ticks ? div64_u64(tick_ns, ticks) : 0,
		   ticks ? div64_u64(ctrl_ns, ticks) : 0);
	seq_printf(m, "wall_ticks %llu\nwall_ns %llu\nwall_ns_per_vm_tick %llu\n",
		   wall_ticks, wall_ns,
		   wall_ticks ? div64_u64(wall_ns, wall_ticks) : 0);
	seq_printf(m, "heat_ns %llu\nheat_pmds %llu\n",
		   (u64)atomic64_read(&tlbb_heat_ns),
		   (u64)atomic64_read(&tlbb_heat_pmds));
	seq_printf(m, "ktime_ns %llu\n", tlbb_ktime_cost());
	return 0;
}

static int tlbb_cost_open(struct inode *inode, struct file *file)
{
	return single_open(file, tlbb_cost_show, NULL);
}

static ssize_t tlbb_cost_write(struct file *file, const char __user *ubuf,
			       size_t len, loff_t *ppos)
{
	char buf[8];
	size_t n = min(len, sizeof(buf) - 1);

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (copy_from_user(buf, ubuf, n))
		return -EFAULT;
	buf[n] = '\0';
	if (!sysfs_streq(buf, "0"))
		return -EINVAL;
	atomic64_set(&tlbb_ticks, 0);
	atomic64_set(&tlbb_tick_ns, 0);
	atomic64_set(&tlbb_ctrl_ns, 0);
	atomic64_set(&tlbb_wall_ticks, 0);
	atomic64_set(&tlbb_wall_ns, 0);
	atomic64_set(&tlbb_heat_ns, 0);
	atomic64_set(&tlbb_heat_pmds, 0);
	return len;
}

static const struct file_operations tlbb_cost_fops = {
	.owner = THIS_MODULE,
	.open = tlbb_cost_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = tlbb_cost_write,
};

static int tlbb_inject_show(struct seq_file *m, void *v)
{
	struct tlbb_vm *vm;

	mutex_lock(&tlbb_vms_lock);
	list_for_each_entry(vm, &tlbb_vms, node) {
		mutex_lock(&vm->lock);
		if (vm->inject)
			seq_printf(m, "%s %llu %llu\n", vm->name,
				   vm->inject_huge, vm->inject_small);
		mutex_unlock(&vm->lock);
	}
	mutex_unlock(&tlbb_vms_lock);
	return 0;
}

static int tlbb_inject_open(struct inode *inode, struct file *file)
{
	return single_open(file, tlbb_inject_show, NULL);
}

/* One line: "<vm> <huge> <small>" or "<vm> off". */
static ssize_t tlbb_inject_write(struct file *file, const char __user *ubuf,
				 size_t len, loff_t *ppos)
{
	char *buf, *p, *name, *a, *b;
	u64 huge = 0, small = 0;
	bool on;
	int ret;

	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (len > 256)
		return -EINVAL;
	buf = memdup_user_nul(ubuf, len);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	ret = -EINVAL;
	if (strlen(buf) != len)
		goto out;		/* embedded NUL */
	p = strim(buf);
	name = strsep(&p, " \t");
	a = p ? strsep(&p, " \t") : NULL;
	b = p ? strsep(&p, " \t") : NULL;
	if (!name || !tlbb_name_ok(name) || !a || p)
		goto out;
	on = strcmp(a, "off");
	if (on) {
		if (!b)
			goto out;
		ret = tlbb_parse_u64(a, false, &huge);
		if (!ret)
			ret = tlbb_parse_u64(b, false, &small);
		if (ret)
			goto out;
	} else if (b) {
		goto out;
	}
	ret = tlbb_vm_set_inject(name, on, huge, small);
out:
	kfree(buf);
	return ret ? ret : len;
}

static const struct file_operations tlbb_inject_fops = {
	.owner = THIS_MODULE,
	.open = tlbb_inject_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
	.write = tlbb_inject_write,
};

int tlbb_debugfs_init(void)
{
	/* debugfs is optional: the module works without it. */
	tlbb_debugfs_dir = debugfs_create_dir("tlbbalance", NULL);
	debugfs_create_file("tick_cost", 0600, tlbb_debugfs_dir, NULL,
			    &tlbb_cost_fops);
	if (tlbb_allow_inject)
		debugfs_create_file("inject", 0600, tlbb_debugfs_dir, NULL,
				    &tlbb_inject_fops);
	return 0;
}

void tlbb_debugfs_exit(void)
{
	debugfs_remove_recursive(tlbb_debugfs_dir);
}
