// SPDX-License-Identifier: GPL-2.0
/*
 * tlbb-exit <status>: end QEMU with that exit status from inside an arm64
 * guest, as isa-debug-exit does on x86 (guest-init.sh calls it with 33
 * for success, 35 for failure).  Uses the Arm semihosting SYS_EXIT call
 * (AArch64: x0 = 0x18, x1 -> { ADP_Stopped_ApplicationExit, status }),
 * which QEMU honours from user space when started with
 * -semihosting-config enable=on,target=native,userspace=on
 * (run-kernels.sh does).  Without semihosting the call traps and this
 * program dies by SIGILL/SIGTRAP: guest-init.sh then falls back to its
 * own power-off, which run-kernels.sh counts as a failure.
 */
#include <stdio.h>
#include <stdlib.h>

#define SYS_EXIT			0x18
#define ADP_STOPPED_APPLICATION_EXIT	0x20026

int main(int argc, char **argv)
{
#ifdef __aarch64__
	unsigned long block[2];

	if (argc != 2) {
		fprintf(stderr, "usage: tlbb-exit <status>\n");
		return 2;
	}
	block[0] = ADP_STOPPED_APPLICATION_EXIT;
	block[1] = strtoul(argv[1], NULL, 0);
	{
		/* Set right before the call: a call in between clobbers them. */
		register unsigned long x0 asm("x0") = SYS_EXIT;
		register unsigned long x1 asm("x1") = (unsigned long)block;

		asm volatile("hlt #0xf000" : "+r"(x0) : "r"(x1) : "memory");
	}
	fprintf(stderr, "tlbb-exit: semihosting SYS_EXIT returned\n");
#else
	(void)argc;
	(void)argv;
	fprintf(stderr, "tlbb-exit: arm64 only\n");
#endif
	return 1;
}
