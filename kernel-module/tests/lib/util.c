// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cfs.h"
#include "tap.h"
#include "util.h"

double tlbb_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void tlbb_msleep(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

long tlbb_slab_active(void)
{
	char line[512], name[64];
	long active = -1, n;
	FILE *f;

	file_printf("/sys/kernel/slab/tlbb_vm/shrink", "1\n");
	f = fopen("/proc/slabinfo", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %ld", name, &n) == 2 &&
		    !strcmp(name, "tlbb_vm"))
			active = n;
	fclose(f);
	return active;
}

pid_t tlbb_spawn_holder(void)
{
	pid_t pid = fork();

	tap_require(pid >= 0, "fork: %s", strerror(errno));
	if (!pid) {
		for (;;)
			pause();
	}
	return pid;
}
