// SPDX-License-Identifier: GPL-2.0
/*
 * Heat of a VM's huge pages, for the limiter's split order (split_order 2):
 * which PMD-mapped huge pages of the registered ranges the process uses,
 * from the page tables' accessed bits.
 *
 * One byte per huge-page slot of the ranges (slots numbered range by range,
 * low address first, as tlbb_thp_total_pages() counts them) holds the
 * slot's heat: its accessed-bit samples folded one at a time by the core's
 * tlbb_heat_fold() (kernel-module/core/tlbb_ctrl.c, the same code tlbsim
 * runs): a sample that finds the bit set adds TLBB_HEAT_STEP (at most
 * 255), one that finds it clear halves the heat. A slot used in every
 * sample reads 255, one never used 0, and the value orders slots by how
 * often they are found unused: a frequency, not only the last sample.
 *
 * Sampling is bounded: each tick visits heat_scan_pmds slots (default 512,
 * 1 GiB of 2 MiB pages) from a cursor that wraps round the ranges, so a
 * slot is sampled once every total_pages / heat_scan_pmds ticks and a tick
 * never costs more than the budget times its samples, however large the
 * VM. A visit tests and clears the slot's accessed bit, if a huge PMD maps
 * it, under the PMD lock (the kernel's own pmdp_test_and_clear_young():
 * not exported on x86, so the same atomic bit operation here), and folds
 * the result into the slot's heat.
 *
 * The windows: over a whole tick (100 ms) nearly every page a busy guest
 * has is used at least once, and one bit per sample cannot tell the hot
 * from the merely warm. So the tick first clears the bits of the slots it
 * will sample (a first bounded pass, tlbb_heat_arm()) and queues the VM's
 * heat work heat_window_ms (default 1) later; that work takes the VM's
 * lock again and samples the same slots (tlbb_heat_collect()). Sampling
 * clears the bits, so a sample is also the start of the next window: the
 * work samples heat_samples windows back to back (default 8, as many as
 * fit in half the tick: tlbb_heat_windows()), queueing itself a window on
 * after each, and after the last enforces the limit with the fresh heat
 * (tlbb_vm.c). Several windows a tick, as DAMON's sampling intervals
 * within its aggregation interval: on a 4 GiB VM with 95 % of the accesses
 * on a quarter of it, the remaining 5 % still touch most cold pages within
 * any one millisecond (one window tells hot from cold only partly), but a
 * cold page is found unused in some window of nearly every tick and a hot
 * one in none (docs/simulator.md, "Heat by frequency"). Nothing sleeps
 * with the VM's lock held: attribute reads and writes wait for neither a
 * window nor a worker, and no worker is held through it. The window is a
 * delayed work's, so at least one jiffy and as late as the workqueue runs
 * it: under load a window can be longer than asked, never shorter, and the
 * windows can reach past the next tick, which then arms nothing (the work
 * enforces that tick's limit after its last window).
 *
 * The TLB is not flushed (as the kernel's aging of anonymous pages does
 * not): a page whose translation stays cached between the two passes is
 * seen cold for that sample, a page used now and then is seen by its next
 * TLB refill.
 *
 * What it cannot see: accesses that do not go through this page table.
 * KVM guests running on two-stage translation touch guest RAM through the
 * stage-2 (NPT/EPT) tables, whose accessed bits only reach the host's
 * through mmu_notifier_test_young()/clear_young(): inline wrappers of
 * __mmu_notifier_test_young()/__mmu_notifier_clear_young(), which no
 * kernel from 5.10 to 7.2 exports to modules; for them only the pages KVM
 * faulted in since the last sample are seen young.
 * Slots that are not huge are aged but not sampled: restoring is
 * khugepaged's work once the hold is lifted (tlbb_thp.c), in its order.
 *
 * Fed heat: so user space that can age through the secondary MMU writes
 * the heat instead (the VM's heat attribute, tlbb_heat_feed()): on 6.12
 * DAMON's virtual-address operations, whose aging calls
 * mmu_notifier_clear_young() and so reaches KVM's stage 2
 * (docs/kernel-module.md, "Heat through stage 2"). Once fed, the VM's
 * slots are no longer sampled: the order is what was written, until
 * "sampled" is written or the pid changes.
 */
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/mmap_lock.h>
#include <linux/pgtable.h>
#include <linux/slab.h>

#include "tlbb.h"
#include "tlbb_cost.h"
#include "tlbb_walk.h"
#include "tlbb_compat.h"

void tlbb_heat_free(struct tlbb_vm *vm)
{
	kvfree(vm->heat.heat);
	vm->heat.heat = NULL;
	vm->heat.nslots = 0;
	vm->heat.cursor = 0;
	vm->heat.armed = 0;
	vm->heat.windows_left = 0;
}

/* The heat bytes for the current ranges, allocated on first use; or NULL. */
static u8 *tlbb_heat_get(struct tlbb_vm *vm)
{
	u64 n = tlbb_thp_total_pages(vm->ranges, vm->nr_ranges);

	if (vm->heat.heat && vm->heat.nslots == n)
		return vm->heat.heat;
	tlbb_heat_free(vm);
	if (!n)
		return NULL;
	vm->heat.heat = kvzalloc(n, GFP_KERNEL);
	if (vm->heat.heat)
		vm->heat.nslots = n;
	return vm->heat.heat;
}

/* Slot @slot's address; its range's end in *@end. */
static unsigned long tlbb_heat_slot_addr(struct tlbb_vm *vm, u64 slot,
					 unsigned long *end)
{
	unsigned int i;

	for (i = 0; i < vm->nr_ranges; i++) {
		const struct tlbb_range *r = &vm->ranges[i];
		unsigned long start = ALIGN(r->hva, PMD_SIZE);
		unsigned long stop = ALIGN_DOWN(r->hva + r->len, PMD_SIZE);
		u64 n = stop > start ? (stop - start) >> PMD_SHIFT : 0;

		if (slot < n) {
			*end = stop;
			return start + (slot << PMD_SHIFT);
		}
		slot -= n;
	}
	*end = 0;
	return 0;
}

/*
 * Test and clear the accessed bit of the huge PMD mapping @addr in @mm, if
 * a huge PMD of an anonymous VMA maps it: 1 young, 0 old, -1 not huge.
 * *@vmap caches the last VMA found (NULL at first). mmap read lock held.
 */
static int tlbb_heat_young(struct mm_struct *mm, unsigned long addr,
			   struct vm_area_struct **vmap)
{
	struct vm_area_struct *vma = *vmap;
	spinlock_t *ptl;
	pud_t *pud;
	pmd_t *pmd;
	int ret = -1;

	if (tlbb_thp_empty_block(mm, addr, &pud))
		return -1;
	pmd = pmd_offset(pud, addr);
	if (!pmd_trans_huge(tlbb_pmd_read(pmd)))
		return -1;
	if (!vma || vma->vm_start > addr || vma->vm_end < addr + PMD_SIZE)
		*vmap = vma = find_vma(mm, addr);
	if (!vma || vma->vm_start > addr || vma->vm_end < addr + PMD_SIZE ||
	    !vma_is_anonymous(vma))
		return -1;
	ptl = pmd_lock(mm, pmd);
	if (pmd_present(*pmd) && pmd_trans_huge(*pmd))
		ret = tlbb_pmdp_test_and_clear_young(vma, addr, pmd);
	spin_unlock(ptl);
	return ret;
}

/*
 * Visit the next @budget slots from the cursor: test and clear each
 * huge PMD's accessed bit; with @record, fold the result into the slot's
 * heat (a sample), else only clear (arm the window the next sample looks
 * at); with @advance, move the cursor on past them (the tick's last
 * sample). Stops early when a writer waits for the mmap lock. Returns the
 * slots visited. vm->lock held.
 */
static u64 tlbb_heat_walk(struct tlbb_vm *vm, struct mm_struct *mm,
			  bool record, bool advance, u64 budget)
{
	u64 done = 0, t0 = ktime_get_ns();
	struct vm_area_struct *vma = NULL;
	struct tlbb_heat *h = &vm->heat;
	unsigned long addr, end = 0;
	u8 *heat = tlbb_heat_get(vm);
	u64 slot;

	if (!heat || mmap_read_lock_killable(mm))
		return 0;
	if (h->cursor >= h->nslots)
		h->cursor = 0;
	slot = h->cursor;
	addr = tlbb_heat_slot_addr(vm, slot, &end);
	for (; done < budget && done < h->nslots; done++) {
		int young;

		if (done && !(done & 63) &&
		    (mmap_lock_is_contended(mm) || need_resched()))
			break;
		young = tlbb_heat_young(mm, addr, &vma);
		if (record)
			heat[slot] = tlbb_heat_fold(heat[slot], young > 0);
		if (++slot == h->nslots)
			slot = 0;
		addr += PMD_SIZE;
		if (addr >= end || !slot)
			addr = tlbb_heat_slot_addr(vm, slot, &end);
	}
	mmap_read_unlock(mm);
	if (record)
		h->sampled += done;
	if (advance)
		h->cursor = slot;
	tlbb_cost_account_heat(ktime_get_ns() - t0, done);
	return done;
}

/* A window's length in jiffies: at least one. */
static unsigned long tlbb_heat_delay(const struct tlbb_params *p)
{
	return max(msecs_to_jiffies(p->heat_window_ms), 1UL);
}

/*
 * The tick's part of a sample of the next heat_scan_pmds slots. With
 * windows (tlbb_heat_windows(): heat_window_ms below interval_ms): clear
 * their accessed bits and return the delay, in jiffies (at least one),
 * after which tlbb_heat_collect() must read them; the slots cleared wait
 * in vm->heat.armed, the windows after the first in windows_left. Without
 * (or nothing to clear): sample now, reading what the whole time since the
 * slots' last sample set, and return 0. vm->heat.armed is 0 on entry.
 * vm->lock held.
 */
unsigned long tlbb_heat_arm(struct tlbb_vm *vm, struct mm_struct *mm)
{
	const struct tlbb_params *p = &vm->params;
	unsigned long delay;
	u64 windows;

	if (vm->heat.fed)
		return 0;	/* user space writes the heat */

	delay = tlbb_heat_delay(p);
	windows = tlbb_heat_windows(p, jiffies_to_msecs(delay));
	if (windows) {
		/* sample no more than were cleared: the same window each */
		vm->heat.armed = tlbb_heat_walk(vm, mm, false, false,
						p->heat_scan_pmds);
		if (vm->heat.armed) {
			vm->heat.windows_left = windows - 1;
			vm->heat.due = jiffies + delay;
			return delay;
		}
		return 0;
	}
	tlbb_heat_walk(vm, mm, true, true, p->heat_scan_pmds);
	return 0;
}

/*
 * The heat work's part: sample the slots tlbb_heat_arm() cleared a window
 * ago. The sample clears them again: with windows left it arms the next
 * (the same slots), puts its delay in *@again and returns false; true
 * after the tick's last window (the cursor moved on past the slots).
 * False with *@again 0 if no sample is due yet: nothing armed (called off),
 * or armed by a tick that ran while this work waited for vm->lock after a
 * stop and restart, whose own heat work is queued for later. vm->lock
 * held.
 */
bool tlbb_heat_collect(struct tlbb_vm *vm, struct mm_struct *mm,
		       unsigned long *again)
{
	struct tlbb_heat *h = &vm->heat;
	u64 budget = h->armed;
	bool last = !h->windows_left;

	*again = 0;
	if (!budget || time_before(jiffies, h->due))
		return false;
	/* the next window, if any, samples no more than this one cleared */
	h->armed = tlbb_heat_walk(vm, mm, true, last, budget);
	if (last || !h->armed) {
		/* the last window, or none walked: the tick ends with this */
		h->armed = 0;
		h->windows_left = 0;
		return true;
	}
	h->windows_left--;
	*again = tlbb_heat_delay(&vm->params);
	h->due = jiffies + *again;
	return false;
}

/* Heat of slot @slot, or 0 (cold) without a sample of it. */
u8 tlbb_heat_of(struct tlbb_vm *vm, u64 slot)
{
	if (!vm->heat.heat || slot >= vm->heat.nslots)
		return 0;
	return vm->heat.heat[slot];
}

/*
 * Set the heat of every slot a line's range overlaps to the line's heat,
 * in the order of the lines (the last wins); the slots no line overlaps
 * keep theirs. A feeder that measures finer than a huge page takes the
 * hottest part of each page itself. All lines are checked before any is
 * applied: -ERANGE if one overlaps no slot of the ranges (none registered
 * included). From then on the VM's heat is fed: not sampled.
 */
int tlbb_heat_feed(struct tlbb_vm *vm, const struct tlbb_heat_line *l,
		   unsigned int n)
{
	u64 *first, *last, set = 0;
	unsigned int i, k;
	int ret = 0;
	u8 *heat;

	first = kcalloc(n, sizeof(*first), GFP_KERNEL);
	last = kcalloc(n, sizeof(*last), GFP_KERNEL);
	if (!first || !last) {
		ret = -ENOMEM;
		goto out_free;
	}
	mutex_lock(&vm->lock);
	heat = tlbb_heat_get(vm);
	if (!heat) {
		ret = vm->nr_ranges ? -ENOMEM : -ERANGE;
		goto out;
	}
	/* slots [first, last) of each line, ranges numbered in turn */
	for (i = 0; i < n; i++) {
		unsigned long lend = l[i].hva + l[i].len;
		u64 base = 0;

		first[i] = last[i] = 0;
		for (k = 0; k < vm->nr_ranges; k++) {
			const struct tlbb_range *r = &vm->ranges[k];
			unsigned long start = ALIGN(r->hva, PMD_SIZE);
			unsigned long stop = ALIGN_DOWN(r->hva + r->len,
							PMD_SIZE);
			unsigned long a, b;

			if (stop <= start)
				continue;
			a = max(start, ALIGN_DOWN(l[i].hva, PMD_SIZE));
			b = min(stop, ALIGN(lend, PMD_SIZE));
			if (a < b) {
				first[i] = base + ((a - start) >> PMD_SHIFT);
				last[i] = base + ((b - start) >> PMD_SHIFT);
				break;
			}
			base += (stop - start) >> PMD_SHIFT;
		}
		if (first[i] == last[i]) {
			ret = -ERANGE;
			goto out;
		}
	}
	for (i = 0; i < n; i++) {
		memset(heat + first[i], l[i].heat, last[i] - first[i]);
		set += last[i] - first[i];
	}
	if (!vm->heat.fed) {
		vm->heat.fed = true;
		vm->heat.fed_slots = 0;
		vm->heat.armed = 0;	/* a sample under way is void */
	}
	vm->heat.fed_slots += set;
out:
	mutex_unlock(&vm->lock);
out_free:
	kfree(first);
	kfree(last);
	return ret;
}

/* Back to sampling accessed bits (the heat written so far ages out). */
int tlbb_heat_sample(struct tlbb_vm *vm)
{
	mutex_lock(&vm->lock);
	vm->heat.fed = false;
	vm->heat.fed_slots = 0;
	mutex_unlock(&vm->lock);
	return 0;
}
