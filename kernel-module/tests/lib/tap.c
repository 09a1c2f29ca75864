// SPDX-License-Identifier: GPL-2.0
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "tap.h"

static int tap_n, tap_nfail;

static void tap_vline(bool cond, const char *fmt, va_list ap)
{
	printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
	if (!cond)
		tap_nfail++;
}

bool tap_ok(bool cond, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vline(cond, fmt, ap);
	va_end(ap);
	return cond;
}

void tap_diag(const char *fmt, ...)
{
	va_list ap;

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
	tap_vline(false, fmt, ap);
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
	printf("# %d checks, %d failed\n", tap_n, tap_nfail);
	fflush(stdout);
	return (tap_nfail || !tap_n) ? 1 : 0;
}
