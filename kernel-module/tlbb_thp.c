// SPDX-License-Identifier: GPL-2.0
/*
 * The THP limiter: count the PMD-mapped huge pages of a VM's guest RAM and
 * hold them at the controller's limit N_hl.
 *
 * Counting walks the page tables (pgd/p4d/pud/pmd_offset) of every
 * PMD-aligned huge-page slot of the registered ranges under the mmap read
 * lock. Only anonymous VMAs count: that is what THP-backed guest RAM is.
 * hugetlbfs pages cannot be split and are neither counted nor limited.
 *
 * Splitting uses get_user_pages_remote(FOLL_SPLIT_PMD): the PMD mapping is
 * replaced by a page table mapping the same physical pages, so contents never
 * change and nothing is copied; KVM's MMU notifier drops its stage-2 huge
 * mapping and refaults it at the base page size.
 *
 * Which pages: the excess is split from the end of the last range downward.
 * The controller acts on the refill ratio of the whole VM, not on single
 * pages (no PMU tells which huge page is hot without sampling), so the
 * choice is made deterministic and cheap instead: it is reproducible, keeps
 * the low guest-physical memory (kernel text and early allocations of the
 * guest, usually the hottest) huge longest, and after a raise the pages
 * khugepaged re-forms are the first to be split again.
 *
 * Holding: while N_hc >= N_hl < total the covering anonymous VMAs carry
 * VM_NOHUGEPAGE (set by us, recorded in vm->lim.held), so neither page
 * faults nor khugepaged form new huge pages. The flag is cleared again on
 * the recorded spans when the limit rises above N_hc (huge pages may return),
 * on mode off/monitor, rmdir and module exit. The whole VMA is flagged (a
 * module cannot split a VMA); QEMU maps guest RAM in VMAs of its own.
 */
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/pgtable.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "tlbb.h"
#include "tlbb_compat.h"

u64 tlbb_thp_total_pages(const struct tlbb_range *r, unsigned int n)
{
	u64 total = 0;
	unsigned int i;

	for (i = 0; i < n; i++) {
		unsigned long start = ALIGN(r[i].hva, PMD_SIZE);
		unsigned long end = ALIGN_DOWN(r[i].hva + r[i].len, PMD_SIZE);

		if (end > start)
			total += (end - start) >> PMD_SHIFT;
	}
	return total;
}

/* Every byte of every range must be inside a VMA of @mm. */
int tlbb_thp_check_ranges(struct mm_struct *mm, const struct tlbb_range *r,
			  unsigned int n)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; i < n; i++)
		if (r[i].hva + r[i].len > mm->task_size)
			return -EFAULT;

	if (mmap_read_lock_killable(mm))
		return -EINTR;
	for (i = 0; i < n && !ret; i++) {
		unsigned long addr = r[i].hva, end = r[i].hva + r[i].len;

		while (addr < end) {
			struct vm_area_struct *vma = find_vma(mm, addr);

			if (!vma || vma->vm_start > addr) {
				ret = -EFAULT;
				break;
			}
			addr = vma->vm_end;
		}
	}
	mmap_read_unlock(mm);
	return ret;
}

/* Is @addr (PMD-aligned) mapped by a huge PMD? mmap lock held. */
static bool tlbb_pmd_is_huge(struct mm_struct *mm, unsigned long addr)
{
	pgd_t *pgd;
	p4d_t *p4d;
	pud_t *pud, pudv;
	pmd_t pmdv;

	pgd = pgd_offset(mm, addr);
	if (pgd_none(*pgd) || pgd_bad(*pgd))
		return false;
	p4d = p4d_offset(pgd, addr);
	if (p4d_none(*p4d) || p4d_bad(*p4d))
		return false;
	pud = pud_offset(p4d, addr);
	pudv = READ_ONCE(*pud);
	/* pud_bad() is also true of a 1 GiB leaf: not a PMD huge page. */
	if (pud_none(pudv) || pud_bad(pudv))
		return false;
	pmdv = tlbb_pmd_read(pmd_offset(pud, addr));
	return pmd_present(pmdv) && pmd_trans_huge(pmdv);
}

/* The anonymous VMA holding all of [addr, addr + PMD_SIZE), or NULL. */
static struct vm_area_struct *tlbb_slot_vma(struct mm_struct *mm,
					    unsigned long addr)
{
	struct vm_area_struct *vma = find_vma(mm, addr);

	if (!vma || vma->vm_start > addr || vma->vm_end < addr + PMD_SIZE ||
	    !vma_is_anonymous(vma))
		return NULL;
	return vma;
}

static u64 tlbb_count_locked(struct tlbb_vm *vm, struct mm_struct *mm)
{
	unsigned int i, slots = 0;
	u64 n = 0;

	for (i = 0; i < vm->nr_ranges; i++) {
		const struct tlbb_range *r = &vm->ranges[i];
		unsigned long addr = ALIGN(r->hva, PMD_SIZE);
		unsigned long end = ALIGN_DOWN(r->hva + r->len, PMD_SIZE);
		struct vm_area_struct *vma = NULL;

		for (; addr < end; addr += PMD_SIZE) {
			if (!vma || addr + PMD_SIZE > vma->vm_end)
				vma = tlbb_slot_vma(mm, addr);
			if (vma && tlbb_pmd_is_huge(mm, addr))
				n++;
			if (!(++slots % 4096))
				cond_resched();
		}
	}
	return n;
}

int tlbb_thp_count(struct tlbb_vm *vm, struct mm_struct *mm, u64 *n)
{
	if (mmap_read_lock_killable(mm))
		return -EINTR;
	*n = tlbb_count_locked(vm, mm);
	mmap_read_unlock(mm);
	return 0;
}

/* Split @excess huge PMDs, last range and highest address first. */
static void tlbb_split_locked(struct tlbb_vm *vm, struct mm_struct *mm,
			      u64 excess)
{
	unsigned int i;

	for (i = vm->nr_ranges; i-- > 0 && excess;) {
		const struct tlbb_range *r = &vm->ranges[i];
		unsigned long start = ALIGN(r->hva, PMD_SIZE);
		unsigned long addr = ALIGN_DOWN(r->hva + r->len, PMD_SIZE);

		while (addr > start && excess) {
			long ret;

			addr -= PMD_SIZE;
			if (!tlbb_slot_vma(mm, addr) ||
			    !tlbb_pmd_is_huge(mm, addr))
				continue;
			ret = tlbb_gup_split_pmd(mm, addr);
			if (ret < 0) {
				vm->lim.last_err = ret;
				continue;
			}
			if (!tlbb_pmd_is_huge(mm, addr)) {
				vm->lim.splits++;
				excess--;
			}
			cond_resched();
		}
	}
}

/*
 * Call @fn on each anonymous VMA overlapping [start, end). The VMA list must
 * not change meanwhile (mmap lock held).
 */
#define tlbb_for_each_anon_vma(mm, vma, addr, start, end)		\
	for ((addr) = (start);						\
	     (addr) < (end) && ((vma) = find_vma((mm), (addr))) &&	\
	     (vma)->vm_start < (end);					\
	     (addr) = (vma)->vm_end)					\
		if (vma_is_anonymous(vma))

static bool tlbb_hold_needed(struct tlbb_vm *vm, struct mm_struct *mm)
{
	struct vm_area_struct *vma;
	unsigned long addr;
	unsigned int i;

	for (i = 0; i < vm->nr_ranges; i++) {
		const struct tlbb_range *r = &vm->ranges[i];

		tlbb_for_each_anon_vma(mm, vma, addr, r->hva, r->hva + r->len)
			if (!(vma->vm_flags & VM_NOHUGEPAGE))
				return true;
	}
	return false;
}

/* Set VM_NOHUGEPAGE where missing and record it. mmap write lock held. */
static void tlbb_hold_locked(struct tlbb_vm *vm, struct mm_struct *mm)
{
	struct tlbb_limiter *lim = &vm->lim;
	struct vm_area_struct *vma;
	unsigned long addr;
	unsigned int i;

	for (i = 0; i < vm->nr_ranges; i++) {
		const struct tlbb_range *r = &vm->ranges[i];

		tlbb_for_each_anon_vma(mm, vma, addr, r->hva, r->hva + r->len) {
			if (vma->vm_flags & VM_NOHUGEPAGE)
				continue;
			if (lim->nr_held == TLBB_MAX_HELD) {
				lim->last_err = -ENOSPC;
				continue;
			}
			lim->held[lim->nr_held].start = vma->vm_start;
			lim->held[lim->nr_held].end = vma->vm_end;
			lim->nr_held++;
			tlbb_vma_set_flags(vma, VM_NOHUGEPAGE);
		}
	}
}

/* Lift the hold: clear VM_NOHUGEPAGE on the spans we flagged. */
void tlbb_thp_release(struct tlbb_vm *vm, struct mm_struct *mm)
{
	struct tlbb_limiter *lim = &vm->lim;
	struct vm_area_struct *vma;
	unsigned long addr;
	unsigned int i;

	if (!lim->held)
		return;
	mmap_write_lock(mm);
	for (i = 0; i < lim->nr_held; i++) {
		const struct tlbb_held_vma *h = &lim->held[i];

		tlbb_for_each_anon_vma(mm, vma, addr, h->start, h->end)
			if (vma->vm_flags & VM_NOHUGEPAGE)
				tlbb_vma_clear_flags(vma, VM_NOHUGEPAGE);
	}
	mmap_write_unlock(mm);
	tlbb_thp_forget(vm);
}

/* The address space is gone: only our record remains to be freed. */
void tlbb_thp_forget(struct tlbb_vm *vm)
{
	kfree(vm->lim.held);
	vm->lim.held = NULL;
	vm->lim.nr_held = 0;
}

/*
 * Apply @limit once per tick, vm->huge_pages freshly counted. Hold when the
 * VM sits at or above a limit below its size; split the excess; lift the
 * hold when the limit allows more huge pages than there are.
 */
void tlbb_thp_enforce(struct tlbb_vm *vm, struct mm_struct *mm, u64 limit)
{
	u64 n = vm->huge_pages;
	bool need;

	if (limit >= vm->ctrl.total_pages || n < limit) {
		tlbb_thp_release(vm, mm);
		return;
	}

	if (!vm->lim.held) {
		vm->lim.held = kcalloc(TLBB_MAX_HELD, sizeof(*vm->lim.held),
				       GFP_KERNEL);
		if (!vm->lim.held) {
			vm->lim.last_err = -ENOMEM;
			return;
		}
	}
	mmap_read_lock(mm);
	need = tlbb_hold_needed(vm, mm);
	mmap_read_unlock(mm);
	if (need) {
		mmap_write_lock(mm);
		tlbb_hold_locked(vm, mm);
		mmap_write_unlock(mm);
	}

	if (n > limit) {
		mmap_read_lock(mm);
		tlbb_split_locked(vm, mm, n - limit);
		vm->huge_pages = tlbb_count_locked(vm, mm);
		mmap_read_unlock(mm);
	}
}
