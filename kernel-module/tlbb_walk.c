// SPDX-License-Identifier: GPL-2.0
/*
 * Page-table walking of a VM's guest RAM (pgd/p4d/pud/pmd_offset under
 * the mmap read lock): the huge-page slots of the ranges, empty blocks
 * skipped whole, huge PMDs of anonymous VMAs, and the rule for giving up
 * the mmap lock between PMD tables (tlbb_count_span). Used by the THP
 * limiter (tlbb_thp.c) and the heat sampler (tlbb_heat.c); calls nothing
 * of the module but tlbb_compat.h.
 */
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/pgtable.h>
#include <linux/sched.h>

#include "tlbb.h"
#include "tlbb_compat.h"
#include "tlbb_walk.h"

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

/*
 * If no page table reaches @addr (an empty PGD, P4D or PUD entry), the size
 * of the empty block around it (PGDIR_SIZE, P4D_SIZE or PUD_SIZE), so walks
 * skip unpopulated address space in one step; 0 if a PMD table covers it,
 * which is then in *@pudp. mmap lock held.
 */
unsigned long tlbb_thp_empty_block(struct mm_struct *mm, unsigned long addr,
				   pud_t **pudp)
{
	pgd_t *pgd;
	p4d_t *p4d;
	pud_t *pud, pudv;

	pgd = pgd_offset(mm, addr);
	if (pgd_none(*pgd) || pgd_bad(*pgd))
		return PGDIR_SIZE;
	p4d = p4d_offset(pgd, addr);
	if (p4d_none(*p4d) || p4d_bad(*p4d))
		return P4D_SIZE;
	pud = pud_offset(p4d, addr);
	pudv = READ_ONCE(*pud);
	/* pud_bad() is also true of a 1 GiB leaf: not a PMD huge page. */
	if (pud_none(pudv) || pud_bad(pudv))
		return PUD_SIZE;
	*pudp = pud;
	return 0;
}

bool tlbb_pmd_huge_at(pud_t *pud, unsigned long addr)
{
	pmd_t pmdv = tlbb_pmd_read(pmd_offset(pud, addr));

	return pmd_present(pmdv) && pmd_trans_huge(pmdv);
}

/* Is @addr (PMD-aligned) mapped by a huge PMD? mmap lock held. */
bool tlbb_pmd_is_huge(struct mm_struct *mm, unsigned long addr)
{
	pud_t *pud;

	return !tlbb_thp_empty_block(mm, addr, &pud) && tlbb_pmd_huge_at(pud, addr);
}

/* The anonymous VMA holding all of [addr, addr + PMD_SIZE), or NULL. */
struct vm_area_struct *tlbb_slot_vma(struct mm_struct *mm,
				     unsigned long addr)
{
	struct vm_area_struct *vma = find_vma(mm, addr);

	if (!vma || vma->vm_start > addr || vma->vm_end < addr + PMD_SIZE ||
	    !vma_is_anonymous(vma))
		return NULL;
	return vma;
}

/*
 * Huge PMDs of anonymous VMAs in [addr, end) (PMD-aligned). Unpopulated
 * blocks are skipped whole, so the cost follows the page tables that exist,
 * not the size of the ranges (a 64 TiB PROT_NONE range costs a few hundred
 * steps). Between PMD tables the mmap read lock is given up when someone
 * waits for it (the process's own mmap, a writer): no stall, at the price
 * of a count that may mix two moments. mmap read lock held.
 */
u64 tlbb_count_span(struct mm_struct *mm, unsigned long addr,
		    unsigned long end)
{
	struct vm_area_struct *vma = NULL;
	u64 n = 0;

	while (addr < end) {
		unsigned long skip, next;
		pud_t *pud;

		if (mmap_lock_is_contended(mm) || need_resched()) {
			mmap_read_unlock(mm);
			cond_resched();
			mmap_read_lock(mm);
			vma = NULL;
		}
		skip = tlbb_thp_empty_block(mm, addr, &pud);
		next = ALIGN(addr + 1, skip ?: PUD_SIZE);
		if (!next || next > end)
			next = end;
		if (skip) {
			addr = next;
			continue;
		}
		for (; addr < next; addr += PMD_SIZE) {
			if (!tlbb_pmd_huge_at(pud, addr))
				continue;
			if (!vma || addr + PMD_SIZE > vma->vm_end)
				vma = tlbb_slot_vma(mm, addr);
			if (vma)
				n++;
		}
	}
	return n;
}
