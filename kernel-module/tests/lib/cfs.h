/* SPDX-License-Identifier: GPL-2.0 */
/*
 * configfs/sysfs/debugfs file helpers, and shortcuts for tlbbalance's
 * configfs tree (docs/kernel-module.md, "configfs"):
 * /sys/kernel/config/tlbbalance/vms/<vm>/<attr>.
 *
 * Writes are one write(2) call, as a shell "echo > file" would do, and
 * return 0 or -errno, so tests can assert on the exact errno.
 */
#ifndef TLBB_TEST_CFS_H
#define TLBB_TEST_CFS_H

#include <stddef.h>
#include <stdint.h>

#define TLBB_CFS_ROOT	"/sys/kernel/config/tlbbalance"
#define TLBB_INJECT	"/sys/kernel/debug/tlbbalance/inject"

/* Write exactly len bytes of buf in one write(2); 0 or -errno. */
int file_write_buf(const char *path, const void *buf, size_t len);
/* printf into a file in one write(2); 0 or -errno. */
__attribute__((format(printf, 2, 3)))
int file_printf(const char *path, const char *fmt, ...);
/* Read a whole file, NUL-terminated, newline kept; bytes or -errno. */
long file_read(const char *path, char *buf, size_t size);
/* Read one decimal (or 0x hex) unsigned integer; 0 or -errno (-EINVAL). */
int file_read_u64(const char *path, uint64_t *val);

/* Path of an attribute of a VM, in a static buffer (attr may be NULL). */
const char *tlbb_path(const char *vm, const char *attr);
/* mkdir/rmdir vms/<vm>; 0 or -errno. */
int tlbb_vm_create(const char *vm);
int tlbb_vm_remove(const char *vm);
/* Write one attribute of a VM (one write(2)); 0 or -errno. */
__attribute__((format(printf, 3, 4)))
int tlbb_set(const char *vm, const char *attr, const char *fmt, ...);
/* Read an attribute into buf with the trailing newline removed. */
long tlbb_get(const char *vm, const char *attr, char *buf, size_t size);
/* Read a u64 attribute; aborts the test (tap_bail) when it cannot. */
uint64_t tlbb_get_u64(const char *vm, const char *attr);
/* Find "key value" in vms/<vm>/status; value copied to buf; 0 or -errno. */
int tlbb_status(const char *vm, const char *key, char *buf, size_t size);
/*
 * Fast controller settings for tests: a tick every 20 ms, no sustain time,
 * one sample per decision, floor 0, @step huge pages per step; 0 or -errno.
 */
int tlbb_set_fast(const char *vm, unsigned long step);
/* Injection backend: "<vm> <huge/s> <small/s>"; 0 or -errno. */
int tlbb_inject(const char *vm, uint64_t huge_per_s, uint64_t small_per_s);
int tlbb_inject_off(const char *vm);

#endif
