// SPDX-License-Identifier: GPL-2.0
/*
 * t_stage: one registration protocol (docs/kernel-module.md,
 * "Registration"). Each hole hostile use found in the staged registration
 * of the module before it, as a check that failed there:
 *
 *  - a registrar killed between "stage" and "commit": its stage goes with
 *    it (status staging 0), and a plain "off" (the previous client's
 *    unregister) switches the VM off, so rmdir works; an unregistration
 *    (stage, off, commit) cancels a live writer's stage (ECANCELED);
 *  - two writers staging at once: each commit applies its own writes only
 *    (A's pid never goes with B's ranges);
 *  - a pid staged, its process gone and the number reused by another
 *    process before commit: commit refuses (ESRCH), never registers the
 *    newcomer (the number is resolved when written, the struct pid held);
 *  - a commit of one tunable on a balanced VM held at its limit: the limit
 *    and the hold (VM_NOHUGEPAGE) stay, as with a plain write;
 *  - a vCPU thread listed in vcpu_tids exits: a staged change of a tunable
 *    still commits;
 *  - limiter_error: back to 0 after the memory is accessible again, after
 *    mode off, after munmap and after the process exits;
 *  - vcpu_tids read back with more ids than fit a page: cut between ids,
 *    never inside one, and newline-terminated;
 *  - "." and "..": not VM names (the injection file refuses them, EINVAL;
 *    mkdir of them never reaches the module).
 *
 * On every exit path (a bail-out, any exit, the harness's SIGTERM at its
 * timeout) the VMs of this test still there are removed, so the module can
 * be unloaded after it; t_stage_bail.sh checks that.
 *
 * tlbb-test-timeout: 240
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cfs.h"
#include "tap.h"
#include "thp.h"
#include "tlbb_defs.h"
#include "util.h"

#define PAGES		4
#define MCF_HUGE	2180000
#define MCF_SMALL	400

static size_t len;

/* ---- a second writer: a process that writes what it is told ---- */

struct wreq {
	char vm[64];
	char attr[32];
	char val[400];
};

struct writer {
	pid_t pid;
	int req, rsp;
};

static void writer_loop(int req, int rsp)
{
	struct wreq r;
	int err;

	while (read(req, &r, sizeof(r)) == sizeof(r)) {
		err = file_write_buf(tlbb_path(r.vm, r.attr), r.val,
				     strlen(r.val));
		if (write(rsp, &err, sizeof(err)) != sizeof(err))
			break;
	}
	_exit(0);
}

static struct writer writer_start(void)
{
	int a[2], b[2];
	struct writer w;

	tap_require(!pipe(a) && !pipe(b), "pipes");
	w.pid = fork();
	tap_require(w.pid >= 0, "fork a writer");
	if (!w.pid) {
		close(a[1]);
		close(b[0]);
		writer_loop(a[0], b[1]);
	}
	close(a[0]);
	close(b[1]);
	w.req = a[1];
	w.rsp = b[0];
	return w;
}

/* The writer writes @attr of @vm; its 0 or -errno. */
__attribute__((format(printf, 4, 5)))
static int wset(struct writer *w, const char *vm, const char *attr,
		const char *fmt, ...)
{
	struct wreq r;
	va_list ap;
	int err = -EIO;

	memset(&r, 0, sizeof(r));
	snprintf(r.vm, sizeof(r.vm), "%s", vm);
	snprintf(r.attr, sizeof(r.attr), "%s", attr);
	va_start(ap, fmt);
	vsnprintf(r.val, sizeof(r.val), fmt, ap);
	va_end(ap);
	if (write(w->req, &r, sizeof(r)) != sizeof(r) ||
	    read(w->rsp, &err, sizeof(err)) != sizeof(err))
		return -EIO;
	return err;
}

static void writer_kill(struct writer *w)
{
	kill(w->pid, SIGKILL);
	waitpid(w->pid, NULL, 0);
	close(w->req);
	close(w->rsp);
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* ---- helpers ---- */

static long long status_num(const char *vm, const char *key)
{
	char buf[64];

	if (tlbb_status(vm, key, buf, sizeof(buf)))
		return -999999;
	return strtoll(buf, NULL, 10);
}

/* Wait up to @ms for status @key of @vm to read @want. */
static int wait_status(const char *vm, const char *key, long long want,
		       unsigned int ms)
{
	unsigned int t;

	for (t = 0; t < ms; t += 20) {
		if (status_num(vm, key) == want)
			return 1;
		tlbb_msleep(20);
	}
	return status_num(vm, key) == want;
}

static int commit(const char *vm)
{
	return tlbb_set(vm, "commit", "commit\n");
}

/* PAGES huge pages, filled; bails out if THP does not back them. */
static char *huge_region(uint64_t seed)
{
	char *p = thp_alloc(len, 0, 1);
	long huge;

	thp_fill(p, len, seed);
	huge = thp_wait_huge(p, len, PAGES, 10000);
	tap_require(huge == PAGES, "%d huge pages back a fresh region (%ld)",
		    PAGES, huge);
	return p;
}

/* Stage and commit a registration of @pid over @p; 0 or -errno. */
static int register_staged(const char *vm, pid_t pid, pid_t tid,
			   const char *p, enum tlbb_mode mode)
{
	int err = tlbb_set(vm, "commit", "stage\n");

	err = err ?: tlbb_set(vm, "pid", "%d\n", pid);
	err = err ?: tlbb_set(vm, "vcpu_tids", "%d\n", tid);
	err = err ?: tlbb_set(vm, "ranges", "%p 0x%zx 0x40000000\n", p, len);
	err = err ?: tlbb_set_fast(vm, PAGES);
	err = err ?: tlbb_set_mode(vm, mode);
	err = err ?: commit(vm);
	if (err)
		tlbb_set(vm, "commit", "abort\n");
	return err;
}

/* modclient's unregister: stage, off, commit, rmdir. */
static int unregister_staged(const char *vm)
{
	int err = tlbb_set(vm, "commit", "stage\n");

	err = err ?: tlbb_set_mode(vm, TLBB_MODE_OFF);
	err = err ?: commit(vm);
	return err ?: tlbb_vm_remove(vm);
}

/* ---- the holes ---- */

#define VM_DEAD	"stg-dead"

static void test_dead_registrar(char *p)
{
	pid_t holder = tlbb_spawn_holder();
	struct writer w = writer_start();
	int err;

	tap_require(!tlbb_vm_create(VM_DEAD), "mkdir vms/" VM_DEAD);
	tap_require(!register_staged(VM_DEAD, holder, holder, p,
				     TLBB_MODE_MONITOR),
		    "register a holder, monitored (stage ... commit)");
	/* a registrar restaging the VM is killed before its commit */
	err = wset(&w, VM_DEAD, "commit", "stage\n");
	err = err ?: wset(&w, VM_DEAD, "pid", "%d\n", holder);
	err = err ?: wset(&w, VM_DEAD, "mode", "%s\n", tlbb_mode_names[TLBB_MODE_BALANCE]);
	tap_require(!err, "a second writer stages: %s", strerror(-err));
	tap_ok(status_num(VM_DEAD, "staging") == 1,
	       "its stage is in progress (status staging 1)");
	writer_kill(&w);
	tap_ok(status_num(VM_DEAD, "staging") == 0,
	       "the writer killed before commit: its stage went with it (staging %lld)",
	       status_num(VM_DEAD, "staging"));
	/* the previous client's unregister: a plain off, then rmdir */
	err = tlbb_set_mode(VM_DEAD, TLBB_MODE_OFF);
	tap_ok(!err && tlbb_mode_is(VM_DEAD, TLBB_MODE_OFF),
	       "a plain write of off after it switches the VM off (%s)",
	       strerror(-err));
	err = tlbb_vm_remove(VM_DEAD);
	tap_ok(!err, "and rmdir works (%s)", strerror(-err));
	if (err) {
		tlbb_set(VM_DEAD, "commit", "commit\n");
		tlbb_set_mode(VM_DEAD, TLBB_MODE_OFF);
		tlbb_vm_remove(VM_DEAD);
	}

	/* a live writer's stage, then an unregistration: cancelled */
	tap_require(!tlbb_vm_create(VM_DEAD), "mkdir vms/" VM_DEAD " again");
	tap_require(!register_staged(VM_DEAD, holder, holder, p,
				     TLBB_MODE_MONITOR), "registered again");
	w = writer_start();
	err = wset(&w, VM_DEAD, "commit", "stage\n");
	err = err ?: wset(&w, VM_DEAD, "mode", "%s\n", tlbb_mode_names[TLBB_MODE_BALANCE]);
	tap_require(!err, "a writer stages mode balance: %s", strerror(-err));
	err = tlbb_set(VM_DEAD, "commit", "stage\n");
	err = err ?: tlbb_set_mode(VM_DEAD, TLBB_MODE_OFF);
	err = err ?: commit(VM_DEAD);
	tap_ok(!err && tlbb_mode_is(VM_DEAD, TLBB_MODE_OFF),
	       "unregistration (stage, off, commit) while it stages: off (%s)",
	       strerror(-err));
	err = wset(&w, VM_DEAD, "commit", "commit\n");
	tap_ok(err == -ECANCELED && tlbb_mode_is(VM_DEAD, TLBB_MODE_OFF),
	       "the other writer's commit is refused with ECANCELED (%s), the VM stays off",
	       strerror(-err));
	tap_ok(wset(&w, VM_DEAD, "mode", "%s\n", tlbb_mode_names[TLBB_MODE_MONITOR]) == -ECANCELED &&
	       !wset(&w, VM_DEAD, "commit", "abort\n") &&
	       tlbb_mode_is(VM_DEAD, TLBB_MODE_OFF),
	       "its writes too, until it aborts (or stages again)");
	writer_kill(&w);
	err = tlbb_vm_remove(VM_DEAD);
	tap_ok(!err, "rmdir (%s)", strerror(-err));
	if (err) {
		tlbb_set_mode(VM_DEAD, TLBB_MODE_OFF);
		tlbb_vm_remove(VM_DEAD);
	}
	reap(holder);
}

#define VM_TWO	"stg-two"

static void test_two_writers(char *p)
{
	pid_t p1 = tlbb_spawn_holder(), p2 = tlbb_spawn_holder();
	struct writer b = writer_start();
	int err, eb;

	tap_require(!tlbb_vm_create(VM_TWO), "mkdir vms/" VM_TWO);
	err = tlbb_set(VM_TWO, "commit", "stage\n");
	err = err ?: tlbb_set(VM_TWO, "pid", "%d\n", p1);
	eb = wset(&b, VM_TWO, "commit", "stage\n");
	eb = eb ?: wset(&b, VM_TWO, "pid", "%d\n", p2);
	err = err ?: tlbb_set(VM_TWO, "ranges", "%p 0x%zx 0\n", p, len);
	err = err ?: commit(VM_TWO);
	tap_ok(!err && !eb && tlbb_get_u64(VM_TWO, "pid") == (uint64_t)p1 &&
	       tlbb_get_u64(VM_TWO, "total_pages") == PAGES,
	       "A stages pid %d, B stages pid %d, A stages ranges and commits: pid %llu (A's) with A's ranges (%s)",
	       p1, p2, (unsigned long long)tlbb_get_u64(VM_TWO, "pid"),
	       strerror(-err));
	eb = wset(&b, VM_TWO, "ranges", "%p 0x%zx 0\n", p, len / 2);
	eb = eb ?: wset(&b, VM_TWO, "commit", "commit\n");
	tap_ok(!eb && tlbb_get_u64(VM_TWO, "pid") == (uint64_t)p2 &&
	       tlbb_get_u64(VM_TWO, "total_pages") == PAGES / 2,
	       "then B's commit applies B's pid and B's ranges (%s)",
	       strerror(-eb));
	writer_kill(&b);
	tap_ok(!tlbb_vm_remove(VM_TWO), "rmdir vms/" VM_TWO);
	reap(p1);
	reap(p2);
}

#define VM_REUSE	"stg-reuse"

/* A holder process with the number @want (ns_last_pid); -1 if not got. */
static pid_t holder_numbered(pid_t want)
{
	int i;

	for (i = 0; i < 20; i++) {
		pid_t got;

		if (file_printf("/proc/sys/kernel/ns_last_pid", "%d", want - 1))
			return -1;
		got = tlbb_spawn_holder();
		if (got == want)
			return got;
		reap(got);
	}
	return -1;
}

static void test_pid_reuse(char *p)
{
	pid_t old = tlbb_spawn_holder(), impostor;
	int err;

	tap_require(!tlbb_vm_create(VM_REUSE), "mkdir vms/" VM_REUSE);
	err = tlbb_set(VM_REUSE, "commit", "stage\n");
	err = err ?: tlbb_set(VM_REUSE, "pid", "%d\n", old);
	err = err ?: tlbb_set(VM_REUSE, "ranges", "%p 0x%zx 0\n", p, len);
	tap_require(!err, "stage pid %d and ranges: %s", old, strerror(-err));
	reap(old);
	impostor = holder_numbered(old);
	tap_require(impostor == old,
		    "another process got the number %d (ns_last_pid)", old);
	err = commit(VM_REUSE);
	tap_ok(err == -ESRCH && tlbb_get_u64(VM_REUSE, "pid") == 0,
	       "the staged process exited and its number went to another: commit refused (%s), pid %llu (want ESRCH, 0)",
	       strerror(-err),
	       (unsigned long long)tlbb_get_u64(VM_REUSE, "pid"));
	tlbb_set(VM_REUSE, "commit", "abort\n");
	tlbb_set_mode(VM_REUSE, TLBB_MODE_OFF);
	tap_ok(!tlbb_vm_remove(VM_REUSE), "rmdir vms/" VM_REUSE);
	reap(impostor);
}

#define VM_HOLD	"stg-hold"

static void test_tunable_keeps_hold(void)
{
	char *p = huge_region(21);
	uint64_t limit = 0;
	unsigned int t;
	int err;

	tap_require(!tlbb_vm_create(VM_HOLD), "mkdir vms/" VM_HOLD);
	tap_require(!tlbb_inject(VM_HOLD, MCF_HUGE, MCF_SMALL), "inject");
	err = tlbb_set(VM_HOLD, "commit", "stage\n");
	err = err ?: tlbb_set(VM_HOLD, "pid", "%d\n", getpid());
	err = err ?: tlbb_set(VM_HOLD, "vcpu_tids", "%d\n", gettid());
	err = err ?: tlbb_set(VM_HOLD, "ranges", "%p 0x%zx 0\n", p, len);
	err = err ?: tlbb_set_fast(VM_HOLD, PAGES);
	err = err ?: tlbb_set(VM_HOLD, "floor_pages", "2\n");
	err = err ?: tlbb_set_mode(VM_HOLD, TLBB_MODE_BALANCE);
	err = err ?: commit(VM_HOLD);
	for (t = 0; t < 5000; t += 20) {
		limit = tlbb_get_u64(VM_HOLD, "huge_limit");
		if (limit == 2 && thp_huge_pages(0, p, len) == 2)
			break;
		tlbb_msleep(20);
	}
	tap_require(!err && limit == 2 && thp_vma_nohuge(p) == 1,
		    "held at the floor: limit %llu (want 2), nh %d",
		    (unsigned long long)limit, thp_vma_nohuge(p));
	err = tlbb_set(VM_HOLD, "commit", "stage\n");
	err = err ?: tlbb_set(VM_HOLD, "imbalance_threshold", "25\n");
	err = err ?: commit(VM_HOLD);
	limit = tlbb_get_u64(VM_HOLD, "huge_limit");
	tap_ok(!err && limit == 2 && thp_vma_nohuge(p) == 1 &&
	       tlbb_get_u64(VM_HOLD, "imbalance_threshold") == 25,
	       "a commit of one tunable: applied, limit still %llu (want 2), hold kept (nh %d) (%s)",
	       (unsigned long long)limit, thp_vma_nohuge(p), strerror(-err));
	tlbb_msleep(200);
	tap_ok(tlbb_get_u64(VM_HOLD, "huge_limit") == 2 &&
	       thp_huge_pages(0, p, len) == 2,
	       "and a few ticks later still 2 huge pages");
	tlbb_inject_off(VM_HOLD);
	tap_ok(!unregister_staged(VM_HOLD), "unregister (stage, off, commit, rmdir)");
	thp_free(p, len);
}

#define VM_TID	"stg-tid"

static int tid_pipe[2];
static pid_t tid_of_thread;

static void *vcpu_thread(void *arg)
{
	char c;

	(void)arg;
	tid_of_thread = gettid();
	if (read(tid_pipe[0], &c, 1) < 0)
		return NULL;
	return NULL;
}

/* Wait up to @ms until /proc has no thread @tid of this process. */
static int thread_gone(pid_t tid, unsigned int ms)
{
	char path[64];
	unsigned int t;

	snprintf(path, sizeof(path), "/proc/%d/task/%d", getpid(), tid);
	for (t = 0; t < ms; t += 5) {
		if (access(path, F_OK) && errno == ENOENT)
			return 1;
		tlbb_msleep(5);
	}
	return 0;
}

static void test_exited_vcpu(char *p)
{
	pthread_t th;
	int err;

	tap_require(!pipe(tid_pipe), "pipe");
	tap_require(!pthread_create(&th, NULL, vcpu_thread, NULL),
		    "a vCPU thread");
	while (!__atomic_load_n(&tid_of_thread, __ATOMIC_SEQ_CST))
		tlbb_msleep(1);
	tap_require(!tlbb_vm_create(VM_TID), "mkdir vms/" VM_TID);
	err = tlbb_set(VM_TID, "commit", "stage\n");
	err = err ?: tlbb_set(VM_TID, "pid", "%d\n", getpid());
	err = err ?: tlbb_set(VM_TID, "vcpu_tids", "%d %d\n", gettid(),
			      tid_of_thread);
	err = err ?: tlbb_set(VM_TID, "ranges", "%p 0x%zx 0\n", p, len);
	err = err ?: commit(VM_TID);
	tap_require(!err, "registered with two vCPU threads: %s",
		    strerror(-err));
	close(tid_pipe[1]);
	pthread_join(th, NULL);
	close(tid_pipe[0]);
	/* joined is not gone yet: the tid is cleared before release_task() */
	tap_require(thread_gone(tid_of_thread, 5000),
		    "thread %d gone from /proc", tid_of_thread);
	err = tlbb_set(VM_TID, "commit", "stage\n");
	err = err ?: tlbb_set(VM_TID, "interval_ms", "30\n");
	err = err ?: commit(VM_TID);
	tap_ok(!err && tlbb_get_u64(VM_TID, "interval_ms") == 30,
	       "a listed vCPU thread exited: a staged interval_ms still commits (%s)",
	       strerror(-err));
	if (err)
		tlbb_set(VM_TID, "commit", "abort\n");
	tap_ok(!unregister_staged(VM_TID), "unregister " VM_TID);
}

#define VM_ERR	"stg-err"

/* Balance this process (or @pid) over a fresh PROT_NONE region: EFAULT. */
static char *stuck_region(pid_t pid, uint64_t seed, pid_t *child)
{
	char *p = huge_region(seed);
	int err;

	tap_require(!mprotect(p, len, PROT_NONE), "mprotect PROT_NONE");
	if (child) {
		*child = tlbb_spawn_holder();	/* its copy: PROT_NONE too */
		pid = *child;
	}
	err = register_staged(VM_ERR, pid, pid, p, TLBB_MODE_BALANCE);
	tap_require(!err, "balance a PROT_NONE region of %d: %s", pid,
		    strerror(-err));
	tap_require(wait_status(VM_ERR, "limiter_error", -EFAULT, 5000),
		    "limiter_error -14 (EFAULT): %lld",
		    status_num(VM_ERR, "limiter_error"));
	return p;
}

static void test_limiter_error(void)
{
	pid_t child;
	char *p;
	int ok;

	tap_require(!tlbb_vm_create(VM_ERR), "mkdir vms/" VM_ERR);
	tap_require(!tlbb_inject(VM_ERR, MCF_HUGE, MCF_SMALL), "inject");

	p = stuck_region(getpid(), 31, NULL);
	tap_require(!mprotect(p, len, PROT_READ | PROT_WRITE), "mprotect RW");
	ok = wait_status(VM_ERR, "limiter_stuck", 0, 5000) &&
	     wait_status(VM_ERR, "limiter_error", 0, 2000);
	tap_ok(ok, "accessible again and split: limiter_error %lld (want 0)",
	       status_num(VM_ERR, "limiter_error"));
	tlbb_set_mode(VM_ERR, TLBB_MODE_OFF);
	thp_free(p, len);

	p = stuck_region(getpid(), 32, NULL);
	tlbb_set(VM_ERR, "commit", "stage\n");
	tlbb_set_mode(VM_ERR, TLBB_MODE_OFF);
	commit(VM_ERR);
	tap_ok(tlbb_mode_is(VM_ERR, TLBB_MODE_OFF) &&
	       status_num(VM_ERR, "limiter_error") == 0,
	       "mode off: limiter_error %lld (want 0)",
	       status_num(VM_ERR, "limiter_error"));
	thp_free(p, len);

	p = stuck_region(getpid(), 33, NULL);
	thp_free(p, len);
	ok = wait_status(VM_ERR, "limiter_error", 0, 3000);
	tap_ok(ok, "the region unmapped: limiter_error %lld (want 0)",
	       status_num(VM_ERR, "limiter_error"));
	tlbb_set_mode(VM_ERR, TLBB_MODE_OFF);

	p = stuck_region(0, 34, &child);
	reap(child);
	ok = wait_status(VM_ERR, "pid", 0, 3000) &&
	     status_num(VM_ERR, "limiter_error") == 0;
	tap_ok(ok, "the process exited: limiter_error %lld (want 0)",
	       status_num(VM_ERR, "limiter_error"));
	thp_free(p, len);
	tlbb_inject_off(VM_ERR);
	tlbb_set_mode(VM_ERR, TLBB_MODE_OFF);
	tap_ok(!tlbb_vm_remove(VM_ERR), "rmdir vms/" VM_ERR);
}

#define VM_MANY	"stg-many"

static int many_pipe[2];

static void *idle_thread(void *arg)
{
	char c;

	*(pid_t *)arg = gettid();
	if (read(many_pipe[0], &c, 1) < 0)
		return NULL;
	return NULL;
}

static void test_tids_readback(void)
{
	static pthread_t th[TLBB_MAX_VCPUS];
	static pid_t tids[TLBB_MAX_VCPUS];
	static char buf[3 * 4096], list[4096];
	pthread_attr_t attr;
	unsigned int i, n = 0, ok = 0, w;
	size_t at = 0;
	char *tok, *save;
	int err, nl;

	tap_require(!pipe(many_pipe), "pipe");
	/* five-digit thread ids: more than a page of them */
	tap_require(!file_printf("/proc/sys/kernel/ns_last_pid", "%d", 20000),
		    "ns_last_pid 20000");
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (i = 0; i < TLBB_MAX_VCPUS; i++)
		tap_require(!pthread_create(&th[i], &attr, idle_thread,
					    &tids[i]), "thread %u", i);
	for (i = 0; i < TLBB_MAX_VCPUS; i++)
		while (!__atomic_load_n(&tids[i], __ATOMIC_SEQ_CST))
			tlbb_msleep(1);

	tap_require(!tlbb_vm_create(VM_MANY), "mkdir vms/" VM_MANY);
	err = tlbb_set(VM_MANY, "commit", "stage\n");
	err = err ?: tlbb_set(VM_MANY, "pid", "%d\n", getpid());
	for (i = 0, w = 0; !err && i < TLBB_MAX_VCPUS; i += 512, w++) {
		unsigned int j;

		at = 0;
		for (j = i; j < i + 512 && j < TLBB_MAX_VCPUS; j++)
			at += snprintf(list + at, sizeof(list) - at, "%s%d",
				       j > i ? " " : (w ? "+" : ""), tids[j]);
		err = file_write_buf(tlbb_path(VM_MANY, "vcpu_tids"), list,
				     at);
	}
	err = err ?: commit(VM_MANY);
	tap_require(!err, "%d threads registered (stage, pid, vcpu_tids in %u writes, commit): %s",
		    TLBB_MAX_VCPUS, w, strerror(-err));

	err = (int)file_read(tlbb_path(VM_MANY, "vcpu_tids"), buf, sizeof(buf));
	tap_require(err > 0, "read vcpu_tids");
	at = err;
	nl = buf[at - 1] == '\n';
	if (nl) {
		buf[at - 1] = 0;
		for (tok = strtok_r(buf, " ", &save); tok;
		     tok = strtok_r(NULL, " ", &save), n++)
			ok += n < TLBB_MAX_VCPUS && atoi(tok) == tids[n];
	}
	tap_ok(at < 4096 && nl && n > 0 && n < TLBB_MAX_VCPUS && ok == n,
	       "vcpu_tids read back: %zu bytes, %s, %u whole ids, all the first ones registered (%u match)",
	       at, nl ? "newline-terminated" : "no newline at the end", n,
	       ok);

	close(many_pipe[1]);
	for (i = 0; i < TLBB_MAX_VCPUS; i++)
		pthread_join(th[i], NULL);
	close(many_pipe[0]);
	tap_ok(!unregister_staged(VM_MANY), "unregister " VM_MANY);
}

static void test_dot_names(void)
{
	tap_ok(tlbb_vm_create(".") == -EEXIST &&
	       tlbb_vm_create("..") == -EEXIST,
	       "mkdir vms/. and vms/..: EEXIST (the VFS; never a VM)");
	tap_ok(file_printf(TLBB_INJECT, ".. 1 1\n") == -EINVAL &&
	       file_printf(TLBB_INJECT, ". off\n") == -EINVAL,
	       "the injection file refuses \"..\" and \".\" as names (EINVAL)");
	tap_ok(file_printf(TLBB_INJECT, "... 1 1\n") == -ENOENT,
	       "\"...\" is a name (no such VM: ENOENT)");
}

/* ---- no VM left behind, whatever the exit ---- */

static const char *const test_vms[] = {
	VM_DEAD, VM_TWO, VM_REUSE, VM_HOLD, VM_TID, VM_ERR, VM_MANY,
};
static pid_t main_pid;

/*
 * Remove the VMs of this test still there: a bail-out (tap_require) in
 * the middle of a case leaves its VM registered or staged, and a module
 * with a VM cannot be unloaded (the harness's teardown rmmod failed after
 * t_stage bailed on a kernel without ns_last_pid). This writer's stage
 * aborted, the injection off, a plain off (which cancels other writers'
 * stages), rmdir (which drops them). Not in forked children.
 */
static void remove_leftovers(void)
{
	struct stat st;
	unsigned int i;
	int err;

	if (getpid() != main_pid)
		return;
	for (i = 0; i < sizeof(test_vms) / sizeof(test_vms[0]); i++) {
		const char *vm = test_vms[i];

		if (stat(tlbb_path(vm, NULL), &st))
			continue;
		tlbb_set(vm, "commit", "abort\n");
		tlbb_inject_off(vm);
		tlbb_set_mode(vm, TLBB_MODE_OFF);
		err = tlbb_vm_remove(vm);
		printf("# vms/%s left by an early exit: %s\n", vm,
		       err ? strerror(-err) : "removed");
	}
	fflush(stdout);
}

/*
 * tlbb-run's SIGTERM at the test's timeout: the same cleanup, then the
 * default action (status 128 + SIGTERM). The cleanup is open, write,
 * rmdir and stat; its path buffer may be the one an interrupted write was
 * using, which does not matter once the test is ending.
 */
static void on_sigterm(int sig)
{
	remove_leftovers();
	signal(sig, SIG_DFL);
	raise(sig);
}

int main(void)
{
	long slab0;
	char *p;

	setvbuf(stdout, NULL, _IOLBF, 0);
	main_pid = getpid();
	tap_require(!atexit(remove_leftovers), "atexit");
	tap_require(signal(SIGTERM, on_sigterm) != SIG_ERR, "SIGTERM handler");
	len = PAGES * thp_pmd_size();
	p = huge_region(7);
	slab0 = tlbb_slab_active();

	test_dead_registrar(p);
	test_two_writers(p);
	test_pid_reuse(p);
	test_tunable_keeps_hold();
	test_exited_vcpu(p);
	test_limiter_error();
	test_tids_readback();
	test_dot_names();

	tap_ok(tlbb_slab_active() == slab0, "tlbb_vm objects back to %ld",
	       slab0);
	return tap_done();
}
