// SPDX-License-Identifier: GPL-2.0
/*
 * t_badinput: every attribute given malformed, out-of-range, overflowing and
 * hostile values. Each write must fail with the errno
 * docs/kernel-module.md names and change nothing: the VM's status, ranges
 * and vcpu_tids are compared before and after every write (an empty,
 * zero-byte write never reaches the module: configfs itself answers it,
 * EFAULT on 6.x and a zero-byte success on 5.10). Then 10 000
 * random writes: each either succeeds or fails without any change. The
 * enumerated tunables by name and number (tlbb_choices.def) sit here too,
 * beside their refused spellings.
 *
 * tlbb-test-timeout: 400
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cfs.h"
#include "priv.h"
#include "tap.h"
#include "tlbb_defs.h"
#include "util.h"
#include "thp.h"

#define VM		"bad"
#define REGION		(4UL << 20)
#define RANDOM_WRITES	10000

static char *region, *hole;
static pid_t child;
static char snap0[32768];

static void snapshot(char *buf, size_t size)
{
	long n = 0, m;

	m = file_read(tlbb_path(VM, "status"), buf, size);
	n = m > 0 ? m : 0;
	m = file_read(tlbb_path(VM, "ranges"), buf + n, size - n);
	n += m > 0 ? m : 0;
	m = file_read(tlbb_path(VM, "vcpu_tids"), buf + n, size - n);
	n += m > 0 ? m : 0;
	file_read(tlbb_path(VM, "heat"), buf + n, size - n);
}

/* Write buf (len bytes) to attr: must fail with want and change nothing. */
static int bad_buf(const char *attr, const void *buf, size_t len, int want,
		   const char *what)
{
	static char after[32768];
	int err = file_write_buf(tlbb_path(VM, attr), buf, len);

	snapshot(after, sizeof(after));
	/* configfs answers an empty write itself: EFAULT, or 0 on 5.10 */
	if ((err == -want || (!len && want == EFAULT && !err)) &&
	    !strcmp(after, snap0))
		return 0;
	tap_diag("%s <- %s: got %s, want %s%s", attr, what,
		 err ? strerror(-err) : "success", strerror(want),
		 strcmp(after, snap0) ? ", and the VM changed" : "");
	return 1;
}

static int bad(const char *attr, const char *val, int want)
{
	return bad_buf(attr, val, strlen(val), want, val);
}

static void *thread_fn(void *arg)
{
	*(pid_t *)arg = gettid();
	pause();
	return NULL;
}

static void test_pid(void)
{
	char buf[64];
	pid_t dead, tid = 0;
	pthread_t th;
	int n = 0;

	dead = fork();
	if (!dead)
		_exit(0);
	waitpid(dead, NULL, 0);
	pthread_create(&th, NULL, thread_fn, &tid);
	while (!__atomic_load_n(&tid, __ATOMIC_SEQ_CST))
		usleep(1000);

	n += bad("pid", "", EFAULT);		/* configfs: empty write */
	n += bad("pid", "\n", EINVAL);
	n += bad("pid", "abc", EINVAL);
	n += bad("pid", "-1", EINVAL);
	n += bad("pid", "12abc", EINVAL);
	n += bad("pid", "0x10", EINVAL);
	n += bad("pid", "-0", EINVAL);		/* a sign: not a detach */
	n += bad("pid", "+0", EINVAL);
	snprintf(buf, sizeof(buf), "+%d", child);
	n += bad("pid", buf, EINVAL);		/* a sign, even on the same pid */
	n += bad("pid", " 5", EINVAL);
	n += bad("pid", "99999999999", ERANGE);
	n += bad("pid", "4194304", ESRCH);		/* above pid_max */
	snprintf(buf, sizeof(buf), "%d", dead);
	n += bad("pid", buf, ESRCH);			/* exited, reaped */
	n += bad("pid", "2", EINVAL);			/* kthreadd */
	snprintf(buf, sizeof(buf), "%d", tid);
	n += bad("pid", buf, EINVAL);			/* a thread, not a process */
	n += bad_buf("pid", "1\0" "2", 3, EINVAL, "1\\0 2 (embedded NUL)");
	tap_ok(!n, "pid: malformed, overflowing, nonexistent, kernel thread and thread ids refused, nothing changed");
}

static void test_vcpus(void)
{
	/* one more "1 " than TLBB_MAX_VCPUS, or a page of digits */
	static char buf[2 * (TLBB_MAX_VCPUS + 1) + 4096];
	int n = 0, i, off = 0;

	n += bad("vcpu_tids", "abc", EINVAL);
	n += bad("vcpu_tids", "0", EINVAL);
	n += bad("vcpu_tids", "-5", EINVAL);
	n += bad("vcpu_tids", "-0", EINVAL);
	snprintf(buf, sizeof(buf), "++%d", child);
	n += bad("vcpu_tids", buf, EINVAL);	/* append, then a sign */
	snprintf(buf, sizeof(buf), "0x%x", child);
	n += bad("vcpu_tids", buf, EINVAL);
	n += bad("vcpu_tids", "99999999999", ERANGE);
	n += bad("vcpu_tids", "1", ESRCH);		/* init: not a thread of it */
	snprintf(buf, sizeof(buf), "%d", getpid());
	n += bad("vcpu_tids", buf, ESRCH);		/* another process */
	snprintf(buf, sizeof(buf), "%d %d", child, child);
	n += bad("vcpu_tids", buf, EINVAL);		/* listed twice */
	for (i = 0; i < TLBB_MAX_VCPUS + 1; i++)
		off += snprintf(buf + off, sizeof(buf) - off, "1 ");
	n += bad("vcpu_tids", buf, ERANGE);	/* more than TLBB_MAX_VCPUS */
	memset(buf, '1', 4096);
	n += bad_buf("vcpu_tids", buf, 4096, ERANGE, "4096 digits");
	tap_ok(!n, "vcpu_tids: malformed, foreign, duplicate and too many refused, nothing changed");
}

static void test_ranges(void)
{
	/* room for TLBB_MAX_RANGES + 1 lines of "0x<addr> 4096 0x<gpa>" */
	static char buf[(TLBB_MAX_RANGES + 1) * 48 + 256];
	unsigned long r = (unsigned long)region;
	int n = 0, i, off = 0;

#define RNG(fmt, ...) (snprintf(buf, sizeof(buf), fmt, __VA_ARGS__), buf)
	n += bad("ranges", "abc", EINVAL);
	n += bad("ranges", RNG("0x%lx", r), EINVAL);		/* one field */
	n += bad("ranges", RNG("0x%lx 0x1000", r), EINVAL);	/* two */
	n += bad("ranges", RNG("0x%lx 0x1000 0 7", r), EINVAL);	/* four */
	n += bad("ranges", RNG("0x%lx 0x1000 0", r + 1), EINVAL); /* unaligned */
	n += bad("ranges", RNG("0x%lx 0x1001 0", r), EINVAL);
	n += bad("ranges", RNG("0x%lx 0x1000 0x1", r), EINVAL);
	n += bad("ranges", RNG("0x%lx 0 0", r), EINVAL);	/* empty */
	n += bad("ranges", RNG("-0x%lx 0x1000 0", r), EINVAL);
	n += bad("ranges", RNG("+%lu 4096 0", r), EINVAL);
	n += bad("ranges", "0x 0x1000 0", EINVAL);
	/* a second prefix or a sign inside a number */
	n += bad("ranges", RNG("0x0x%lx 0x%lx 0", r, REGION), EINVAL);
	n += bad("ranges", RNG("0x%lx 0x0x%lx 0", r, REGION), EINVAL);
	n += bad("ranges", RNG("0x+%lx 0x%lx 0", r, REGION), EINVAL);
	n += bad("ranges", RNG("0x%lx 0x+%lx 0", r, REGION), EINVAL);
	n += bad("ranges", RNG("0x%lx 0x%lx 0x+0", r, REGION), EINVAL);
	n += bad("ranges", RNG("0X0X%lx 0x%lx 0", r, REGION), EINVAL);
	n += bad("ranges", RNG("0x%lx +%lu 0", r, REGION), EINVAL);
	n += bad("ranges", RNG("0x%lx 0x%lx -0", r, REGION), EINVAL);
	n += bad("ranges", "0xfffffffffffff000 0x2000 0", ERANGE); /* wraps */
	n += bad("ranges", RNG("0x%lx 0x1000 0xfffffffffffff000", r), ERANGE);
	n += bad("ranges", "0x1ffffffffffffffff 0x1000 0", ERANGE);
	n += bad("ranges", "99999999999999999999 4096 0", ERANGE);
	n += bad("ranges", "0xffff888000000000 0x200000 0", EFAULT);
	n += bad("ranges", "0xffffffff81000000 0x1000 0", EFAULT);
	n += bad("ranges", "0x10000 0x1000 0", EFAULT);	/* unmapped */
	n += bad("ranges", RNG("0x%lx 0x200000 0", (unsigned long)hole),
		 EFAULT);
	n += bad("ranges", RNG("0x%lx 0x%lx 0", r, REGION + 0x200000),
		 EFAULT);				/* runs into the hole */
	n += bad("ranges", RNG("0x%lx 0x200000 0\n0x%lx 0x200000 0x40000000",
			       r, r + 0x100000), EINVAL);	/* overlap */
	n += bad("ranges", RNG("0x%lx 0x100000 0\n0x%lx 0x100000 0x80000",
			       r, r + 0x100000), EINVAL);	/* gpa overlap */
	for (i = 0; i < TLBB_MAX_RANGES + 1; i++)
		off += snprintf(buf + off, sizeof(buf) - off, "0x%lx 4096 0x%x\n",
				r + i * 4096UL, i * 4096);
	n += bad("ranges", buf, ERANGE);	/* one over TLBB_MAX_RANGES */
	n += bad_buf("ranges", RNG("0x%lx 4096 0", r), strlen(buf) + 1,
		     EINVAL, "NUL-terminated");
#undef RNG
	tap_ok(!n, "ranges: malformed, unaligned, wrapping, kernel, unmapped, overlapping and too many refused, nothing changed");
}

/*
 * heat: "<hva> <length> <heat>" lines, heat decimal 0..255, every line
 * on a huge-page slot of the ranges, all lines checked before any applies.
 */
static void test_heat(void)
{
	unsigned long r = (unsigned long)region;
	char buf[4096];
	size_t off = 0;
	int n = 0, i;

#define RNG(...) ({ static char b[256]; snprintf(b, sizeof(b), __VA_ARGS__); b; })
	n += bad("heat", "abc", EINVAL);
	n += bad("heat", "sampledx", EINVAL);
	n += bad("heat", RNG("0x%lx", r), EINVAL);		/* one field */
	n += bad("heat", RNG("0x%lx 0x%lx", r, REGION), EINVAL);	/* two */
	n += bad("heat", RNG("0x%lx 0x%lx 1 2", r, REGION), EINVAL); /* four */
	n += bad("heat", RNG("0x%lx 0 1", r), EINVAL);		/* empty */
	n += bad("heat", RNG("0x%lx 0x%lx 0x10", r, REGION), EINVAL); /* hex */
	n += bad("heat", RNG("0x%lx 0x%lx -1", r, REGION), EINVAL);
	n += bad("heat", RNG("0x%lx 0x%lx 256", r, REGION), ERANGE);
	n += bad("heat", RNG("0x%lx 0x%lx 99999999999999999999", r, REGION),
		 ERANGE);
	n += bad("heat", "0xfffffffffffff000 0x2000 1", ERANGE);	/* wraps */
	n += bad("heat", "0xffff888000000000 0x200000 1", ERANGE); /* kernel */
	n += bad("heat", "0x10000 0x1000 1", ERANGE);	/* no slot of ours */
	n += bad("heat", RNG("0x%lx 0x200000 1", (unsigned long)hole),
		 ERANGE);
	/* a good line first: nothing of it may be applied */
	n += bad("heat", RNG("0x%lx 0x%lx 7\n0x10000 0x1000 1", r, REGION),
		 ERANGE);
	n += bad("heat", RNG("0x%lx 0x%lx 7\nabc", r, REGION), EINVAL);
	for (i = 0; i < 4096 / 12 + 1; i++)
		off += snprintf(buf + off, sizeof(buf) - off, "0x1 1 1\n");
	n += bad("heat", buf, ERANGE);	/* one over the lines a write holds */
	n += bad_buf("heat", RNG("0x%lx 0x%lx 7", r, REGION),
		     strlen(RNG("0x%lx 0x%lx 7", r, REGION)) + 1, EINVAL,
		     "NUL-terminated");
#undef RNG
	tap_ok(!n, "heat: malformed, out-of-range, outside the ranges and too many lines refused, nothing changed");
}

static void test_mode(void)
{
	char buf[64], *c;
	int n = 0, m;

	n += bad("mode", "", EFAULT);
	n += bad("mode", "\n", EINVAL);
	/* each name of tlbb_modes.def lengthened, upper-cased, followed */
	for (m = 0; m < TLBB_MODE_COUNT; m++) {
		const char *name = tlbb_mode_names[m];

		snprintf(buf, sizeof(buf), "%sd", name);
		n += bad("mode", buf, EINVAL);
		snprintf(buf, sizeof(buf), "%s", name);
		for (c = buf; *c; c++)
			*c = *c >= 'a' && *c <= 'z' ? *c - 'a' + 'A' : *c;
		n += bad("mode", buf, EINVAL);
		snprintf(buf, sizeof(buf), "%s extra", name);
		n += bad("mode", buf, EINVAL);
		n += bad_buf("mode", name, strlen(name) + 1, EINVAL,
			     "a name and its NUL");
	}
	tap_ok(!n, "mode: unknown values refused, nothing changed");
}

/* pid, vcpu_tids and ranges are frozen while the VM is monitored. */
static void test_busy(void)
{
	char buf[128];
	int n = 0;

	tap_require(!tlbb_set_mode(VM, TLBB_MODE_MONITOR), "mode monitor");
	snapshot(snap0, sizeof(snap0));
	/* stats move while monitoring: compare the frozen fields only */
	snprintf(buf, sizeof(buf), "%d", getpid());
	n += tlbb_set(VM, "pid", "%s", buf) != -EBUSY;
	n += tlbb_set(VM, "vcpu_tids", "%d", child) != -EBUSY;
	n += tlbb_set(VM, "ranges", "%p 4096 0", region) != -EBUSY;
	n += tlbb_set(VM, "ranges", "\n") != -EBUSY;
	n += tlbb_get_u64(VM, "pid") != (uint64_t)child;
	tap_ok(!n, "pid, vcpu_tids, ranges refused with EBUSY while monitoring");
	tap_require(!tlbb_set_mode(VM, TLBB_MODE_OFF), "mode off");
	snapshot(snap0, sizeof(snap0));
}

static void test_params(void)
{
	char buf[64];
	int n = 0;

#define TLBB_PARAM(name, def, min, max, unit, help)			\
	if ((uint64_t)(min) > 0) {					\
		snprintf(buf, sizeof(buf), "%llu",			\
			 (unsigned long long)(min) - 1);		\
		n += bad(#name, buf, ERANGE);				\
	}								\
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)(max) + 1); \
	n += bad(#name, buf, ERANGE);					\
	n += bad(#name, "18446744073709551616", ERANGE);		\
	n += bad(#name, "99999999999999999999999", ERANGE);		\
	n += bad(#name, "abc", EINVAL);					\
	n += bad(#name, "", EFAULT);					\
	n += bad(#name, "\n", EINVAL);					\
	n += bad(#name, "-1", EINVAL);					\
	n += bad(#name, "+5", EINVAL);					\
	n += bad(#name, "-0", EINVAL);					\
	n += bad(#name, "0x0x5", EINVAL);				\
	n += bad(#name, "0x10", EINVAL);				\
	n += bad(#name, "5 6", EINVAL);					\
	n += bad(#name, " 5", EINVAL);
#include "tlbb_params.def"
#undef TLBB_PARAM
	tap_ok(!n, "every parameter: below min, above max, overflow, malformed refused, nothing changed");
}

/*
 * The enumerated tunables (split_order, method) by name and by number
 * (tlbb_choices.def): each name is taken and reads back as its number, the
 * number is still taken (clients of earlier releases write it), and a name
 * of another tunable, a prefix, another case or a padded name is refused
 * with EINVAL, nothing changed.
 */
static void test_choices(void)
{
	int n = 0, named = 0, err;

#define TLBB_CHOICE(param, id, value, name, help)			\
	named++;							\
	err = tlbb_set(VM, #param, "%s\n", name);			\
	if (err || tlbb_get_u64(VM, #param) != (value)) {		\
		tap_diag("%s <- %s: %s, reads %llu", #param, name,	\
			 strerror(-err), (unsigned long long)		\
			 tlbb_get_u64(VM, #param));			\
		n++;							\
	}								\
	err = tlbb_set(VM, #param, "%s", name);	/* no newline */	\
	n += err || tlbb_get_u64(VM, #param) != (value);		\
	err = tlbb_set(VM, #param, "%d\n", (value));			\
	n += err || tlbb_get_u64(VM, #param) != (value);
#include "tlbb_choices.def"
#undef TLBB_CHOICE
	tap_ok(!n && named >= 6,
	       "split_order and method: each of %d names taken, read back as its number; the number taken too",
	       named);

	n = 0;
	tap_require(!tlbb_set(VM, "split_order", "0\n") &&
		    !tlbb_set(VM, "method", "0\n"), "split_order, method 0");
	snapshot(snap0, sizeof(snap0));
	n += bad("split_order", "hill", EINVAL);
	n += bad("method", "heat\n", EINVAL);
	n += bad("method", "hil", EINVAL);
	n += bad("method", "hills", EINVAL);
	n += bad("method", "Hill", EINVAL);
	n += bad("method", " hill", EINVAL);
	n += bad("method", "hill\n\n", EINVAL);
	n += bad("samples", "paper", EINVAL);
	tap_ok(!n, "a name of another tunable, a prefix, an extension, another case or padding refused, nothing changed");
}

static void test_readonly(void)
{
	int n = 0, err;

#define TLBB_STAT(name, kind, type, unit, help)				\
	err = tlbb_set(VM, #name, "1\n");				\
	if (!err) {							\
		tap_diag("write to read-only %s succeeded", #name);	\
		n++;							\
	}
#include "tlbb_stats.def"
#undef TLBB_STAT
	n += !tlbb_set(VM, "status", "1\n");
	n += !file_printf(TLBB_CFS_ROOT "/version", "2\n");
	tap_ok(!n, "read-only attributes refuse writes");
}

static void test_names(void)
{
	char name[TLBB_NAME_MAX + 2];
	int n = 0;

	n += tlbb_vm_create("bad!name") != -EINVAL;
	n += tlbb_vm_create("a b") != -EINVAL;
	n += tlbb_vm_create("a\tb") != -EINVAL;
	memset(name, 'x', TLBB_NAME_MAX + 1);
	name[TLBB_NAME_MAX + 1] = '\0';
	n += tlbb_vm_create(name) != -EINVAL;
	n += tlbb_vm_create(VM) != -EEXIST;
	name[TLBB_NAME_MAX] = '\0';
	n += tlbb_vm_create(name) != 0 || tlbb_vm_remove(name) != 0;
	tap_ok(!n, "VM names outside [A-Za-z0-9._-]{1,%d} refused",
	       TLBB_NAME_MAX);
}

static void test_inject(void)
{
	static char after[32768];
	int n = 0;

#define BADINJ(s, want) do {						\
	int e = file_printf(TLBB_INJECT, "%s", s);			\
	if (e != -(want)) {						\
		tap_diag("inject <- '%s': %s", s, strerror(-e));	\
		n++;							\
	}								\
} while (0)
	BADINJ("", EINVAL);
	BADINJ(VM, EINVAL);
	BADINJ(VM " 1", EINVAL);
	BADINJ(VM " 1 2 3", EINVAL);
	BADINJ(VM " x y", EINVAL);
	BADINJ(VM " -1 2", EINVAL);
	BADINJ(VM " +5 2", EINVAL);		/* a sign inside a number */
	BADINJ(VM " 5 +2", EINVAL);
	BADINJ(VM " -0 2", EINVAL);
	BADINJ(VM " 0x10 2", EINVAL);
	BADINJ(VM " off 2", EINVAL);
	BADINJ("nosuchvm 1 2", ENOENT);
	BADINJ(VM " 99999999999999999999 1", ERANGE);
	BADINJ(VM " 1000000000001 1", ERANGE);
#undef BADINJ
	snapshot(after, sizeof(after));
	tap_ok(!n && !strcmp(after, snap0),
	       "inject: malformed lines, unknown VM, huge rates refused");
}

static void test_capability(void)
{
	pid_t p = fork();
	int status;

	if (!p) {
		int n = 0;

		if (priv_drop_sys_admin())
			_exit(99);
		n += tlbb_set(VM, "pid", "%d\n", getpid()) != -EPERM;
		n += tlbb_set(VM, "samples", "5\n") != -EPERM;
		n += tlbb_set(VM, "heat", "sampled\n") != -EPERM;
		n += tlbb_set_mode(VM, TLBB_MODE_MONITOR) != -EPERM;
		n += tlbb_vm_create("nocap") != -EPERM;
		n += tlbb_inject(VM, 1, 1) != -EPERM;
		_exit(n);
	}
	waitpid(p, &status, 0);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "without CAP_SYS_ADMIN: writes, mkdir and inject get EPERM (%d)",
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/*
 * A pid that is not ours to name: from inside a new pid namespace the
 * registered process is invisible. Writing its (host) number is ESRCH, and
 * the pid attribute reads 0 there.
 */
static void test_pidns(void)
{
	pid_t p = fork();
	int status;

	if (!p) {
		pid_t gc;

		if (unshare(CLONE_NEWPID))
			_exit(98);
		gc = fork();
		if (!gc) {
			int n = 0;

			n += tlbb_set(VM, "pid", "%d\n", child) != -ESRCH;
			n += tlbb_get_u64(VM, "pid") != 0;
			_exit(n);
		}
		waitpid(gc, &status, 0);
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 97);
	}
	waitpid(p, &status, 0);
	tap_ok(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
	       !bad("pid", "\n", EINVAL),
	       "from another pid namespace: the process is invisible (ESRCH, pid reads 0), nothing changed (%d)",
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* 10 000 random writes: success, or failure with no change at all. */
static void test_random(void)
{
	static const char *attrs[] = {
		"pid", "vcpu_tids", "ranges", "mode",
#define TLBB_PARAM(name, def, min, max, unit, help) #name,
#include "tlbb_params.def"
#undef TLBB_PARAM
	};
	static const char alpha[] = "0123456789abcdefx0x -+\n\t,\xff\x01\0";
	static char before[32768], after[32768];
	unsigned int seed = 12345;
	int i, changed_on_error = 0, ok = 0, failed = 0, crashed = 0;

	snapshot(before, sizeof(before));
	for (i = 0; i < RANDOM_WRITES; i++) {
		const char *attr = attrs[rand_r(&seed) % (sizeof(attrs) /
							  sizeof(attrs[0]))];
		char val[64];
		size_t len = rand_r(&seed) % 40, j;
		int err;

		for (j = 0; j < len; j++)
			val[j] = alpha[rand_r(&seed) % (sizeof(alpha) - 1)];
		err = file_write_buf(tlbb_path(VM, attr), val, len);
		if (err == -ENOENT || err == -ENOTCONN) {
			crashed++;
			continue;
		}
		snapshot(after, sizeof(after));
		if (err) {
			failed++;
			if (strcmp(before, after)) {
				changed_on_error++;
				if (changed_on_error < 5)
					tap_diag("failed write to %s changed the VM (%s)",
						 attr, strerror(-err));
			}
		} else {
			ok++;
			memcpy(before, after, sizeof(before));
		}
	}
	tap_diag("%d random writes: %d accepted, %d refused", RANDOM_WRITES,
		 ok, failed);
	tap_ok(!crashed && !changed_on_error,
	       "%d random writes: every refused write left the VM unchanged",
	       RANDOM_WRITES);
	tlbb_set_mode(VM, TLBB_MODE_OFF);
}

int main(void)
{
	char *area;
	int err;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* a 4 MiB mapping with a guaranteed 2 MiB hole right after it */
	area = mmap(NULL, 6UL << 20, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	tap_require(area != MAP_FAILED, "mmap");
	munmap(area + (4UL << 20), 2UL << 20);
	hole = area + (4UL << 20);
	region = area;
	child = tlbb_spawn_holder();

	tap_require(!tlbb_vm_create(VM), "mkdir vms/" VM);
	err = tlbb_set(VM, "pid", "%d\n", child);
	err = err ?: tlbb_set(VM, "vcpu_tids", "%d\n", child);
	err = err ?: tlbb_set(VM, "ranges", "%p 0x%lx 0\n", region, REGION);
	tap_require(!err, "set up a valid VM: %s", strerror(-err));
	snapshot(snap0, sizeof(snap0));

	test_pid();
	test_vcpus();
	test_ranges();
	test_heat();
	test_mode();
	test_params();
	test_choices();
	test_readonly();
	test_names();
	test_inject();
	test_capability();
	test_pidns();
	test_busy();
	test_random();

	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	tap_ok(!tlbb_vm_remove(VM), "rmdir vms/" VM);
	return tap_done();
}
