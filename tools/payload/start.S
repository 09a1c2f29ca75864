/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Entry of the tiny guest payload: a multiboot (v1) header, a stack and a
 * jump to payload_main(). QEMU's -kernel (and libvirt's <os><kernel>) loads
 * a multiboot ELF32 directly and enters it in 32-bit protected mode with
 * paging off, EAX = 0x2BADB002 and EBX = the multiboot information.
 */
#define MB_MAGIC	0x1BADB002
#define MB_FLAGS	0x00000003	/* page-align modules, want mem info */

	.section .multiboot, "a"
	.align 4
	.long MB_MAGIC
	.long MB_FLAGS
	.long -(MB_MAGIC + MB_FLAGS)

	.section .bss
	.align 16
stack_bottom:
	.skip 16384
stack_top:

	.section .text
	.globl _start
_start:
	cli
	movl $stack_top, %esp
	pushl $0
	popf
	pushl %ebx		/* multiboot info */
	pushl %eax		/* boot loader magic */
	call payload_main
1:	cli
	hlt
	jmp 1b
	.section .note.GNU-stack, "", @progbits
