/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * A tiny test harness in the style of the KVM selftests: TEST(name) defines
 * a test, TEST_ASSERT(cond, fmt, ...) fails it with a message naming the
 * file, line and values. The runner (test_main.c) prints one line per test
 * and a final "N passed, N failed", and exits non-zero on any failure.
 */
#ifndef TLBB_TEST_HARNESS_H
#define TLBB_TEST_HARNESS_H

#include <setjmp.h>
#include <stdio.h>

struct tlbb_test {
	const char *name;
	void (*fn)(void);
};

void test_register(const char *name, void (*fn)(void));
void test_fail(const char *file, int line, const char *cond);
extern jmp_buf test_abort;

#define TEST(name)							\
	static void name(void);						\
	static void __attribute__((constructor)) name##_register(void)	\
	{								\
		test_register(#name, name);				\
	}								\
	static void name(void)

#define TEST_ASSERT(cond, fmt, ...)					\
	do {								\
		if (!(cond)) {						\
			test_fail(__FILE__, __LINE__, #cond);		\
			fprintf(stderr, "    " fmt "\n",		\
				##__VA_ARGS__);				\
			longjmp(test_abort, 1);				\
		}							\
	} while (0)

/* Equality of two unsigned values, printing both. */
#define TEST_ASSERT_EQ(a, b)						\
	TEST_ASSERT((a) == (b), "%s = %llu, %s = %llu",			\
		    #a, (unsigned long long)(a),			\
		    #b, (unsigned long long)(b))

#endif /* TLBB_TEST_HARNESS_H */
