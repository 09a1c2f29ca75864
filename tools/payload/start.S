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

	.section .rodata
	.align 8
gdt:
	.quad 0				/* null */
	.quad 0x00cf9a000000ffff	/* 0x08: flat 32-bit code */
	.quad 0x00cf92000000ffff	/* 0x10: flat 32-bit data */
gdt_end:
gdt_ptr:
	.word gdt_end - gdt - 1
	.long gdt

	.section .text
	.globl _start
_start:
	cli
	/* Our own GDT: the multiboot loader's may be anywhere (or gone). */
	lgdt gdt_ptr
	ljmp $0x08, $1f
1:	movw $0x10, %cx
	movw %cx, %ds
	movw %cx, %es
	movw %cx, %ss
	movw %cx, %fs
	movw %cx, %gs
	movl $stack_top, %esp
	pushl $0
	popf
	pushl %ebx		/* multiboot info */
	pushl %eax		/* boot loader magic */
	call payload_main
2:	cli
	hlt
	jmp 2b

/*
 * Interrupt handlers for the PIC's IRQs (vectors 0x20-0x2f): count timer
 * ticks, acknowledge, return. Used to sleep with hlt between passes.
 */
	.globl irq_master, irq_slave
irq_master:
	pushl %eax
	incl ticks
	movb $0x20, %al
	outb %al, $0x20
	popl %eax
	iret
irq_slave:
	pushl %eax
	movb $0x20, %al
	outb %al, $0xa0
	outb %al, $0x20
	popl %eax
	iret
	.section .note.GNU-stack, "", @progbits
