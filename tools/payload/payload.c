// SPDX-License-Identifier: Apache-2.0
/*
 * A tiny guest that touches its RAM and keeps touching it.
 *
 * Booted as a multiboot ELF32 by a libvirt type='kvm' domain inside the
 * compute node, it runs with paging off, so every guest-physical page it
 * writes is a real stage-2 (NPT) mapping in the node's KVM. It writes a
 * signature into every 4 KiB page of [start, end of RAM), then sweeps the
 * pages again and again in the chosen pattern, checking each signature, and
 * reports on COM1:
 *
 *   tlbb-payload: ready mem_mb=256 start=0x400000 end=0x10000000 pages=64512 pattern=seq
 *   tlbb-payload: pass=16 touches=1032192 errors=0
 *
 * Command line (libvirt <cmdline>), all optional, space separated:
 *   pattern=seq|random|once   sweep in order, touch random pages, or touch
 *                             every page once and halt (default seq)
 *   start_mb=N                first MiB touched (default 4, at least above
 *                             the payload itself)
 *   size_mb=N                 touch at most N MiB (default: all RAM)
 *   report=N                  print a progress line every N passes
 *                             (default 8)
 *   pause_ms=N                sleep N ms (hlt, PIT timer at 100 Hz)
 *                             after each pass, so an idle node CPU is
 *                             left to the node (default 100; 0: spin)
 *   fault=ud                  execute an invalid opcode after the ready
 *                             line (the exception report's own test)
 *
 * A CPU exception (NMI included) prints
 *   tlbb-payload: error: exception vector=6 error_code=0x0 eip=0x100abc
 * and halts the guest for good.
 */
#include <stdint.h>

#define COM1		0x3f8
#define MB_BOOT_MAGIC	0x2BADB002u
#define PAGE		4096u
#define MIB		(1024u * 1024u)

struct mb_info {
	uint32_t flags;
	uint32_t mem_lower;
	uint32_t mem_upper;
	uint32_t boot_device;
	uint32_t cmdline;
};

extern char _end[];
extern void irq_master(void);
extern void irq_slave(void);
volatile uint32_t ticks;

#define PIT_HZ		100

static inline void outb(uint16_t port, uint8_t val)
{
	__asm__ volatile("outb %0, %1" : : "a"(val), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t val;

	__asm__ volatile("inb %1, %0" : "=a"(val) : "Nd"(port));
	return val;
}

static void serial_init(void)
{
	outb(COM1 + 1, 0x00);	/* no interrupts */
	outb(COM1 + 3, 0x80);	/* DLAB */
	outb(COM1 + 0, 0x01);	/* 115200 baud */
	outb(COM1 + 1, 0x00);
	outb(COM1 + 3, 0x03);	/* 8N1 */
	outb(COM1 + 2, 0xc7);	/* FIFO */
}

static void putc(char c)
{
	int spin = 100000;

	while (!(inb(COM1 + 5) & 0x20) && --spin)
		;
	outb(COM1, (uint8_t)c);
}

static void puts(const char *s)
{
	while (*s) {
		if (*s == '\n')
			putc('\r');
		putc(*s++);
	}
}

/* Divide by 10 in 16-bit steps: no libgcc 64-bit division in 32-bit code. */
static uint32_t div10(uint64_t *v)
{
	uint32_t part[4], r = 0;
	int i;

	for (i = 3; i >= 0; i--) {
		part[i] = ((r << 16) | ((*v >> (16 * i)) & 0xffff));
		r = part[i] % 10;
		part[i] /= 10;
	}
	*v = (uint64_t)part[3] << 48 | (uint64_t)part[2] << 32 |
	     (uint64_t)part[1] << 16 | part[0];
	return r;
}

static void putu(uint64_t v)
{
	char buf[24];
	int i = 0;

	do {
		buf[i++] = (char)('0' + div10(&v));
	} while (v);
	while (i)
		putc(buf[--i]);
}

static void putx(uint32_t v)
{
	int shift;

	puts("0x");
	for (shift = 28; shift >= 0; shift -= 4)
		putc("0123456789abcdef"[(v >> shift) & 0xf]);
}

static int starts_with(const char *s, const char *prefix)
{
	while (*prefix)
		if (*s++ != *prefix++)
			return 0;
	return 1;
}

static uint32_t parse_u32(const char *s)
{
	uint32_t v = 0;

	while (*s >= '0' && *s <= '9')
		v = v * 10 + (uint32_t)(*s++ - '0');
	return v;
}

enum pattern { PAT_SEQ, PAT_RANDOM, PAT_ONCE };

struct options {
	enum pattern pattern;
	uint32_t start_mb;
	uint32_t size_mb;
	uint32_t report;
	uint32_t pause_ms;
	uint32_t fault;		/* fault=ud: an invalid opcode after ready */
};

static void parse_cmdline(const char *s, struct options *o)
{
	while (s && *s) {
		while (*s == ' ')
			s++;
		if (starts_with(s, "pattern=random"))
			o->pattern = PAT_RANDOM;
		else if (starts_with(s, "pattern=once"))
			o->pattern = PAT_ONCE;
		else if (starts_with(s, "pattern=seq"))
			o->pattern = PAT_SEQ;
		else if (starts_with(s, "start_mb="))
			o->start_mb = parse_u32(s + 9);
		else if (starts_with(s, "size_mb="))
			o->size_mb = parse_u32(s + 8);
		else if (starts_with(s, "report="))
			o->report = parse_u32(s + 7);
		else if (starts_with(s, "pause_ms="))
			o->pause_ms = parse_u32(s + 9);
		else if (starts_with(s, "fault=ud"))
			o->fault = 1;
		while (*s && *s != ' ')
			s++;
	}
}

struct idt_gate {
	uint16_t off_lo;
	uint16_t sel;
	uint8_t zero;
	uint8_t type;
	uint16_t off_hi;
} __attribute__((packed));

static struct idt_gate idt[48] __attribute__((aligned(8)));

static void set_gate(int vec, void (*fn)(void))
{
	uint32_t off = (uint32_t)fn;

	idt[vec].off_lo = off & 0xffff;
	idt[vec].sel = 0x08;
	idt[vec].zero = 0;
	idt[vec].type = 0x8e;	/* present, ring 0, 32-bit interrupt gate */
	idt[vec].off_hi = off >> 16;
}

extern void (*const exc_stubs[32])(void);

static void load_idt(void)
{
	struct {
		uint16_t limit;
		uint32_t base;
	} __attribute__((packed)) idtr = { sizeof(idt) - 1, (uint32_t)idt };

	__asm__ volatile("lidt %0" : : "m"(idtr));
}

/*
 * From _start on: the CPU exceptions (NMI included) through our own table,
 * each reported by exception() below. Without it the IDTR is the multiboot
 * loader's real-mode table at 0, and an exception jumps to garbage.
 */
void idt_init(void)
{
	int v;

	for (v = 0; v < 32; v++)
		set_gate(v, exc_stubs[v]);
	load_idt();
}

/* An exception: one error line (wait_payload fails on it), then halt. */
void exception(uint32_t vec, uint32_t err, uint32_t eip)
{
	serial_init();
	puts("\ntlbb-payload: error: exception vector=");
	putu(vec);
	puts(" error_code=");
	putx(err);
	puts(" eip=");
	putx(eip);
	puts("\n");
}

/* PIC remapped to 0x20-0x2f, only the timer unmasked; PIT at PIT_HZ. */
static void timer_init(void)
{
	uint32_t div = 1193182 / PIT_HZ;
	int v;

	for (v = 0x20; v < 0x28; v++)
		set_gate(v, irq_master);
	for (v = 0x28; v < 0x30; v++)
		set_gate(v, irq_slave);
	load_idt();
	outb(0x20, 0x11);	/* ICW1: init, ICW4 follows */
	outb(0xa0, 0x11);
	outb(0x21, 0x20);	/* ICW2: vector base */
	outb(0xa1, 0x28);
	outb(0x21, 0x04);	/* ICW3: slave on IRQ2 */
	outb(0xa1, 0x02);
	outb(0x21, 0x01);	/* ICW4: 8086 mode */
	outb(0xa1, 0x01);
	outb(0x21, 0xfe);	/* mask all but IRQ0 */
	outb(0xa1, 0xff);
	outb(0x43, 0x34);	/* PIT channel 0, rate generator */
	outb(0x40, div & 0xff);
	outb(0x40, div >> 8);
}

/* Sleep about ms milliseconds with interrupts on only while halted. */
static void pause(uint32_t ms)
{
	uint32_t until = ticks + (ms * PIT_HZ + 999) / 1000;

	while ((int32_t)(ticks - until) < 0)
		__asm__ volatile("sti; hlt; cli" ::: "memory");
}

static inline uint32_t signature(uint32_t page)
{
	return page * 2654435761u ^ 0x5a5aa5a5u;
}

static const char *pattern_name(enum pattern p)
{
	return p == PAT_RANDOM ? "random" : p == PAT_ONCE ? "once" : "seq";
}

/* Check the page's signature and write it back (keeps the page dirty). */
static inline uint32_t touch(uint32_t start, uint32_t page)
{
	volatile uint32_t *p = (volatile uint32_t *)(start + page * PAGE);
	uint32_t want = signature(page);
	uint32_t bad = *p != want;

	*p = want;
	return bad;
}

void payload_main(uint32_t magic, const struct mb_info *mbi)
{
	struct options o = { PAT_SEQ, 4, 0, 8, 100, 0 };
	uint32_t top, start, end, npages, i, lcg = 12345;
	uint64_t pass = 0, touches = 0, errors = 0;

	serial_init();
	if (magic != MB_BOOT_MAGIC || !(mbi->flags & 1)) {
		puts("tlbb-payload: error: not booted by a multiboot loader "
		     "with memory information\n");
		return;
	}
	if (mbi->flags & 4)
		parse_cmdline((const char *)mbi->cmdline, &o);
	top = MIB + mbi->mem_upper * 1024u;
	start = o.start_mb * MIB;
	if (start < (uint32_t)_end)
		start = ((uint32_t)_end + 2 * MIB - 1) & ~(2 * MIB - 1);
	end = top & ~(PAGE - 1);
	if (o.size_mb && end - start > o.size_mb * MIB)
		end = start + o.size_mb * MIB;
	if (start >= end) {
		puts("tlbb-payload: error: no RAM above start_mb\n");
		return;
	}
	if (!o.report)
		o.report = 1;
	npages = (end - start) / PAGE;

	puts("tlbb-payload: ready mem_mb=");
	putu(top / MIB);
	puts(" start=");
	putx(start);
	puts(" end=");
	putx(end);
	puts(" pages=");
	putu(npages);
	puts(" pattern=");
	puts(pattern_name(o.pattern));
	puts(" pause_ms=");
	putu(o.pause_ms);
	puts("\n");
	if (o.pause_ms)
		timer_init();
	if (o.fault)
		__asm__ volatile("ud2");

	/* First pass: write every page's signature. */
	for (i = 0; i < npages; i++)
		*(volatile uint32_t *)(start + i * PAGE) = signature(i);
	touches = npages;
	puts("tlbb-payload: touched pages=");
	putu(npages);
	puts("\n");
	if (o.pattern == PAT_ONCE)
		return;

	for (;;) {
		if (o.pattern == PAT_SEQ) {
			for (i = 0; i < npages; i++)
				errors += touch(start, i);
		} else {
			for (i = 0; i < npages; i++) {
				lcg = lcg * 1664525u + 1013904223u;
				errors += touch(start, (lcg >> 8) % npages);
			}
		}
		touches += npages;
		pass++;
		if (o.pause_ms)
			pause(o.pause_ms);
		if ((uint32_t)pass % o.report == 0 || errors) {
			puts("tlbb-payload: pass=");
			putu(pass);
			puts(" touches=");
			putu(touches);
			puts(" errors=");
			putu(errors);
			puts("\n");
		}
	}
}
