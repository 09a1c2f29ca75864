/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Differences between the kernels the module supports (5.10 .. 7.2), kept in
 * one place so the rest of the module reads like current kernel code.
 */
#ifndef TLBB_COMPAT_H
#define TLBB_COMPAT_H

#include <linux/mm.h>
#include <linux/version.h>

/* 5.15 moved the compiler's stdarg.h into the kernel's own headers. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(5, 15, 0)
#include <linux/stdarg.h>
#else
#include <stdarg.h>
#endif

/*
 * 6.1 keeps VMAs in a maple tree walked with a VMA iterator; before, a
 * list from mm->mmap. TLBB_VMA_ITER(it, mm) declares the walk's state,
 * tlbb_for_each_vma(it, vma) walks every VMA (mmap lock held).
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 1, 0)
#define TLBB_VMA_ITER(it, mm)		VMA_ITERATOR(it, mm, 0)
#define tlbb_for_each_vma(it, vma)	for_each_vma(it, vma)
#else
#define TLBB_VMA_ITER(it, mm)		struct mm_struct *it = (mm)
#define tlbb_for_each_vma(it, vma)	\
	for ((vma) = (it)->mmap; (vma); (vma) = (vma)->vm_next)
#endif

/*
 * TASK_SIZE_MAX, the top of any process's user space (ranges are checked
 * against it). arm64 defines it from 5.11 on; 5.10's arm64 has only the
 * fallback of <linux/uaccess.h>, TASK_SIZE, which is the writing task's own
 * size (32 bits for a compat task), not every process's: the same value as
 * later kernels here.
 */
#if defined(CONFIG_ARM64) && !defined(TASK_SIZE_MAX)
#define TASK_SIZE_MAX		(UL(1) << VA_BITS)
#endif

/* 6.3 made vm_flags private: writes go through vm_flags_set()/_clear(). */
static inline void tlbb_vma_set_flags(struct vm_area_struct *vma,
				      unsigned long flags)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

static inline void tlbb_vma_clear_flags(struct vm_area_struct *vma,
					unsigned long flags)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_clear(vma, flags);
#else
	vma->vm_flags &= ~flags;
#endif
}

/*
 * Split the huge PMD mapping @addr in @mm (mmap lock held for reading):
 * get_user_pages_remote() with FOLL_SPLIT_PMD and no page array. 6.5
 * dropped the vmas argument.
 */
static inline long tlbb_gup_split_pmd(struct mm_struct *mm, unsigned long addr)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 5, 0)
	return get_user_pages_remote(mm, addr, 1, FOLL_SPLIT_PMD, NULL, NULL);
#else
	return get_user_pages_remote(mm, addr, 1, FOLL_SPLIT_PMD, NULL, NULL,
				     NULL);
#endif
}

/* 6.4 added pmdp_get(); plain READ_ONCE before. */
static inline pmd_t tlbb_pmd_read(pmd_t *pmdp)
{
	return READ_ONCE(*pmdp);
}

/*
 * Test and clear the accessed bit of the huge PMD @pmdp (PMD lock held).
 * x86 has pmdp_test_and_clear_young() out of line and does not export it:
 * the same atomic bit operation as arch/x86/mm/pgtable.c here; arm64 has
 * it inline.
 */
static inline int tlbb_pmdp_test_and_clear_young(struct vm_area_struct *vma,
						 unsigned long addr,
						 pmd_t *pmdp)
{
#ifdef CONFIG_X86
	if (!pmd_young(*pmdp))
		return 0;
	return test_and_clear_bit(_PAGE_BIT_ACCESSED, (unsigned long *)pmdp);
#else
	return pmdp_test_and_clear_young(vma, addr, pmdp);
#endif
}

#endif /* TLBB_COMPAT_H */
