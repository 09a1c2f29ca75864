// SPDX-License-Identifier: GPL-2.0
/*
 * The configfs interface: /sys/kernel/config/tlbbalance/ (see
 * docs/kernel-module.md). Permission checks and formatting only: what is
 * written is parsed by tlbb_parse.c, the statistics are read by
 * tlbb_stats.c, and the VM layer (tlbb_vm.c) validates against the process
 * and applies.
 *
 * One attribute per line of core/tlbb_params.def (rw) and tlbb_stats.def
 * (ro), generated with X-macros.
 */
#include <linux/capability.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/pid.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>

#include "tlbb.h"
#include "tlbb_parse.h"
#include "tlbb_stats.h"

/* A store of this length may have been cut by configfs (one page). */
#define TLBB_STORE_MAX		(PAGE_SIZE - 1)
/* What a show may return: one page less the NUL (configfs: EIO beyond). */
#define TLBB_SHOW_MAX		(PAGE_SIZE - 1)

/* Common checks of every store: privilege, embedded NULs, length. */
static int tlbb_store_check(const char *page, size_t len)
{
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (strnlen(page, len) != len)
		return -EINVAL;
	if (len >= TLBB_STORE_MAX)
		return -ERANGE;
	return 0;
}

/*
 * Per-VM files are root's only (0600, read-only ones 0400): they show the
 * QEMU process, its threads and its guest memory layout.
 */
#define TLBB_ATTR_RW(_pfx, _name)					\
static struct configfs_attribute _pfx##attr_##_name = {			\
	.ca_name	= __stringify(_name),				\
	.ca_mode	= 0600,						\
	.ca_owner	= THIS_MODULE,					\
	.show		= _pfx##_name##_show,				\
	.store		= _pfx##_name##_store,				\
}

#define TLBB_ATTR_RO(_pfx, _name)					\
static struct configfs_attribute _pfx##attr_##_name = {			\
	.ca_name	= __stringify(_name),				\
	.ca_mode	= 0400,						\
	.ca_owner	= THIS_MODULE,					\
	.show		= _pfx##_name##_show,				\
}

/* ---- pid ---- */

static ssize_t tlbb_vm_pid_show(struct config_item *item, char *page)
{
	struct tlbb_vm *vm = to_tlbb_vm(item);
	pid_t nr;

	mutex_lock(&vm->lock);
	nr = vm->pid ? pid_vnr(vm->pid) : 0;
	mutex_unlock(&vm->lock);
	return sysfs_emit(page, "%d\n", nr);
}

static ssize_t tlbb_vm_pid_store(struct config_item *item, const char *page,
				 size_t len)
{
	int ret = tlbb_store_check(page, len);
	int nr;

	if (ret)
		return ret;
	ret = tlbb_parse_id(page, &nr);
	if (ret)
		return ret;
	ret = tlbb_vm_set_pid(to_tlbb_vm(item), nr);
	return ret ? ret : len;
}

/* ---- vcpu_tids ---- */

static ssize_t tlbb_vm_vcpu_tids_show(struct config_item *item, char *page)
{
	struct tlbb_vm *vm = to_tlbb_vm(item);
	unsigned int i;
	ssize_t n = 0;
	char id[16];
	int m;

	mutex_lock(&vm->lock);
	for (i = 0; i < vm->nr_vcpus; i++) {
		/* whole ids only, and room for the newline: one page */
		m = scnprintf(id, sizeof(id), "%s%d", i ? " " : "",
			      pid_vnr(vm->vcpus[i]));
		if (n + m + 1 > (ssize_t)TLBB_SHOW_MAX)
			break;
		memcpy(page + n, id, m);
		n += m;
	}
	mutex_unlock(&vm->lock);
	n += sysfs_emit_at(page, n, "\n");
	return n;
}

/*
 * Thread ids separated by spaces, commas or newlines; the list replaces the
 * old one. A leading '+' appends instead (a configfs write is one page).
 */
static ssize_t tlbb_vm_vcpu_tids_store(struct config_item *item,
				       const char *page, size_t len)
{
	int ret = tlbb_store_check(page, len);
	char *buf, *p, *tok;
	unsigned int n = 0;
	bool append = false;
	int *tids;

	if (ret)
		return ret;
	buf = kmemdup_nul(page, len, GFP_KERNEL);
	tids = kcalloc(TLBB_MAX_VCPUS, sizeof(*tids), GFP_KERNEL);
	ret = -ENOMEM;
	if (!buf || !tids)
		goto out;
	p = skip_spaces(buf);
	if (*p == '+') {
		append = true;
		p++;
	}
	while ((tok = strsep(&p, " ,\n\t")) != NULL) {
		int tid;

		if (!*tok)
			continue;
		ret = -ERANGE;
		if (n == TLBB_MAX_VCPUS)
			goto out;
		ret = tlbb_parse_id(tok, &tid);
		if (ret)
			goto out;
		ret = -EINVAL;
		if (!tid)
			goto out;
		tids[n++] = tid;
	}
	ret = tlbb_vm_set_vcpus(to_tlbb_vm(item), tids, n, append);
out:
	kfree(tids);
	kfree(buf);
	return ret ? ret : len;
}

/* ---- ranges ---- */

static ssize_t tlbb_vm_ranges_show(struct config_item *item, char *page)
{
	struct tlbb_vm *vm = to_tlbb_vm(item);
	unsigned int i;
	ssize_t n = 0;

	mutex_lock(&vm->lock);
	for (i = 0; i < vm->nr_ranges; i++)
		n += sysfs_emit_at(page, n, "0x%lx 0x%lx 0x%llx\n",
				   vm->ranges[i].hva, vm->ranges[i].len,
				   vm->ranges[i].gpa);
	mutex_unlock(&vm->lock);
	return n;
}

static int tlbb_range_line(char *line, void *elem)
{
	return tlbb_parse_range(line, elem);
}

static ssize_t tlbb_vm_ranges_store(struct config_item *item,
				    const char *page, size_t len)
{
	int ret = tlbb_store_check(page, len);
	struct tlbb_range *r;
	unsigned int n, i;
	void *a;

	if (ret)
		return ret;
	ret = tlbb_parse_lines(page, len, TLBB_MAX_RANGES, sizeof(*r),
			       tlbb_range_line, &a, &n);
	r = a;
	if (ret)
		goto out;
	/* No two ranges may overlap, in host or in guest addresses. */
	sort(r, n, sizeof(*r), tlbb_range_cmp, NULL);
	ret = -EINVAL;
	for (i = 1; i < n; i++)
		if (r[i - 1].hva + r[i - 1].len > r[i].hva)
			goto out;
	for (i = 0; i < n; i++) {
		unsigned int j;

		for (j = i + 1; j < n; j++)
			if (r[i].gpa < r[j].gpa + r[j].len &&
			    r[j].gpa < r[i].gpa + r[i].len)
				goto out;
	}
	ret = tlbb_vm_set_ranges(to_tlbb_vm(item), r, n);
out:
	kfree(r);
	return ret ? ret : len;
}

/* ---- heat: fed by user space (tlbb_heat.c) ---- */

static ssize_t tlbb_vm_heat_show(struct config_item *item, char *page)
{
	struct tlbb_vm *vm = to_tlbb_vm(item);
	ssize_t n;

	mutex_lock(&vm->lock);
	n = sysfs_emit(page, "%s %llu\n", vm->heat.fed ? "fed" : "sampled",
		       vm->heat.fed_slots);
	mutex_unlock(&vm->lock);
	return n;
}

/*
 * "<hva> <length> <heat>" lines (heat 0 cold .. 255 hot) set the heat of
 * the huge-page slots they overlap, and the VM's heat is fed from then
 * on (not sampled); "sampled" goes back to the module's own sampling.
 */
static int tlbb_heat_line(char *line, void *elem)
{
	return tlbb_parse_heat(line, elem);
}

static ssize_t tlbb_vm_heat_store(struct config_item *item,
				  const char *page, size_t len)
{
	int ret = tlbb_store_check(page, len);
	struct tlbb_heat_line *h;
	unsigned int n;
	void *a;

	if (ret)
		return ret;
	if (sysfs_streq(page, "sampled")) {
		ret = tlbb_heat_sample(to_tlbb_vm(item));
		return ret ? ret : len;
	}
	ret = tlbb_parse_lines(page, len, TLBB_MAX_HEAT_LINES, sizeof(*h),
			       tlbb_heat_line, &a, &n);
	h = a;
	if (ret)
		goto out;
	ret = n ? tlbb_heat_feed(to_tlbb_vm(item), h, n) : -EINVAL;
out:
	kfree(h);
	return ret ? ret : len;
}

/* ---- mode ---- */

static ssize_t tlbb_vm_mode_show(struct config_item *item, char *page)
{
	struct tlbb_vm *vm = to_tlbb_vm(item);
	enum tlbb_mode mode;

	mutex_lock(&vm->lock);
	mode = vm->mode;
	mutex_unlock(&vm->lock);
	return sysfs_emit(page, "%s\n", tlbb_mode_name(mode));
}

static ssize_t tlbb_vm_mode_store(struct config_item *item, const char *page,
				  size_t len)
{
	int ret = tlbb_store_check(page, len);
	enum tlbb_mode mode;

	if (ret)
		return ret;
	for (mode = 0; mode < TLBB_NR_MODES; mode++)
		if (sysfs_streq(page, tlbb_mode_name(mode)))
			break;
	if (mode == TLBB_NR_MODES)
		return -EINVAL;
	ret = tlbb_vm_set_mode(to_tlbb_vm(item), mode);
	return ret ? ret : len;
}

/* ---- commit: staged registration ---- */

static ssize_t tlbb_vm_commit_show(struct config_item *item, char *page)
{
	struct tlbb_vm *vm = to_tlbb_vm(item);
	const char *state, *msg;
	ssize_t n;
	int err;

	mutex_lock(&vm->lock);
	state = tlbb_vm_stage_state(vm, &err, &msg);
	n = sysfs_emit(page, "%s\nlast %d %s\n", state, err,
		       msg[0] ? msg : "-");
	mutex_unlock(&vm->lock);
	return n;
}

/*
 * "stage": from now on this thread's writes to pid, vcpu_tids, ranges,
 * mode and the tunables are staged (checked for form, ids resolved);
 * "commit": check them against the system and apply what was written at
 * once, or fail naming what is wrong (read this file); "abort": drop the
 * stage. Each writer (thread) has its own stage.
 */
static ssize_t tlbb_vm_commit_store(struct config_item *item,
				    const char *page, size_t len)
{
	struct tlbb_vm *vm = to_tlbb_vm(item);
	int ret = tlbb_store_check(page, len);

	if (ret)
		return ret;
	if (sysfs_streq(page, "stage"))
		ret = tlbb_vm_stage(vm);
	else if (sysfs_streq(page, "commit"))
		ret = tlbb_vm_commit(vm);
	else if (sysfs_streq(page, "abort"))
		ret = tlbb_vm_abort(vm);
	else
		ret = -EINVAL;
	return ret ? ret : len;
}

/*
 * ---- parameters: one attribute per line of tlbb_params.def ----
 * A write takes the number, or for an enumerated tunable (split_order,
 * method) its name from tlbb_choices.def; a read gives the number, which
 * clients of earlier releases write and compare (docs/kernel-module.md).
 */

static ssize_t tlbb_param_show(struct config_item *item,
			       enum tlbb_param_id id, char *page)
{
	struct tlbb_vm *vm = to_tlbb_vm(item);
	u64 val;

	mutex_lock(&vm->lock);
	val = tlbb_param_get(&vm->params, id);
	mutex_unlock(&vm->lock);
	return sysfs_emit(page, "%llu\n", val);
}

static ssize_t tlbb_param_store(struct config_item *item,
				enum tlbb_param_id id, const char *page,
				size_t len)
{
	int ret = tlbb_store_check(page, len);
	u64 val;

	if (ret)
		return ret;
	ret = tlbb_parse_u64(page, false, &val);
	if (ret == -EINVAL) {
		/* a named value of tlbb_choices.def */
		size_t n = len && page[len - 1] == '\n' ? len - 1 : len;

		if (!tlbb_choice_parse(id, page, n, &val))
			ret = 0;
	}
	if (ret)
		return ret;
	ret = tlbb_vm_set_param(to_tlbb_vm(item), id, val);
	return ret ? ret : len;
}

#define TLBB_PARAM(name, def, min, max, unit, help)			\
static ssize_t tlbb_p_##name##_show(struct config_item *item, char *page) \
{									\
	return tlbb_param_show(item, TLBB_P_##name, page);		\
}									\
static ssize_t tlbb_p_##name##_store(struct config_item *item,		\
				     const char *page, size_t len)	\
{									\
	return tlbb_param_store(item, TLBB_P_##name, page, len);	\
}									\
TLBB_ATTR_RW(tlbb_p_, name);
#include "core/tlbb_params.def"
#undef TLBB_PARAM

/* ---- statistics: one attribute per line of tlbb_stats.def ---- */

/* Formatters by kind; each appends "<value>\n" at @page + @at. */
static int tlbb_fmt_u64(char *page, int at, u64 v)
{
	return sysfs_emit_at(page, at, "%llu\n", v);
}

static int tlbb_fmt_milli(char *page, int at, u64 v)
{
	return sysfs_emit_at(page, at, "%llu.%03llu\n", div_u64(v, 1000),
			     v % 1000);
}

static int tlbb_fmt_str(char *page, int at, const char *s)
{
	return sysfs_emit_at(page, at, "%s\n", s);
}

static int tlbb_fmt_cpulist(char *page, int at, const struct cpumask *m)
{
	return sysfs_emit_at(page, at, "%*pbl\n", cpumask_pr_args(m));
}

#define TLBB_STAT(name, kind, type, unit, help)				\
static ssize_t tlbb_s_##name##_show(struct config_item *item, char *page) \
{									\
	struct tlbb_vm *vm = to_tlbb_vm(item);				\
	ssize_t n;							\
									\
	tlbb_stat_prepare(vm, TLBB_S_##name);				\
	mutex_lock(&vm->lock);						\
	n = tlbb_fmt_##kind(page, 0, tlbb_get_##name(vm));		\
	mutex_unlock(&vm->lock);					\
	return n;							\
}									\
TLBB_ATTR_RO(tlbb_s_, name);
#include "core/tlbb_stats.def"
#undef TLBB_STAT

/* ---- status: everything as "key value" lines ---- */

static ssize_t tlbb_vm_status_show(struct config_item *item, char *page)
{
	struct tlbb_vm *vm = to_tlbb_vm(item);
	int n = 0;

	tlbb_stats_prepare(vm);		/* e.g. a walk, outside vm->lock */
	mutex_lock(&vm->lock);
	n += sysfs_emit_at(page, n,
			   "mode %s\npid %d\ninject_enabled %d\nlimiter_error %d\nlimiter_stuck %llu\nstaging %d\n",
			   tlbb_mode_name(vm->mode),
			   vm->pid ? pid_vnr(vm->pid) : 0, tlbb_allow_inject,
			   vm->lim.last_err, vm->lim.stuck,
			   tlbb_vm_nr_stages(vm));
#define TLBB_STAT(name, kind, type, unit, help)				\
	n += sysfs_emit_at(page, n, "%s ", #name);			\
	n += tlbb_fmt_##kind(page, n, tlbb_get_##name(vm));
#include "core/tlbb_stats.def"
#undef TLBB_STAT
#define TLBB_PARAM(name, def, min, max, unit, help)			\
	n += sysfs_emit_at(page, n, "%s %llu\n", #name,		\
			   tlbb_param_get(&vm->params, TLBB_P_##name));
#include "core/tlbb_params.def"
#undef TLBB_PARAM
	mutex_unlock(&vm->lock);
	return n;
}

TLBB_ATTR_RW(tlbb_vm_, pid);
TLBB_ATTR_RW(tlbb_vm_, vcpu_tids);
TLBB_ATTR_RW(tlbb_vm_, ranges);
TLBB_ATTR_RW(tlbb_vm_, heat);
TLBB_ATTR_RW(tlbb_vm_, mode);
TLBB_ATTR_RW(tlbb_vm_, commit);
TLBB_ATTR_RO(tlbb_vm_, status);

static struct configfs_attribute *tlbb_vm_attrs[] = {
	&tlbb_vm_attr_pid,
	&tlbb_vm_attr_vcpu_tids,
	&tlbb_vm_attr_ranges,
	&tlbb_vm_attr_heat,
	&tlbb_vm_attr_mode,
	&tlbb_vm_attr_commit,
	&tlbb_vm_attr_status,
#define TLBB_PARAM(name, def, min, max, unit, help) &tlbb_p_attr_##name,
#include "core/tlbb_params.def"
#undef TLBB_PARAM
#define TLBB_STAT(name, kind, type, unit, help) &tlbb_s_attr_##name,
#include "core/tlbb_stats.def"
#undef TLBB_STAT
	NULL,
};

static void tlbb_vm_item_release(struct config_item *item)
{
	tlbb_vm_free(to_tlbb_vm(item));
}

static struct configfs_item_operations tlbb_vm_item_ops = {
	.release = tlbb_vm_item_release,
};

static const struct config_item_type tlbb_vm_type = {
	.ct_item_ops = &tlbb_vm_item_ops,
	.ct_attrs = tlbb_vm_attrs,
	.ct_owner = THIS_MODULE,
};

/* ---- vms/: mkdir and rmdir ---- */

static struct config_group *tlbb_vms_make_group(struct config_group *group,
						const char *name)
{
	struct tlbb_vm *vm;

	if (!capable(CAP_SYS_ADMIN))
		return ERR_PTR(-EPERM);
	if (!tlbb_name_ok(name))
		return ERR_PTR(-EINVAL);
	vm = tlbb_vm_create(name);
	if (!vm)
		return ERR_PTR(-ENOMEM);
	config_group_init_type_name(&vm->group, name, &tlbb_vm_type);
	return &vm->group;
}

static void tlbb_vms_drop_item(struct config_group *group,
			       struct config_item *item)
{
	tlbb_vm_drop(to_tlbb_vm(item));
	config_item_put(item);
}

static struct configfs_group_operations tlbb_vms_group_ops = {
	.make_group = tlbb_vms_make_group,
	.drop_item = tlbb_vms_drop_item,
};

static const struct config_item_type tlbb_vms_type = {
	.ct_group_ops = &tlbb_vms_group_ops,
	.ct_owner = THIS_MODULE,
};

static struct config_group tlbb_vms_group;
static struct configfs_subsystem tlbb_subsys;

/*
 * While a VM is monitored or balanced its directory is pinned: rmdir fails
 * with EBUSY for everyone, so only a writer of "off" to mode (CAP_SYS_ADMIN)
 * can lift what the module holds; configfs cannot refuse an rmdir by
 * the caller's capabilities. Called from the mode store (a configfs callback
 * of this subsystem: the _unlocked variant) and the exit work.
 */
int tlbb_configfs_pin(struct tlbb_vm *vm)
{
	return configfs_depend_item_unlocked(&tlbb_subsys, &vm->group.cg_item);
}

void tlbb_configfs_unpin(struct tlbb_vm *vm)
{
	configfs_undepend_item_unlocked(&vm->group.cg_item);
}

/* ---- the subsystem root ---- */

static ssize_t tlbb_root_version_show(struct config_item *item, char *page)
{
	return sysfs_emit(page, "1\n");
}

CONFIGFS_ATTR_RO(tlbb_root_, version);

static struct configfs_attribute *tlbb_root_attrs[] = {
	&tlbb_root_attr_version,
	NULL,
};

static const struct config_item_type tlbb_root_type = {
	.ct_attrs = tlbb_root_attrs,
	.ct_owner = THIS_MODULE,
};

static struct configfs_subsystem tlbb_subsys = {
	.su_group = {
		.cg_item = {
			.ci_namebuf = "tlbbalance",
			.ci_type = &tlbb_root_type,
		},
	},
};

int tlbb_configfs_init(void)
{
	config_group_init(&tlbb_subsys.su_group);
	mutex_init(&tlbb_subsys.su_mutex);
	config_group_init_type_name(&tlbb_vms_group, "vms", &tlbb_vms_type);
	configfs_add_default_group(&tlbb_vms_group, &tlbb_subsys.su_group);
	return configfs_register_subsystem(&tlbb_subsys);
}

void tlbb_configfs_exit(void)
{
	configfs_unregister_subsystem(&tlbb_subsys);
}
