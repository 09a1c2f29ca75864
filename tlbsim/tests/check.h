/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * A minimal test harness: CHECK() counts, main() of each test file ends
 * with check_done(), which prints "<name>: N passed, N failed" and returns
 * the exit status (non-zero on any failure).
 */
#ifndef TLBSIM_CHECK_H
#define TLBSIM_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_pass, check_fail;

#define CHECK(cond, ...) do {						\
	if (cond) {							\
		check_pass++;						\
	} else {							\
		check_fail++;						\
		fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__,	\
			#cond);						\
		fprintf(stderr, __VA_ARGS__);				\
		fputc('\n', stderr);					\
	}								\
} while (0)

#define CHECK_EQ(a, b) do {						\
	unsigned long long _a = (unsigned long long)(a);		\
	unsigned long long _b = (unsigned long long)(b);		\
	CHECK(_a == _b, "%s = %llu, expected %llu", #a, _a, _b);	\
} while (0)

static inline int check_done(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, check_pass, check_fail);
	return check_fail ? 1 : 0;
}

#endif /* TLBSIM_CHECK_H */
