// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * Runs every TEST() linked in, in name order, each to its first failed
 * assertion. Usage: tlbb_tests [-q] [name-substring]
 *   -q   print only failures and the summary line
 * Output is KTAP (as lib/tap.h of the in-guest tests and tlbsim's check.h):
 * "KTAP version 1", "1..N", "ok N name", "not ok N name"; then
 * "N passed, N failed" (the line CI adds up).  These tests need no
 * capability of the machine, so none is ever skipped.
 */
#include <stdlib.h>
#include <string.h>

#include "test_harness.h"

#define MAX_TESTS 256

static struct tlbb_test tests[MAX_TESTS];
static int nr_tests;
static const char *current;
jmp_buf test_abort;

void test_register(const char *name, void (*fn)(void))
{
	if (nr_tests == MAX_TESTS) {
		fprintf(stderr, "too many tests: raise MAX_TESTS\n");
		exit(2);
	}
	tests[nr_tests].name = name;
	tests[nr_tests].fn = fn;
	nr_tests++;
}

void test_fail(const char *file, int line, const char *cond)
{
	fprintf(stderr, "  %s: %s:%d: assertion failed: %s\n",
		current, file, line, cond);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct tlbb_test *)a)->name,
		      ((const struct tlbb_test *)b)->name);
}

/* 0 if @t passed; its own frame, so longjmp clobbers nothing of main's. */
static int run_one(const struct tlbb_test *t)
{
	current = t->name;
	if (setjmp(test_abort))
		return 1;
	t->fn();
	return 0;
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0, quiet = 0, planned = 0, i;
	const char *filter = NULL;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-q"))
			quiet = 1;
		else
			filter = argv[i];
	}
	qsort(tests, nr_tests, sizeof(tests[0]), by_name);
	for (i = 0; i < nr_tests; i++)
		planned += !filter || strstr(tests[i].name, filter);
	printf("KTAP version 1\n1..%d\n", planned);
	for (i = 0; i < nr_tests; i++) {
		if (filter && !strstr(tests[i].name, filter))
			continue;
		if (!run_one(&tests[i])) {
			passed++;
			if (!quiet)
				printf("ok %d %s\n", passed + failed,
				       tests[i].name);
		} else {
			failed++;
			printf("not ok %d %s\n", passed + failed,
			       tests[i].name);
		}
	}
	if (!planned) {
		printf("no test matched\n");
		return 1;
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
