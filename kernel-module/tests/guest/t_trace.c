// SPDX-License-Identifier: GPL-2.0
/*
 * t_trace: the module's tracepoints, read through tracefs as an operator
 * would (docs/kernel-module.md, "Tracepoints").
 *
 * Two VMs tick: "trc" (this process, 8 huge pages of THP memory, balance
 * mode) and "noise" (a forked holder, monitor mode). The events of the
 * system "tlbbalance" are enabled with the filter vm == "trc", then:
 *  1. mcf-shaped load is injected (huge group dominant): N_hl steps down
 *     8 -> 6 -> 4 (step_pages 2, floor 4) and the limiter splits 4 pages;
 *  2. small-group load: N_hl steps up 4 -> 6 and the hold is lifted (no
 *     further: the core waits for huge pages to form, N_hc 4 < N_hl 6);
 *  3. the range is made PROT_NONE and the floor lowered to 0: N_hl steps
 *     down again and the splits fail with EFAULT (limiter error).
 * The trace must show, for vm=trc and this pid: tlbb_decision lines whose
 * actions match the steps, tlbb_step_down 8->6, 6->4, tlbb_step_up 4->6,
 * then steps down to 0, tlbb_split events adding up to the pages the module
 * counts as split, tlbb_restore, tlbb_limiter_error op=split err=-14; and
 * no line of "noise", which ticked all along (the filter follows one VM).
 *  4. still PROT_NONE at limit 0, with split_order 0, 1 and 2 in turn: each
 *     tick's tlbb_limiter_error op=split counts every page that could not
 *     be split once (count == huge_pages left), however many passes the
 *     order makes (a page is tried once per tick).
 *
 * tlbb-test-timeout: 180
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cfs.h"
#include "tap.h"
#include "thp.h"
#include "tlbb_defs.h"
#include "util.h"

#define VM		"trc"
#define NOISE		"noise"
#define PAGES		8
#define FLOOR		4
#define STEP		2
#define MCF_HUGE	2180000		/* refills/s, huge group (paper) */
#define MCF_SMALL	400		/* refills/s, small group */
#define TRACING		"/sys/kernel/tracing"
#define EVENTS		TRACING "/events/tlbbalance"
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define MAX_STEPS	16		/* limit steps recorded per direction */

static const char * const events[] = {
	"tlbb_decision", "tlbb_step_down", "tlbb_step_up", "tlbb_split",
	"tlbb_restore", "tlbb_limiter_error",
};

static int mounted_tracefs;
static char *region;
static size_t len;

static int tracefs_set(const char *file, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), TRACING "/%s", file);
	return file_printf(path, "%s\n", val);
}

/*
 * Empty the ring buffer: only an open of "trace" with O_TRUNC does (a write
 * to it is accepted and ignored).
 */
static int tracefs_clear(void)
{
	int fd = open(TRACING "/trace", O_WRONLY | O_TRUNC);

	if (fd < 0)
		return -errno;
	return close(fd) ? -errno : 0;
}

/* Mount tracefs at its own place when the init did not. */
static void tracefs_setup(void)
{
	struct stat st;

	if (stat(TRACING "/trace", &st)) {
		tap_require(!mount("nodev", TRACING, "tracefs", 0, NULL),
			    "mount tracefs on " TRACING ": %s",
			    strerror(errno));
		mounted_tracefs = 1;
	}
	tap_require(!tracefs_set("tracing_on", "0") && !tracefs_clear() &&
		    !tracefs_set("buffer_size_kb", "2048"),
		    "tracefs: tracing off, buffer cleared");
}

static void tracefs_teardown(void)
{
	file_printf(EVENTS "/enable", "0\n");
	file_printf(EVENTS "/filter", "0\n");
	tracefs_clear();
	tracefs_set("tracing_on", "1");
	if (mounted_tracefs)
		umount(TRACING);
}

/*
 * The line of @field (e.g. "field:char vm[") in the format text @buf says
 * "size:@size;". Kernels before 6.x print an array's length as written in
 * the source ("vm[TLBB_NAME_MAX + 1]"), later ones its value ("vm[65]"):
 * the size the line states is the same in both.
 */
static bool field_has_size(const char *buf, const char *field,
			   unsigned int size)
{
	const char *line = strstr(buf, field), *end;
	char want[32];

	if (!line)
		return false;
	end = strchr(line, '\n');
	if (!end)
		end = line + strlen(line);
	snprintf(want, sizeof(want), "size:%u;", size);
	line = strstr(line, want);
	return line && line < end;
}

/* Every event is there, with the VM name and pid as fields. */
static void check_formats(void)
{
	char path[256], buf[4096];
	unsigned int i, good = 0;

	for (i = 0; i < ARRAY_SIZE(events); i++) {
		snprintf(path, sizeof(path), EVENTS "/%s/format", events[i]);
		/* the VM name and its NUL (tlbb_limits.def) */
		if (file_read(path, buf, sizeof(buf)) > 0 &&
		    field_has_size(buf, "field:char vm[", TLBB_NAME_MAX + 1) &&
		    strstr(buf, "field:int pid;"))
			good++;
		else
			tap_diag("%s: no format with vm and pid", path);
	}
	tap_ok(good == ARRAY_SIZE(events),
	       "tracefs lists the %u tlbbalance events with fields vm, pid",
	       good);
}

static int wait_u64(const char *vm, const char *attr, uint64_t want,
		    unsigned int ms)
{
	unsigned int t;

	for (t = 0; t <= ms; t += 20) {
		if (tlbb_get_u64(vm, attr) == want)
			return 1;
		tlbb_msleep(20);
	}
	return 0;
}

static long status_long(const char *vm, const char *key)
{
	char buf[64];

	if (tlbb_status(vm, key, buf, sizeof(buf)))
		return -1;
	return strtol(buf, NULL, 10);
}

/* What the trace said, for vm=trc. */
struct seen {
	unsigned int lines, other_vm, bad_pid;
	unsigned int decisions, lower, raise;
	unsigned long long down[MAX_STEPS][2], up[MAX_STEPS][2];
	unsigned int nr_down, nr_up;
	unsigned long long split_sum;
	unsigned int splits, restores, efault;
	unsigned int decision_bad;
};

static void add_step(unsigned long long (*steps)[2], unsigned int *n,
		     unsigned long long from, unsigned long long to)
{
	if (*n < MAX_STEPS) {
		steps[*n][0] = from;
		steps[*n][1] = to;
	}
	(*n)++;
}

static void parse_line(const char *ln, struct seen *s)
{
	unsigned long long a, b, h, x, y;
	const char *ev = strstr(ln, ": tlbb_");
	char vm[80], act[16], op[16];
	int pid, err;

	if (!ev)
		return;
	ev += 2;
	s->lines++;
	if (sscanf(strchr(ev, ' ') + 1, "vm=%79s pid=%d", vm, &pid) != 2 ||
	    strcmp(vm, VM)) {
		s->other_vm++;
		return;
	}
	if (pid != getpid())
		s->bad_pid++;
	if (!strncmp(ev, "tlbb_decision:", 14)) {
		s->decisions++;
		if (sscanf(ev, "tlbb_decision: vm=%*s pid=%*d action=%15s state=%*s limit=%llu->%llu huge_pages=%llu refills_huge=%llu refills_small=%llu",
			   act, &a, &b, &h, &x, &y) != 6) {
			s->decision_bad++;
			return;
		}
		/* an action comes with the step it made */
		if (!strcmp(act, "lower"))
			s->lower++, s->decision_bad += !(b < a && x > y);
		else if (!strcmp(act, "raise"))
			s->raise++, s->decision_bad += !(b > a && y > x);
		else
			s->decision_bad += a != b;
	} else if (sscanf(ev, "tlbb_step_down: vm=%*s pid=%*d limit=%llu->%llu",
			  &a, &b) == 2) {
		add_step(s->down, &s->nr_down, a, b);
	} else if (sscanf(ev, "tlbb_step_up: vm=%*s pid=%*d limit=%llu->%llu",
			  &a, &b) == 2) {
		add_step(s->up, &s->nr_up, a, b);
	} else if (sscanf(ev, "tlbb_split: vm=%*s pid=%*d limit=%llu huge_pages=%llu->%llu split=%llu",
			  &a, &h, &b, &x) == 4) {
		s->splits++;
		s->split_sum += x;
	} else if (!strncmp(ev, "tlbb_restore:", 13)) {
		s->restores++;
	} else if (sscanf(ev, "tlbb_limiter_error: vm=%*s pid=%*d op=%15s err=%d",
			  op, &err) == 2) {
		if (!strcmp(op, "split") && err == -EFAULT)
			s->efault++;
	}
}

/* Phase 3's steps: each goes down from where the last ended, to 0. */
static int steps_down_to_zero(const struct seen *s)
{
	unsigned int i;

	for (i = 2; i < s->nr_down; i++)
		if (s->down[i][1] >= s->down[i][0] ||
		    (i > 2 && s->down[i][0] != s->down[i - 1][1]))
			return 0;
	return s->down[s->nr_down - 1][1] == 0;
}

static void read_trace(struct seen *s)
{
	FILE *f = fopen(TRACING "/trace", "r");
	int err_shown = 0, lower_shown = 0;
	char ln[1024];

	tap_require(f, TRACING "/trace: %s", strerror(errno));
	while (fgets(ln, sizeof(ln), f)) {
		if (ln[0] == '#')
			continue;
		/* the steps, for the log: what an operator would see */
		if (strstr(ln, "tlbb_step_") || strstr(ln, "tlbb_restore") ||
		    (strstr(ln, "tlbb_limiter_error") && !err_shown++) ||
		    (strstr(ln, "action=lower") && !lower_shown++))
			tap_diag("%.*s", (int)strcspn(ln, "\n"), ln);
		parse_line(ln, s);
	}
	fclose(f);
}

static void register_vm(const char *vm, pid_t pid, void *p, size_t n,
			enum tlbb_mode mode)
{
	int err;

	tap_require(!tlbb_vm_create(vm), "mkdir vms/%s", vm);
	err = tlbb_set(vm, "pid", "%d\n", pid);
	err = err ?: tlbb_set(vm, "vcpu_tids", "%d\n", pid);
	err = err ?: tlbb_set(vm, "ranges", "%p 0x%zx 0x40000000\n", p, n);
	err = err ?: tlbb_set_fast(vm, STEP);
	err = err ?: tlbb_set(vm, "floor_pages", "%d\n", FLOOR);
	err = err ?: tlbb_set_mode(vm, mode);
	tap_require(!err, "register %s (pid %d) in %s mode: %s", vm, pid,
		    tlbb_mode_names[mode],
		    strerror(-err));
}

/*
 * 4: the failures one tick counts with split_order @order, every huge page
 * left unsplittable and the limit 0: each page is tried, and counted, once.
 */
static void check_fail_count(int order)
{
	unsigned int events = 0, bad = 0;
	unsigned long long n, h, first_n = 0, first_h = 0;
	uint64_t ticks0;
	char ln[1024];
	double t0;
	FILE *f;

	tap_require(!tlbb_set_param(VM, TLBB_P_split_order, order) &&
		    !tracefs_clear() && !tracefs_set("tracing_on", "1"),
		    "split_order %d, trace cleared and on", order);
	/* a few ticks, each with its failed splits (20 ms ticks) */
	ticks0 = tlbb_get_u64(VM, "ticks");
	t0 = tlbb_now_s();
	while (tlbb_get_u64(VM, "ticks") < ticks0 + 6 && tlbb_now_s() - t0 < 20)
		tlbb_msleep(20);
	tap_require(!tracefs_set("tracing_on", "0"), "tracing off");

	f = fopen(TRACING "/trace", "r");
	tap_require(f, TRACING "/trace: %s", strerror(errno));
	while (fgets(ln, sizeof(ln), f)) {
		const char *ev = strstr(ln, ": tlbb_limiter_error:");

		if (!ev || sscanf(ev, ": tlbb_limiter_error: vm=%*s pid=%*d op=split err=%*d count=%llu limit=%*u huge_pages=%llu",
				  &n, &h) != 2)
			continue;
		if (!events++) {
			first_n = n;
			first_h = h;
		}
		if (n != h && !bad++)
			tap_diag("%.*s", (int)strcspn(ln, "\n"), ln);
	}
	fclose(f);
	tap_ok(events >= 3 && !bad,
	       "split_order %d: a tick counts each unsplittable page once (%u events, %u with count != huge_pages; first count=%llu huge_pages=%llu)",
	       order, events, bad, first_n, first_h);
}

int main(void)
{
	char scan_sleep[32] = "10000";
	struct seen s = { 0 };
	size_t noise_len;
	void *noise_mem;
	unsigned int t;
	pid_t holder;
	long stuck;
	int ok;

	thp_sysfs_get("khugepaged/scan_sleep_millisecs", scan_sleep,
		      sizeof(scan_sleep));
	tap_require(!thp_sysfs_set("khugepaged/scan_sleep_millisecs", "60000"),
		    "khugepaged: slow scans (split pages stay split)");
	len = PAGES * thp_pmd_size();
	noise_len = 2 * thp_pmd_size();
	noise_mem = thp_alloc(noise_len, 0, 1);
	thp_fill(noise_mem, noise_len, 3);
	holder = tlbb_spawn_holder();	/* shares noise_mem's mapping */
	region = thp_alloc(len, 0, 1);
	thp_fill(region, len, 7);
	tap_require(thp_huge_pages(0, region, len) == PAGES,
		    "setup: %d huge pages back the region", PAGES);

	tracefs_setup();
	check_formats();
	tap_require(!file_printf(EVENTS "/filter", "vm == \"%s\"\n", VM) &&
		    !file_printf(EVENTS "/enable", "1\n") &&
		    !tracefs_set("tracing_on", "1"),
		    "events/tlbbalance: filter vm == \"%s\", enabled", VM);

	register_vm(NOISE, holder, noise_mem, noise_len, TLBB_MODE_MONITOR);
	tap_require(!tlbb_inject(NOISE, MCF_HUGE, MCF_SMALL), "inject noise");
	register_vm(VM, getpid(), region, len, TLBB_MODE_BALANCE);

	/* 1: huge group dominant, down to the floor */
	tap_require(!tlbb_inject(VM, MCF_HUGE, MCF_SMALL), "inject mcf load");
	ok = wait_u64(VM, "huge_limit", FLOOR, 20000) &&
	     wait_u64(VM, "huge_pages", FLOOR, 5000);
	tap_ok(ok, "mcf load: N_hl and N_hc at the floor %d", FLOOR);

	/*
	 * 2: small group dominant: one step up, the hold is lifted; then the
	 * core waits for huge pages to form (N_hc < N_hl: forming), which
	 * they do not here (khugepaged scans slowly).
	 */
	tap_require(!tlbb_inject(VM, MCF_SMALL, MCF_HUGE),
		    "inject small-group load");
	ok = wait_u64(VM, "huge_limit", FLOOR + STEP, 20000);
	tap_ok(ok && !thp_vma_nohuge(region),
	       "small-group load: N_hl up to %d, hold lifted", FLOOR + STEP);

	/* 3: a limit the limiter cannot reach */
	tap_require(!mprotect(region, len, PROT_NONE), "mprotect PROT_NONE");
	tap_require(!tlbb_set(VM, "floor_pages", "0\n") &&
		    !tlbb_inject(VM, MCF_HUGE, MCF_SMALL),
		    "floor 0, mcf load again");
	stuck = -1;
	ok = wait_u64(VM, "huge_limit", 0, 20000);
	for (t = 0; ok && t < 5000; t += 20) {
		stuck = status_long(VM, "limiter_stuck");
		if (stuck > 0)
			break;
		tlbb_msleep(20);
	}
	tap_ok(ok && stuck > 0,
	       "PROT_NONE, limit 0: limiter stuck with %ld huge pages", stuck);

	tap_require(!tracefs_set("tracing_on", "0"), "tracing off");
	tap_ok(tlbb_get_u64(NOISE, "ticks") > 0,
	       "the other VM ticked meanwhile (%llu ticks)",
	       (unsigned long long)tlbb_get_u64(NOISE, "ticks"));
	read_trace(&s);
	tap_diag("%u lines: %u decisions (%u lower, %u raise), %u step_down, %u step_up, %u split events (%llu pages), %u restore, %u EFAULT",
		 s.lines, s.decisions, s.lower, s.raise, s.nr_down, s.nr_up,
		 s.splits, s.split_sum, s.restores, s.efault);

	tap_ok(s.lines > 0 && !s.other_vm && !s.bad_pid,
	       "filter vm == \"%s\": %u lines, all of this VM and pid (%u of another VM, %u of another pid)",
	       VM, s.lines, s.other_vm, s.bad_pid);
	tap_ok(s.decisions >= s.nr_down + s.nr_up && !s.decision_bad &&
	       s.lower == s.nr_down && s.raise == s.nr_up,
	       "tlbb_decision: one a tick; lower/raise exactly where the limit moved (%u bad)",
	       s.decision_bad);
	tap_ok(s.nr_down >= 3 && s.nr_down <= MAX_STEPS &&
	       s.down[0][0] == 8 && s.down[0][1] == 6 &&
	       s.down[1][0] == 6 && s.down[1][1] == 4 &&
	       s.down[2][0] == 6 && steps_down_to_zero(&s),
	       "tlbb_step_down: 8->6, 6->4, then from 6 down to 0 (%u steps)",
	       s.nr_down);
	tap_ok(s.nr_up == 1 && s.up[0][0] == 4 && s.up[0][1] == 6,
	       "tlbb_step_up: 4->6 (%u steps)", s.nr_up);
	tap_ok(s.splits >= 1 && s.split_sum == tlbb_get_u64(VM, "splits"),
	       "tlbb_split: %llu pages split in %u events = splits %llu",
	       s.split_sum, s.splits,
	       (unsigned long long)tlbb_get_u64(VM, "splits"));
	tap_ok(s.restores >= 1, "tlbb_restore: the hold lifted (%u)",
	       s.restores);
	tap_ok(s.efault >= 1,
	       "tlbb_limiter_error: op=split err=-14 (EFAULT) (%u)", s.efault);

	/* 4: every split order counts a failed page once a tick */
	check_fail_count(0);
	check_fail_count(1);
	check_fail_count(2);

	tlbb_inject_off(VM);
	tlbb_inject_off(NOISE);
	mprotect(region, len, PROT_READ | PROT_WRITE);
	tap_ok(!tlbb_set_mode(VM, TLBB_MODE_OFF) && !tlbb_vm_remove(VM) &&
	       !tlbb_set_mode(NOISE, TLBB_MODE_OFF) && !tlbb_vm_remove(NOISE),
	       "mode off, rmdir both VMs");
	kill(holder, SIGKILL);
	waitpid(holder, NULL, 0);
	tracefs_teardown();
	thp_sysfs_set("khugepaged/scan_sleep_millisecs", scan_sleep);
	return tap_done();
}
