/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Small helpers the in-guest tests share: time, sleep and the module's
 * slab count (the leak check).
 */
#ifndef TLBB_TEST_UTIL_H
#define TLBB_TEST_UTIL_H

#include <sys/types.h>

/* CLOCK_MONOTONIC in seconds. */
double tlbb_now_s(void);
void tlbb_msleep(unsigned int ms);
/* Active tlbb_vm objects, after flushing per-CPU slabs; -1 if absent. */
long tlbb_slab_active(void);
/*
 * A child that only waits to be killed (sharing the caller's mappings: a
 * second process holding a registered VM's memory).
 */
pid_t tlbb_spawn_holder(void);

#endif
