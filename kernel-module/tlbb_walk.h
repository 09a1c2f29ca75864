/* SPDX-License-Identifier: GPL-2.0 */
/* tlbb_walk.c: page-table walking of the ranges. */
#ifndef TLBB_WALK_H
#define TLBB_WALK_H

#include <linux/mm_types.h>
#include <linux/pgtable.h>

u64 tlbb_thp_total_pages(const struct tlbb_range *r, unsigned int n);
unsigned long tlbb_thp_empty_block(struct mm_struct *mm, unsigned long addr,
				   pud_t **pudp);
bool tlbb_pmd_huge_at(pud_t *pud, unsigned long addr);
bool tlbb_pmd_is_huge(struct mm_struct *mm, unsigned long addr);
struct vm_area_struct *tlbb_slot_vma(struct mm_struct *mm,
				     unsigned long addr);
u64 tlbb_count_span(struct mm_struct *mm, unsigned long addr,
		    unsigned long end);

#endif /* TLBB_WALK_H */
