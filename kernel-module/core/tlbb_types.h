/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * Fixed-width types for the pure core: the kernel's own when built into the
 * module, <stdint.h> otherwise. The core includes nothing else.
 */
#ifndef TLBB_TYPES_H
#define TLBB_TYPES_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
typedef uint64_t u64;
typedef uint32_t u32;
typedef uint8_t u8;
typedef int64_t s64;
#endif

#endif /* TLBB_TYPES_H */
