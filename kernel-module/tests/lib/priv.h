/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Running parts of a test with less privilege (call in a forked child).
 */
#ifndef TLBB_TEST_PRIV_H
#define TLBB_TEST_PRIV_H

#define NOBODY_ID	65534

/* Stay uid 0 but drop CAP_SYS_ADMIN from the effective set; 0 or -1. */
int priv_drop_sys_admin(void);
/* Become user and group nobody (65534), no supplementary groups; 0 or -1. */
int priv_become_nobody(void);

#endif
