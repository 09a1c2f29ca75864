// SPDX-License-Identifier: GPL-2.0
/*
 * t_commit: staged registration (docs/kernel-module.md).
 *
 * Each write(2) is parsed alone, so a registration written attribute by
 * attribute is applied piece by piece (a pid written one byte at a time
 * registered pid 1 first). With "stage" written to commit, writes to pid,
 * vcpu_tids, ranges, mode and the tunables are only staged: the live VM
 * does not change until "commit", which checks everything against the
 * system and applies it at once, or fails with an errno and names the
 * culprit in the commit file, changing nothing. "abort" drops the stage.
 * Without "stage" every write applies at once, as before (deprecated).
 * The stage's ownership, and the holes of the first staged protocol, are
 * t_stage's.
 *
 * tlbb-test-timeout: 120
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cfs.h"
#include "tap.h"
#include "thp.h"
#include "tlbb_defs.h"
#include "util.h"

#define VM	"staged"

static char *region;
static size_t len;
static pid_t child;
static char live0[32768];

/* The live VM: pid, mode, vcpu_tids, ranges and one tunable. */
static void live(char *buf, size_t size)
{
	static const char *const attrs[] = {
		"pid", "mode", "vcpu_tids", "ranges", "interval_ms",
	};
	size_t i, n = 0;

	for (i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		long m = file_read(tlbb_path(VM, attrs[i]), buf + n, size - n);

		n += m > 0 ? m : 0;
	}
}

static int unchanged(void)
{
	static char now[32768];

	live(now, sizeof(now));
	return !strcmp(now, live0);
}

/* Does the commit file say @state and name @what in its last result? */
static int commit_says(const char *state, int err, const char *what)
{
	char buf[256], want[64];

	if (tlbb_get(VM, "commit", buf, sizeof(buf)) <= 0)
		return 0;
	snprintf(want, sizeof(want), "last %d ", err);
	if (strncmp(buf, state, strlen(state)) || !strstr(buf, want) ||
	    !strstr(buf, what)) {
		tap_diag("commit reads \"%s\", want %s, %s, \"%s\"", buf, state,
			 want, what);
		return 0;
	}
	return 1;
}

static int stage_all(pid_t pid, int mode_on)
{
	int err = tlbb_set(VM, "commit", "stage\n");

	err = err ?: tlbb_set(VM, "pid", "%d\n", pid);
	err = err ?: tlbb_set(VM, "vcpu_tids", "%d\n", pid);
	err = err ?: tlbb_set(VM, "ranges", "%p 0x%zx 0x40000000\n", region,
			      len);
	err = err ?: tlbb_set(VM, "interval_ms", "20\n");
	err = err ?: tlbb_set_mode(VM, mode_on ? TLBB_MODE_MONITOR :
						 TLBB_MODE_OFF);
	return err;
}

static void test_staged_nothing_applies(void)
{
	char buf[64];

	live(live0, sizeof(live0));
	tap_ok(commit_says("idle", 0, "-"), "commit reads idle before any stage");
	tap_ok(!stage_all(child, 1), "stage, then pid, vcpu_tids, ranges, interval_ms, mode: each write accepted");
	tap_ok(unchanged() && commit_says("staging", 0, "-") &&
	       !tlbb_status(VM, "staging", buf, sizeof(buf)) &&
	       !strcmp(buf, "1"),
	       "while staging the live VM is unchanged (pid 0, mode off); commit and status say staging");
	/* pid written a byte at a time: only staged, nothing registered */
	tap_ok(!tlbb_set(VM, "pid", "1") && unchanged(),
	       "a partial pid write (\"1\") is only staged: no process registered");
	tap_ok(!tlbb_set(VM, "commit", "abort\n") && unchanged() &&
	       commit_says("idle", 0, "-"),
	       "abort drops the stage, nothing changed");
	tap_ok(tlbb_set(VM, "commit", "commit\n") == -EINVAL &&
	       commit_says("idle", -EINVAL, "nothing staged"),
	       "commit with nothing staged: EINVAL, named");
}

/* A failing commit changes nothing, names the culprit, stays staging. */
static int bad_commit(int want, const char *what)
{
	int err = tlbb_set(VM, "commit", "commit\n");

	if (err == -want && unchanged() && commit_says("staging", -want, what))
		return 1;
	tap_diag("commit: %s, want %s naming %s%s",
		 err ? strerror(-err) : "success", strerror(want), what,
		 unchanged() ? "" : ", and the VM changed");
	return 0;
}

static void test_refused(void)
{
	pid_t dead = fork();
	int n = 0;

	if (!dead)
		_exit(0);
	waitpid(dead, NULL, 0);
	live(live0, sizeof(live0));

	n += tlbb_set(VM, "commit", "stage\n") != 0;
	n += tlbb_set_mode(VM, TLBB_MODE_BALANCE) != 0;
	n += !bad_commit(ESRCH, "pid: none staged");
	n += tlbb_set(VM, "pid", "%d\n", child) != 0;
	n += !bad_commit(EINVAL, "ranges: none staged");
	/* ids are resolved when written: a pid that is gone, at once */
	n += tlbb_set(VM, "pid", "%d\n", dead) != -ESRCH;
	n += tlbb_set(VM, "ranges", "%p 0x%zx 0\n", region, len) != 0;
	n += tlbb_set(VM, "pid", "%d\n", child) != 0;
	n += tlbb_set(VM, "vcpu_tids", "%d\n", getpid()) != 0;
	n += !bad_commit(ESRCH, "vcpu_tids:");
	n += tlbb_set(VM, "vcpu_tids", "%d %d\n", child, child) != 0;
	n += !bad_commit(EINVAL, "listed twice");
	n += tlbb_set(VM, "vcpu_tids", "%d\n", child) != 0;
	n += tlbb_set(VM, "ranges", "0x10000 0x1000 0\n") != 0;
	n += !bad_commit(EFAULT, "ranges:");
	n += tlbb_set(VM, "pid", "2\n") != 0;		/* kthreadd */
	n += !bad_commit(EINVAL, "pid:");
	/* still refused at stage time: form and tunable ranges */
	n += tlbb_set(VM, "pid", "-0\n") != -EINVAL;
	n += tlbb_set_param(VM, TLBB_P_samples,
			    tlbb_params[TLBB_P_samples].min - 1) != -ERANGE;
	n += tlbb_set(VM, "mode", "on\n") != -EINVAL;
	n += tlbb_set(VM, "commit", "apply\n") != -EINVAL;
	n += tlbb_set(VM, "commit", "abort\n") != 0;
	tap_ok(!n && unchanged(),
	       "commit refuses: no pid, no ranges for a mode, foreign and duplicate tid, unmapped range, kernel thread; each named, nothing changed; a dead pid is refused when written (ESRCH)");
}

static void test_commit_applies(void)
{
	int err;

	tap_require(!stage_all(child, 0), "stage a registration, mode off");
	err = tlbb_set_mode(VM, TLBB_MODE_BALANCE);
	err = err ?: tlbb_set(VM, "commit", "commit\n");
	tap_ok(!err && commit_says("idle", 0, "committed"),
	       "commit applies (%s)", strerror(-err));
	tap_ok(tlbb_get_u64(VM, "pid") == (uint64_t)child &&
	       tlbb_get_u64(VM, "interval_ms") == 20 &&
	       tlbb_mode_is(VM, TLBB_MODE_BALANCE) &&
	       tlbb_get_u64(VM, "total_pages") == len / thp_pmd_size(),
	       "pid, vcpu_tids, ranges, interval_ms and mode balance are live at once");
	tap_ok(tlbb_vm_remove(VM) == -EBUSY,
	       "the committed balance mode pins the VM like a mode write (rmdir EBUSY)");

	/* a live VM restaged: ranges halved, committed while balanced */
	err = tlbb_set(VM, "commit", "stage\n");
	err = err ?: tlbb_set(VM, "ranges", "%p 0x%zx 0x40000000\n", region,
			      len / 2);
	tap_ok(!err && tlbb_get_u64(VM, "total_pages") == len / thp_pmd_size(),
	       "staged again; a staged ranges write leaves the live ones (no EBUSY while staging)");
	err = tlbb_set(VM, "commit", "commit\n");
	tap_ok(!err && tlbb_get_u64(VM, "total_pages") == len / 2 / thp_pmd_size() &&
	       tlbb_mode_is(VM, TLBB_MODE_BALANCE),
	       "commit while balanced: new ranges applied, still balance");

	/* the old order still works, write by write */
	err = tlbb_set_mode(VM, TLBB_MODE_OFF);
	err = err ?: tlbb_set(VM, "pid", "0\n");
	err = err ?: tlbb_set(VM, "pid", "%d\n", child);
	err = err ?: tlbb_set(VM, "ranges", "%p 0x%zx 0\n", region, len);
	err = err ?: tlbb_set_mode(VM, TLBB_MODE_MONITOR);
	tap_ok(!err && tlbb_get_u64(VM, "pid") == (uint64_t)child,
	       "without stage, writes apply one by one as before (%s)",
	       strerror(-err));
	tap_ok(!tlbb_set_mode(VM, TLBB_MODE_OFF) &&
	       !tlbb_set(VM, "commit", "stage\n"),
	       "off, then stage again");
}

int main(void)
{
	long slab0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	len = 8 * thp_pmd_size();
	region = thp_alloc(len, 0, 1);
	thp_fill(region, len, 3);
	child = tlbb_spawn_holder();	/* inherits the region */
	slab0 = tlbb_slab_active();

	tap_require(!tlbb_vm_create(VM), "mkdir vms/" VM);
	test_staged_nothing_applies();
	test_refused();
	test_commit_applies();
	tap_ok(!tlbb_vm_remove(VM), "rmdir while staging");
	tap_ok(tlbb_slab_active() == slab0, "tlbb_vm objects back to %ld",
	       slab0);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return tap_done();
}
