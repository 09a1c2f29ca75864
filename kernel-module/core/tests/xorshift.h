/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/* xorshift64: the one small PRNG of the core's tests and benchmark. */
#ifndef TLBB_XORSHIFT_H
#define TLBB_XORSHIFT_H

#include "../tlbb_types.h"

static inline u64 xorshift64(u64 *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

#endif
