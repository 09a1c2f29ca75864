// SPDX-License-Identifier: GPL-2.0
/*
 * tlbbalance.ko: balance huge and small TLB groups of KVM guests by limiting
 * the transparent huge pages backing their RAM.
 *
 * Module init and exit, module parameters, the shared workqueue and the
 * dedicated slab cache of VM objects (/proc/slabinfo: "tlbb_vm").
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/slab.h>

#include "tlbb.h"

bool tlbb_allow_inject;
module_param_named(allow_inject, tlbb_allow_inject, bool, 0444);
MODULE_PARM_DESC(allow_inject,
		 "enable the debugfs refill injection backend (tests only)");

struct workqueue_struct *tlbb_wq;
struct kmem_cache *tlbb_vm_cache;
DEFINE_MUTEX(tlbb_vms_lock);
LIST_HEAD(tlbb_vms);
atomic_t tlbb_nr_vms = ATOMIC_INIT(0);

static int __init tlbb_init(void)
{
	int ret;

	/*
	 * A usercopy region keeps the cache from being merged with others of
	 * the same size, so /proc/slabinfo counts exactly our VM objects.
	 */
	tlbb_vm_cache = kmem_cache_create_usercopy("tlbb_vm",
			sizeof(struct tlbb_vm), 0, SLAB_HWCACHE_ALIGN,
			offsetof(struct tlbb_vm, name),
			sizeof_field(struct tlbb_vm, name), NULL);
	if (!tlbb_vm_cache)
		return -ENOMEM;

	tlbb_wq = alloc_workqueue("tlbbalance", WQ_UNBOUND, 0);
	if (!tlbb_wq) {
		ret = -ENOMEM;
		goto err_cache;
	}

	ret = tlbb_debugfs_init();
	if (ret)
		goto err_wq;

	ret = tlbb_configfs_init();
	if (ret)
		goto err_debugfs;

	if (tlbb_allow_inject)
		pr_warn("refill injection enabled (allow_inject=1): for tests only\n");
	pr_info("loaded\n");
	return 0;

err_debugfs:
	tlbb_debugfs_exit();
err_wq:
	destroy_workqueue(tlbb_wq);
err_cache:
	kmem_cache_destroy(tlbb_vm_cache);
	return ret;
}

static void __exit tlbb_exit(void)
{
	/*
	 * configfs holds a module reference per VM directory, so no VM exists
	 * here: rmmod with VMs registered fails with EBUSY before we run.
	 */
	tlbb_configfs_exit();
	tlbb_debugfs_exit();
	destroy_workqueue(tlbb_wq);
	kmem_cache_destroy(tlbb_vm_cache);
	pr_info("unloaded\n");
}

module_init(tlbb_init);
module_exit(tlbb_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("Balance huge/small TLB groups of VMs by limiting THP");
MODULE_AUTHOR("nova-tlbbalance");
MODULE_SOFTDEP("pre: configfs");
MODULE_VERSION(TLBB_VERSION);
