/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * A minimal test harness: CHECK() counts, main() of each test file ends
 * with check_done(name).  Output is KTAP (as the in-guest tests' lib/tap.h
 * and the controller core's test_main.c): each test file is one KTAP test,
 * a failed CHECK a "# FAIL" diagnostic naming file, line and values, then
 * "ok 1 <name>" or "not ok 1 <name>", then "<name>: N passed, N failed"
 * (the line CI adds up); the exit status is non-zero on any failure.
 * These tests need no capability of the machine, so none is ever skipped.
 */
#ifndef TLBSIM_CHECK_H
#define TLBSIM_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_pass, check_fail;

/* "KTAP version 1" and the plan, once, before any other line. */
static inline void check_header(void)
{
	static int said;

	if (!said)
		printf("KTAP version 1\n1..1\n");
	said = 1;
}

#define CHECK(cond, ...) do {						\
	if (cond) {							\
		check_pass++;						\
	} else {							\
		check_fail++;						\
		check_header();						\
		printf("# FAIL %s:%d: %s: ", __FILE__, __LINE__,	\
		       #cond);						\
		printf(__VA_ARGS__);					\
		putchar('\n');						\
		fflush(stdout);						\
	}								\
} while (0)

#define CHECK_EQ(a, b) do {						\
	unsigned long long _a = (unsigned long long)(a);		\
	unsigned long long _b = (unsigned long long)(b);		\
	CHECK(_a == _b, "%s = %llu, expected %llu", #a, _a, _b);	\
} while (0)

static inline int check_done(const char *name)
{
	check_header();
	printf("%sok 1 %s\n", check_fail || !check_pass ? "not " : "", name);
	printf("%s: %d passed, %d failed\n", name, check_pass, check_fail);
	return check_fail || !check_pass ? 1 : 0;
}

#endif /* TLBSIM_CHECK_H */
