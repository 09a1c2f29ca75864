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
	call idt_init		/* exceptions reported, not taken through */
	call payload_main	/* the loader's real-mode table */
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

/*
 * CPU exceptions (vectors 0-31, NMI included): each stub makes the same
 * frame (a 0 for the vectors without an error code), then exception(vec,
 * err, eip) prints them as a tlbb-payload error line and halts for good.
 */
#define EXC(n)	.globl exc_##n; exc_##n: pushl $0; pushl $n; jmp exc_common
#define EXC_ERR(n) .globl exc_##n; exc_##n: pushl $n; jmp exc_common
	EXC(0); EXC(1); EXC(2); EXC(3); EXC(4); EXC(5); EXC(6); EXC(7)
	EXC_ERR(8); EXC(9); EXC_ERR(10); EXC_ERR(11); EXC_ERR(12)
	EXC_ERR(13); EXC_ERR(14); EXC(15); EXC(16); EXC_ERR(17); EXC(18)
	EXC(19); EXC(20); EXC_ERR(21); EXC(22); EXC(23); EXC(24); EXC(25)
	EXC(26); EXC(27); EXC(28); EXC_ERR(29); EXC_ERR(30); EXC(31)
exc_common:
	cli
	/* stack: vec, err, eip, cs, eflags: exception(vec, err, eip) */
	call exception
3:	cli
	hlt
	jmp 3b

	.section .rodata
	.align 4
	.globl exc_stubs
exc_stubs:
	.long exc_0, exc_1, exc_2, exc_3, exc_4, exc_5, exc_6, exc_7
	.long exc_8, exc_9, exc_10, exc_11, exc_12, exc_13, exc_14, exc_15
	.long exc_16, exc_17, exc_18, exc_19, exc_20, exc_21, exc_22, exc_23
	.long exc_24, exc_25, exc_26, exc_27, exc_28, exc_29, exc_30, exc_31

	.section .note.GNU-stack, "", @progbits
