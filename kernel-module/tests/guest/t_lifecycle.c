// SPDX-License-Identifier: GPL-2.0
/*
 * t_lifecycle: the VM object's life.
 *
 *  - a new VM directory has one attribute per line of tlbb_params.def and
 *    tlbb_stats.def, parameters at their defaults, "inject_enabled 1";
 *  - register a live process, monitor it, let it exit: state reads
 *    "exited" at once, mode "off", pid 0, and nothing can be restarted;
 *  - 200 register/exit races, the process killed at every step of the
 *    registration (and at random moments by a third process): every write
 *    returns 0 or ESRCH, every VM ends "exited" or "off", rmdir works;
 *  - no leak: the tlbb_vm slab and the module's own VM count are back to
 *    where they started;
 *  - rmmod with VMs registered fails and changes nothing; after rmdir it
 *    succeeds, and the module loads again for the next tests.
 *
 * tlbb-test-timeout: 400
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cfs.h"
#include "tap.h"
#include "thp.h"
#include "tlbb_defs.h"
#include "util.h"

#define REGION		(4UL << 20)
#define RACES		200
#define MODULE_KO	"/modules/tlbbalance.ko"
#define COST		"/sys/kernel/debug/tlbbalance/tick_cost"

static void *region;

/* The module's own count of VM objects (debugfs tick_cost "vms"). */
static long live_vms(void)
{
	char buf[512], *p;
	long n = file_read(COST, buf, sizeof(buf));

	if (n < 0)
		return n;
	p = strstr(buf, "vms ");
	return p ? strtol(p + 4, NULL, 10) : -1;
}

static void reap(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Wait up to ms for vms/<vm>/state to read want. */
static int wait_state(const char *vm, const char *want, unsigned int ms,
		      char *got, size_t size)
{
	unsigned int t;

	for (t = 0; t <= ms; t += 10) {
		if (tlbb_get(vm, "state", got, size) >= 0 && !strcmp(got, want))
			return 0;
		tlbb_msleep(10);
	}
	return -1;
}

static void test_attributes(void)
{
	char buf[256], st[64];
	int bad = 0;

	tap_ok(file_read(TLBB_CFS_ROOT "/version", buf, sizeof(buf)) > 0 &&
	       !strcmp(buf, "1\n"), "version reads 1");
	tap_require(!tlbb_vm_create("lc-attrs"), "mkdir vms/lc-attrs");
#define TLBB_PARAM(name, def, min, max, unit, help)			\
	if (tlbb_get_u64("lc-attrs", #name) != (uint64_t)(def)) {	\
		tap_diag("%s is not its default %llu", #name,		\
			 (unsigned long long)(def));			\
		bad++;							\
	}
#include "tlbb_params.def"
#undef TLBB_PARAM
	tap_ok(!bad, "every parameter of tlbb_params.def reads its default");
	bad = 0;
#define TLBB_STAT(name, kind, type, unit, help)				\
	if (tlbb_get("lc-attrs", #name, buf, sizeof(buf)) < 0 ||	\
	    tlbb_status("lc-attrs", #name, st, sizeof(st))) {		\
		tap_diag("stat %s missing (attribute or status)", #name); \
		bad++;							\
	}
#include "tlbb_stats.def"
#undef TLBB_STAT
	tap_ok(!bad, "every stat of tlbb_stats.def has an attribute and a status line");
	tap_ok(!tlbb_status("lc-attrs", "inject_enabled", st, sizeof(st)) &&
	       !strcmp(st, "1"), "status reports inject_enabled 1");
	tap_ok(!tlbb_status("lc-attrs", "mode", st, sizeof(st)) &&
	       !strcmp(st, tlbb_mode_names[TLBB_MODE_OFF]) &&
	       !tlbb_status("lc-attrs", "pid", buf, sizeof(buf)) &&
	       !strcmp(buf, "0"), "a new VM is off with pid 0");
	tap_ok(!tlbb_vm_remove("lc-attrs"), "rmdir vms/lc-attrs");
}

static void test_exit(void)
{
	char buf[256];
	pid_t child = tlbb_spawn_holder();
	int err;

	tap_require(!tlbb_vm_create("lc-exit"), "mkdir vms/lc-exit");
	err = tlbb_set("lc-exit", "pid", "%d\n", child);
	err = err ?: tlbb_set("lc-exit", "vcpu_tids", "%d\n", child);
	err = err ?: tlbb_set("lc-exit", "ranges", "%p %lu 0\n", region,
			      REGION);
	err = err ?: tlbb_set("lc-exit", "interval_ms", "20\n");
	err = err ?: tlbb_set_mode("lc-exit", TLBB_MODE_MONITOR);
	tap_ok(!err, "register a live process and monitor it (%s)",
	       strerror(-err));
	tlbb_get("lc-exit", "backend", buf, sizeof(buf));
	tap_diag("counting backend without injection: %s", buf);
	tap_ok(!strncmp(buf, "unavailable: ", 13) || !strncmp(buf, "pmu: ", 5),
	       "backend is a PMU or says why it is unavailable");
	/* No hardware PMU under TCG (docs/kernel-tests.md): a skip, not a pass. */
	if (!strncmp(buf, "unavailable: ", 13))
		tap_skip(buf + 13, "counting backend is a hardware PMU");
	else
		tap_ok(!strncmp(buf, "pmu: ", 5),
		       "counting backend is a hardware PMU");
	tap_ok(!tlbb_inject("lc-exit", 1000, 1000), "inject refills");
	tlbb_msleep(200);
	tlbb_get("lc-exit", "backend", buf, sizeof(buf));
	tap_ok(!strcmp(buf, "inject"), "backend reads inject");
	tap_ok(tlbb_get_u64("lc-exit", "ticks") > 0 &&
	       tlbb_get_u64("lc-exit", "refills_small_total") > 0,
	       "the controller ticks on injected refills");

	reap(child);
	tap_ok(!wait_state("lc-exit", "exited", 1000, buf, sizeof(buf)),
	       "state reads exited within 1 s of the exit (%s)", buf);
	tap_ok(tlbb_mode_is("lc-exit", TLBB_MODE_OFF) && tlbb_get_u64("lc-exit", "pid") == 0,
	       "mode off and pid 0 after the exit");
	tap_ok(tlbb_set_mode("lc-exit", TLBB_MODE_MONITOR) == -ESRCH,
	       "monitor after exit: ESRCH");
	tap_ok(tlbb_set("lc-exit", "pid", "%d\n", child) == -ESRCH,
	       "the dead pid: ESRCH");
	tap_ok(!tlbb_vm_remove("lc-exit"), "rmdir after exit");
}

/* The registration steps; the process is killed before step k. */
static int reg_step(const char *vm, int step, pid_t child)
{
	switch (step) {
	case 0: return tlbb_set(vm, "pid", "%d\n", child);
	case 1: return tlbb_set(vm, "vcpu_tids", "%d\n", child);
	case 2: return tlbb_set(vm, "ranges", "%p %lu 0\n", region, REGION);
	case 3: return tlbb_set(vm, "interval_ms", "10\n");
	case 4: return tlbb_set_mode(vm, TLBB_MODE_MONITOR);
	case 5: return tlbb_inject(vm, 2180000, 400);
	case 6: return tlbb_set_mode(vm, TLBB_MODE_BALANCE);
	default: return 0;
	}
}

#define NSTEPS 8

static void test_races(void)
{
	int bad_err = 0, bad_state = 0, bad_rmdir = 0, i, s;
	char vm[32], st[64];

	for (i = 0; i < RACES; i++) {
		pid_t child = tlbb_spawn_holder(), killer = 0;
		int kill_at = i % NSTEPS, registered = 0;

		snprintf(vm, sizeof(vm), "race%d", i);
		tap_require(!tlbb_vm_create(vm), "mkdir vms/%s", vm);
		if (i % 2) {
			/* a third process kills at a random moment */
			killer = fork();
			if (!killer) {
				struct timespec ts = { 0, (rand() % 4000) * 1000L };

				nanosleep(&ts, NULL);
				kill(child, SIGKILL);
				_exit(0);
			}
			kill_at = NSTEPS;
		}
		for (s = 0; s < NSTEPS; s++) {
			int err;

			if (s == kill_at)
				kill(child, SIGKILL);
			err = reg_step(vm, s, child);
			if (!s && !err)
				registered = 1;
			/* ESRCH: gone; EINVAL: mode before ranges took */
			if (err && err != -ESRCH && err != -EINVAL) {
				tap_diag("%s step %d: %s", vm, s,
					 strerror(-err));
				bad_err++;
			}
		}
		if (killer)
			waitpid(killer, NULL, 0);
		reap(child);
		/* registered: must end exited; never registered: off */
		if (wait_state(vm, registered ? "exited" : "off", 2000, st,
			       sizeof(st))) {
			tap_diag("%s ended in state %s", vm, st);
			bad_state++;
		}
		if (tlbb_vm_remove(vm)) {
			tap_diag("rmdir %s: %s", vm, strerror(errno));
			bad_rmdir++;
		}
	}
	tap_ok(!bad_err, "%d register/exit races: every write returned 0 or ESRCH/EINVAL",
	       RACES);
	tap_ok(!bad_state, "every raced VM ended exited (off if its pid write failed)");
	tap_ok(!bad_rmdir, "every raced VM was removed");
}

/*
 * rmdir while other processes hammer the same VM: two workers read status,
 * write tunables and inject, one keeps a file open across the rmdir; the
 * main process creates, registers, monitors and removes the VM 100 times.
 * Any errno is fine for the workers; the kernel must not oops or leak.
 */
static void test_rmdir_under_load(void)
{
	pid_t holder = tlbb_spawn_holder(), w[2];
	int i, k, bad = 0, status;
	/* per worker: operations that reached a live VM (shared pages) */
	volatile long *ok = mmap(NULL, 2 * sizeof(long),
				 PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (ok == MAP_FAILED) {
		tap_ok(0, "mmap of the worker counters: %s", strerror(errno));
		reap(holder);
		return;
	}
	ok[0] = ok[1] = 0;
	for (k = 0; k < 2; k++) {
		w[k] = fork();
		if (!w[k]) {
			char buf[8192];
			int fd = -1, j;

			/* until killed: busy for the whole create/remove run */
			for (j = 0;; j++) {
				if (k == 0) {
					if (file_read(tlbb_path("busy",
							"status"),
						      buf, sizeof(buf)) > 0)
						ok[0]++;
					tlbb_set("busy", "samples", "%d\n",
						 1 + j % 5);
				} else {
					if (fd < 0)
						fd = open(tlbb_path("busy",
							  "status"), O_RDONLY);
					if (fd >= 0 && pread(fd, buf, sizeof(buf),
							     0) < 0) {
						close(fd);
						fd = -1;
					}
					if (!tlbb_inject("busy", j, 2 * j))
						ok[1]++;
				}
			}
		}
	}
	for (i = 0; i < 100; i++) {
		int err = tlbb_vm_create("busy");

		err = err ?: tlbb_set("busy", "pid", "%d\n", holder);
		err = err ?: tlbb_set("busy", "ranges", "%p %lu 0\n", region,
				      REGION);
		err = err ?: tlbb_set("busy", "interval_ms", "1\n");
		err = err ?: tlbb_set_mode("busy", TLBB_MODE_BALANCE);
		if (err) {
			tap_diag("busy round %d: %s", i, strerror(-err));
			bad++;
		}
		tlbb_msleep(5);
		/* an active VM is pinned: rmdir is EBUSY until mode off */
		if (tlbb_vm_remove("busy") != -EBUSY ||
		    tlbb_set_mode("busy", TLBB_MODE_OFF) ||
		    tlbb_vm_remove("busy"))
			bad++;
	}
	for (k = 0; k < 2; k++) {
		kill(w[k], SIGKILL);
		waitpid(w[k], &status, 0);
		/* still running when killed: it overlapped every round */
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
			tap_diag("worker %d ended by itself (status %#x)", k,
				 status);
			bad++;
		}
	}
	reap(holder);
	tap_ok(!bad, "100 x mkdir/register/balance/rmdir (EBUSY)/off/rmdir while two processes read, write and inject");
	tap_ok(ok[0] > 0 && ok[1] > 0,
	       "the workers reached a live VM: %ld status reads, %ld injections",
	       ok[0], ok[1]);
	munmap((void *)ok, 2 * sizeof(long));
}

static void test_rmmod(void)
{
	pid_t child = tlbb_spawn_holder();
	char buf[64];
	int fd, ret, err;

	tap_require(!tlbb_vm_create("lc-rm1") && !tlbb_vm_create("lc-rm2"),
		    "mkdir two VMs");
	err = tlbb_set("lc-rm1", "pid", "%d\n", child);
	err = err ?: tlbb_set("lc-rm1", "ranges", "%p %lu 0\n", region, REGION);
	err = err ?: tlbb_set_mode("lc-rm1", TLBB_MODE_BALANCE);
	tap_ok(!err, "one VM in balance mode");

	ret = syscall(SYS_delete_module, "tlbbalance", O_NONBLOCK);
	err = errno;
	tap_ok(ret < 0, "rmmod with VMs registered fails (%s)",
	       ret < 0 ? strerror(err) : "it succeeded");
	tap_ok(!access("/sys/module/tlbbalance", F_OK) &&
	       tlbb_mode_is("lc-rm1", TLBB_MODE_BALANCE),
	       "the module and its VMs are still there");

	tap_ok(!tlbb_set_mode("lc-rm1", TLBB_MODE_OFF) &&
	       !tlbb_vm_remove("lc-rm1") && !tlbb_vm_remove("lc-rm2"),
	       "mode off, rmdir both VMs");
	reap(child);
	ret = syscall(SYS_delete_module, "tlbbalance", O_NONBLOCK);
	tap_ok(!ret, "rmmod without VMs succeeds (%s)",
	       ret ? strerror(errno) : "ok");
	tap_ok(access(TLBB_CFS_ROOT, F_OK) && errno == ENOENT,
	       "configfs tree gone after rmmod");

	fd = open(MODULE_KO, O_RDONLY | O_CLOEXEC);
	ret = fd < 0 ? -1 : syscall(SYS_finit_module, fd, "allow_inject=1", 0);
	tap_ok(!ret, "module loads again (%s)", ret ? strerror(errno) : "ok");
	if (fd >= 0)
		close(fd);
	tap_ok(file_read(TLBB_CFS_ROOT "/version", buf, sizeof(buf)) > 0,
	       "configfs tree back");
}

int main(void)
{
	long slab0, slab1, vms1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	srand(2);
	region = thp_alloc(REGION, 0, 1);
	thp_fill(region, REGION, 1);
	slab0 = tlbb_slab_active();
	tap_diag("tlbb_vm slab objects at start: %ld", slab0);
	tap_ok(slab0 >= 0, "/proc/slabinfo lists the dedicated tlbb_vm cache");

	test_attributes();
	test_exit();
	test_races();
	test_rmdir_under_load();

	slab1 = tlbb_slab_active();
	vms1 = live_vms();
	tap_ok(slab1 == slab0, "no leak: tlbb_vm slab objects back to %ld (%ld)",
	       slab0, slab1);
	tap_ok(vms1 == 0, "no leak: module counts 0 VM objects (%ld)", vms1);

	test_rmmod();
	return tap_done();
}
