// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include <grp.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>

#include "priv.h"

int priv_drop_sys_admin(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[0].effective &= ~(1U << CAP_SYS_ADMIN);
	return syscall(SYS_capset, &h, d) ? -1 : 0;
}

int priv_become_nobody(void)
{
	if (setgroups(0, NULL) || setgid(NOBODY_ID) || setuid(NOBODY_ID))
		return -1;
	return 0;
}
