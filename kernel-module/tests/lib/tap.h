/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A tiny KTAP printer for the in-guest tests (the format of the kernel's
 * own selftests, Documentation/dev-tools/ktap.rst; the controller core's
 * unit tests and tlbsim's print it too).
 *
 * "KTAP version 1" first, then every check prints one line, "ok N what" or
 * "not ok N what"; a check that needs a capability the machine lacks (no
 * hardware PMU, no /dev/kvm) is "ok N what # SKIP why", which the harness
 * (check-log.py) counts and lists as a skip, never as a pass.  Diagnostics
 * start with "# ".  main() ends with "return tap_done();": exit status 0
 * only when no check failed and at least one ran.
 */
#ifndef TLBB_TEST_TAP_H
#define TLBB_TEST_TAP_H

#include <stdbool.h>

__attribute__((format(printf, 2, 3)))
bool tap_ok(bool cond, const char *fmt, ...);
/* "ok N <what> # SKIP <reason>": <what> cannot be checked here. */
__attribute__((format(printf, 2, 3)))
void tap_skip(const char *reason, const char *fmt, ...);
__attribute__((format(printf, 1, 2)))
void tap_diag(const char *fmt, ...);
/* Print "not ok N - <reason>" and "Bail out!", then exit(1). */
__attribute__((format(printf, 1, 2), noreturn))
void tap_bail(const char *fmt, ...);
/* Bail out if cond is false: for setup steps later checks depend on. */
#define tap_require(cond, ...) \
	do { if (!(cond)) tap_bail(__VA_ARGS__); } while (0)
int tap_failed(void);
int tap_done(void);

#endif
