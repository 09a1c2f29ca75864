// SPDX-License-Identifier: GPL-2.0
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "tap.h"

static int tap_n, tap_nfail, tap_nskip;

/* "KTAP version 1" once, before the first result line. */
static void tap_header(void)
{
	static bool said;

	if (!said)
		puts("KTAP version 1");
	said = true;
}

static void tap_vline(bool cond, const char *skip, const char *fmt,
		      va_list ap)
{
	tap_header();
	printf("%sok %d ", cond ? "" : "not ", ++tap_n);
	vprintf(fmt, ap);
	if (skip)
		printf(" # SKIP %s", skip);
	putchar('\n');
	fflush(stdout);
	if (!cond)
		tap_nfail++;
}

bool tap_ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vline(cond, NULL, fmt, ap);
	va_end(ap);
	return cond;
}

void tap_skip(const char *reason, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vline(true, reason, fmt, ap);
	va_end(ap);
	tap_nskip++;
}

void tap_diag(const char *fmt, ...)
{
	va_list ap;

	tap_header();
	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

void tap_bail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vline(false, NULL, fmt, ap);
	va_end(ap);
	puts("Bail out!");
	fflush(stdout);
	exit(1);
}

int tap_failed(void)
{
	return tap_nfail;
}

int tap_done(void)
{
	printf("# %d checks, %d failed, %d skipped\n", tap_n, tap_nfail,
	       tap_nskip);
	fflush(stdout);
	return (tap_nfail || !tap_n) ? 1 : 0;
}
