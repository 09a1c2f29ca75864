// SPDX-License-Identifier: GPL-2.0
/*
 * The THP limiter: count the PMD-mapped huge pages of a VM's guest RAM and
 * hold them at the controller's limit N_hl.
 *
 * Counting walks the page tables (pgd/p4d/pud/pmd_offset, tlbb_walk.c) of
 * every PMD-aligned huge-page slot of the registered ranges under the mmap
 * read lock. Only anonymous VMAs count: that is what THP-backed guest RAM is.
 * hugetlbfs pages cannot be split and are neither counted nor limited.
 *
 * Splitting uses get_user_pages_remote(FOLL_SPLIT_PMD): the PMD mapping is
 * replaced by a page table mapping the same physical pages, so contents never
 * change and nothing is copied; KVM's MMU notifier drops its stage-2 huge
 * mapping and refaults it at the base page size.
 *
 * Which pages: split_order (tlbb_params.def) chooses. 0, address order:
 * from the end of the last range downward, deterministic and cheap; it
 * keeps the low guest-physical memory (kernel text and early allocations
 * of the guest, often hot) huge longest. 1, random: each huge page equally
 * likely (selection sampling, one walk). 2, heat: the coldest first by the
 * accessed bits tlbb_heat.c samples each tick, ties highest address first.
 * Under method safe, address (the default) means heat while safe_split_heat
 * is set (its default; tlbb_split_order()). Whatever an order leaves unsplit (a page it
 * did not pick, or that changed under it) goes in address order, so every
 * order meets the limit; a page is tried once per tick whatever the passes (a
 * page that cannot be split is attempted, and counted failed, once).
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
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "tlbb.h"
#include "tlbb_compat.h"
#include "tlbb_trace.h"
#include "tlbb_walk.h"

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

static u64 tlbb_count_locked(struct mm_struct *mm, const struct tlbb_range *r,
			     unsigned int nr)
{
	unsigned int i;
	u64 n = 0;

	for (i = 0; i < nr; i++) {
		unsigned long addr = ALIGN(r[i].hva, PMD_SIZE);
		unsigned long end = ALIGN_DOWN(r[i].hva + r[i].len, PMD_SIZE);

		if (addr < end)
			n += tlbb_count_span(mm, addr, end);
	}
	return n;
}

/* Huge pages in @nr ranges @r of @mm (a copy: no vm->lock needed). */
int tlbb_thp_count_ranges(struct mm_struct *mm, const struct tlbb_range *r,
			  unsigned int nr, u64 *n)
{
	if (mmap_read_lock_killable(mm))
		return -EINTR;
	*n = tlbb_count_locked(mm, r, nr);
	mmap_read_unlock(mm);
	return 0;
}

int tlbb_thp_count(struct tlbb_vm *vm, struct mm_struct *mm, u64 *n)
{
	return tlbb_thp_count_ranges(mm, vm->ranges, vm->nr_ranges, n);
}

/*
 * Call @fn on each huge PMD of an anonymous VMA in the ranges, last range
 * and highest address first, with its slot number (tlbb_heat.c numbers
 * slots range by range from the lowest address); stop when @fn returns
 * false. mmap read lock held.
 */
static void tlbb_walk_huge(struct tlbb_vm *vm, struct mm_struct *mm,
			   bool (*fn)(struct tlbb_vm *vm, struct mm_struct *mm,
				      unsigned long addr, u64 slot, void *arg),
			   void *arg)
{
	unsigned int i;

	for (i = vm->nr_ranges; i-- > 0;) {
		const struct tlbb_range *r = &vm->ranges[i];
		unsigned long start = ALIGN(r->hva, PMD_SIZE);
		unsigned long addr = ALIGN_DOWN(r->hva + r->len, PMD_SIZE);
		u64 base = tlbb_thp_total_pages(vm->ranges, i);

		while (addr > start) {
			unsigned long skip;
			pud_t *pud;

			addr -= PMD_SIZE;
			skip = tlbb_thp_empty_block(mm, addr, &pud);
			if (skip) {
				/* nothing mapped down to the block's start */
				addr = max(ALIGN_DOWN(addr, skip), start);
				continue;
			}
			if (!tlbb_pmd_huge_at(pud, addr) ||
			    !tlbb_slot_vma(mm, addr))
				continue;
			if (!fn(vm, mm, addr, base + ((addr - start) >> PMD_SHIFT),
				arg))
				return;
		}
	}
}

/* Which huge pages one split pass takes (split_order, tlbb_params.def). */
enum tlbb_split_pass {
	TLBB_PASS_ANY,		/* address order: every huge page in turn */
	TLBB_PASS_RANDOM,	/* each with probability excess / left */
	TLBB_PASS_COLDER,	/* heat below the threshold */
	TLBB_PASS_AT,		/* heat at the threshold */
};

struct tlbb_split_ctx {
	enum tlbb_split_pass pass;
	u64 excess;		/* still to split */
	u64 left;		/* TLBB_PASS_RANDOM: huge pages not yet seen */
	u8 thresh;		/* TLBB_PASS_COLDER/AT */
	u32 *hist;		/* tlbb_heat_hist(): heat -> huge pages */
	unsigned long *tried;	/* slots tried this call, one bit each */
	u64 failed;		/* splits that failed (errno in lim.last_err) */
};

static bool tlbb_split_pick(struct tlbb_vm *vm, struct tlbb_split_ctx *c,
			    u64 slot)
{
	u8 heat = tlbb_heat_of(vm, slot);

	switch (c->pass) {
	case TLBB_PASS_RANDOM:
		/* selection sampling: excess of the left, uniformly */
		if (c->left <= c->excess) {
			c->left -= !!c->left;
			return true;
		}
		return get_random_u32() % c->left-- < c->excess;
	case TLBB_PASS_COLDER:
		return heat < c->thresh;
	case TLBB_PASS_AT:
		return heat == c->thresh;
	default:
		return true;
	}
}

static bool tlbb_split_one(struct tlbb_vm *vm, struct mm_struct *mm,
			   unsigned long addr, u64 slot, void *arg)
{
	struct tlbb_split_ctx *c = arg;
	long ret;

	/* a page that failed (or stayed huge) in an earlier pass: not again */
	if (c->tried && test_bit(slot, c->tried))
		return true;
	if (!tlbb_split_pick(vm, c, slot))
		return true;
	if (c->tried)
		__set_bit(slot, c->tried);
	ret = tlbb_gup_split_pmd(mm, addr);
	if (ret < 0) {
		vm->lim.last_err = ret;
		c->failed++;
		return true;
	}
	if (!tlbb_pmd_is_huge(mm, addr)) {
		vm->lim.splits++;
		c->excess--;
	}
	cond_resched();
	return c->excess > 0;
}

static bool tlbb_heat_count(struct tlbb_vm *vm, struct mm_struct *mm,
			    unsigned long addr, u64 slot, void *arg)
{
	struct tlbb_split_ctx *c = arg;

	c->hist[tlbb_heat_of(vm, slot)]++;
	return true;
}

static void tlbb_split_pass(struct tlbb_vm *vm, struct mm_struct *mm,
			    struct tlbb_split_ctx *c, enum tlbb_split_pass pass)
{
	c->pass = pass;
	if (c->excess)
		tlbb_walk_huge(vm, mm, tlbb_split_one, c);
}

/*
 * Heat order: the coldest huge pages first, ties highest address first.
 * One walk counts the huge pages per heat value; the threshold is the
 * lowest heat at which the count reaches the excess; then everything
 * colder is split, then pages at the threshold until the excess is met.
 */
static void tlbb_split_by_heat(struct tlbb_vm *vm, struct mm_struct *mm,
			       struct tlbb_split_ctx *c)
{
	u64 sum = 0;
	unsigned int t;

	c->hist = kcalloc(256, sizeof(*c->hist), GFP_KERNEL);
	if (!c->hist)
		return;		/* address order then */
	tlbb_walk_huge(vm, mm, tlbb_heat_count, c);
	for (t = 0; t < 255; t++) {
		sum += c->hist[t];
		if (sum >= c->excess)
			break;
	}
	c->thresh = t;
	kfree(c->hist);
	c->hist = NULL;
	tlbb_split_pass(vm, mm, c, TLBB_PASS_COLDER);
	tlbb_split_pass(vm, mm, c, TLBB_PASS_AT);
}

/*
 * Split @excess of the @n huge PMDs in the order vm->params.split_order
 * asks (as tlbb_split_order() reads it for the method); what the order leaves
 * (pages it did not pick, or that changed under it) goes in address order,
 * last range and highest address first.
 * Each page is tried at most once a call: an order's passes mark the slots
 * they tried in a bitmap (one bit per slot of the ranges, freed on return),
 * and the later passes skip them, so a page that cannot be split (e.g.
 * PROT_NONE: EFAULT) costs one attempt and counts one failure a tick.
 * Without the bitmap (allocation failed) only the address-order pass runs,
 * which tries each page once by itself. Returns how many splits failed
 * (the last errno in vm->lim.last_err).
 */
static u64 tlbb_split_locked(struct tlbb_vm *vm, struct mm_struct *mm,
			     u64 excess, u64 n)
{
	struct tlbb_split_ctx c = { .excess = excess, .left = n };
	u64 order = tlbb_split_order(&vm->params);
	bool ordered = order == TLBB_SPLIT_RANDOM ||
		       (order == TLBB_SPLIT_HEAT && vm->heat.heat);

	/* address order alone tries each page once: no bitmap for it */
	if (ordered) {
		u64 nslots = tlbb_thp_total_pages(vm->ranges, vm->nr_ranges);

		c.tried = kvcalloc(BITS_TO_LONGS(nslots), sizeof(long),
				   GFP_KERNEL);
	}
	if (c.tried) {
		if (order == TLBB_SPLIT_RANDOM)
			tlbb_split_pass(vm, mm, &c, TLBB_PASS_RANDOM);
		else
			tlbb_split_by_heat(vm, mm, &c);
	}
	tlbb_split_pass(vm, mm, &c, TLBB_PASS_ANY);
	kvfree(c.tried);
	return c.failed;
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

/*
 * Set VM_NOHUGEPAGE where missing and record it; returns how many VMAs
 * could not be recorded (held). mmap write lock held.
 */
static unsigned int tlbb_hold_locked(struct tlbb_vm *vm, struct mm_struct *mm)
{
	struct tlbb_limiter *lim = &vm->lim;
	struct vm_area_struct *vma;
	unsigned int i, full = 0;
	unsigned long addr;

	for (i = 0; i < vm->nr_ranges; i++) {
		const struct tlbb_range *r = &vm->ranges[i];

		tlbb_for_each_anon_vma(mm, vma, addr, r->hva, r->hva + r->len) {
			if (vma->vm_flags & VM_NOHUGEPAGE)
				continue;
			if (lim->nr_held == TLBB_MAX_HELD) {
				lim->last_err = -ENOSPC;
				full++;
				continue;
			}
			lim->held[lim->nr_held] = (struct tlbb_held_vma) {
				.start = vma->vm_start,
				.end = vma->vm_end,
				.pgoff = vma->vm_pgoff,
				.pgoff_end = vma->vm_pgoff + vma_pages(vma),
				.anon = vma->anon_vma,
			};
			lim->nr_held++;
			tlbb_vma_set_flags(vma, VM_NOHUGEPAGE);
		}
	}
	return full;
}

/*
 * Did we flag the memory @vma holds? Either it lies on a span we flagged, or
 * it is that memory moved elsewhere (mremap keeps an anonymous VMA's page
 * offsets and anon_vma; one we flagged before its first fault had none).
 */
static bool tlbb_held_match(const struct tlbb_held_vma *h,
			    struct vm_area_struct *vma)
{
	if (vma->vm_start < h->end && h->start < vma->vm_end)
		return true;
	return vma->vm_pgoff < h->pgoff_end &&
	       h->pgoff < vma->vm_pgoff + vma_pages(vma) &&
	       (!h->anon || h->anon == vma->anon_vma);
}

/*
 * Lift the hold: clear VM_NOHUGEPAGE wherever the memory we flagged now is,
 * also after the process moved it (every anonymous VMA of the process is
 * looked at: one pass over the VMA tree).
 */
void tlbb_thp_release(struct tlbb_vm *vm, struct mm_struct *mm)
{
	struct tlbb_limiter *lim = &vm->lim;
	unsigned int i, cleared = 0;
	struct vm_area_struct *vma;

	if (!lim->held)
		return;
	mmap_write_lock(mm);
	{
		TLBB_VMA_ITER(vmi, mm);

		tlbb_for_each_vma(vmi, vma) {
			if (!vma_is_anonymous(vma) ||
			    !(vma->vm_flags & VM_NOHUGEPAGE))
				continue;
			for (i = 0; i < lim->nr_held; i++)
				if (tlbb_held_match(&lim->held[i], vma))
					break;
			if (i < lim->nr_held) {
				tlbb_vma_clear_flags(vma, VM_NOHUGEPAGE);
				cleared++;
			}
		}
	}
	mmap_write_unlock(mm);
	trace_tlbb_restore(vm, lim->nr_held, cleared);
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
	u64 n = vm->huge_pages, failed, splits;
	unsigned int full = 0;
	bool need;

	/* what this enforcement meets: an error clears once it is over */
	vm->lim.stuck = 0;
	vm->lim.last_err = 0;
	if (limit >= vm->ctrl.total_pages || n < limit) {
		tlbb_thp_release(vm, mm);
		return;
	}

	if (!vm->lim.held) {
		vm->lim.held = kcalloc(TLBB_MAX_HELD, sizeof(*vm->lim.held),
				       GFP_KERNEL);
		if (!vm->lim.held) {
			vm->lim.last_err = -ENOMEM;
			trace_tlbb_limiter_error(vm, "alloc", -ENOMEM, 1);
			return;
		}
	}
	mmap_read_lock(mm);
	need = tlbb_hold_needed(vm, mm);
	mmap_read_unlock(mm);
	if (need) {
		mmap_write_lock(mm);
		full = tlbb_hold_locked(vm, mm);
		mmap_write_unlock(mm);
		if (full)
			trace_tlbb_limiter_error(vm, "hold", -ENOSPC, full);
	}

	if (n > limit) {
		splits = vm->lim.splits;
		mmap_read_lock(mm);
		failed = tlbb_split_locked(vm, mm, n - limit, n);
		vm->huge_pages = tlbb_count_locked(mm, vm->ranges, vm->nr_ranges);
		mmap_read_unlock(mm);
		trace_tlbb_split(vm, limit, n, vm->lim.splits - splits,
				 vm->huge_pages);
		if (failed)
			trace_tlbb_limiter_error(vm, "split", vm->lim.last_err,
						 failed);
		/* what could not be split (e.g. PROT_NONE: EFAULT) */
		if (vm->huge_pages > limit)
			vm->lim.stuck = vm->huge_pages - limit;
	}
}
