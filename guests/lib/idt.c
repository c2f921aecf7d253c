// SPDX-License-Identifier: MIT
/* idt.c: see idt.h. */
#include "idt.h"
#include "lapic.h"
#include "layout.h"
#include "printf.h"
#include "rt.h"
#include "smp.h"
#include "x86.h"

#define GATE_INTERRUPT 0x8e /* present, DPL 0, 64-bit interrupt gate */
#define STUB_SIZE 16	    /* see isr.S */

struct idt_gate {
	uint16_t off_lo;
	uint16_t sel;
	uint8_t ist;
	uint8_t type;
	uint16_t off_mid;
	uint32_t off_hi;
	uint32_t zero;
} __attribute__((packed));

extern char isr_stubs[];

static struct idt_gate idt[256] __attribute__((aligned(16)));
static irq_handler_t handlers[256];
static uint64_t unexpected;
static uint64_t reported[4]; /* bit v: vector v was reported */

static const char *const exception_names[32] = {
	"#DE", "#DB", "NMI", "#BP", "#OF", "#BR", "#UD", "#NM",
	"#DF", "CSO", "#TS", "#NP", "#SS", "#GP", "#PF", "rsvd",
	"#MF", "#AC", "#MC", "#XM", "#VE", "#CP",
};

static void set_gate(unsigned v)
{
	uint64_t a = (uint64_t)(uintptr_t)(isr_stubs + v * STUB_SIZE);

	idt[v] = (struct idt_gate){
		.off_lo = a & 0xffff,
		.sel = GDT_CODE64,
		.type = GATE_INTERRUPT,
		.off_mid = (a >> 16) & 0xffff,
		.off_hi = a >> 32,
	};
}

/*
 * Every gate at boot, so that no vector can arrive on an empty one: an
 * all-zero gate has an invalid type, and an interrupt there is a #GP on
 * the IDT entry, which would kill the guest instead of being reported.
 * The stubs are evenly spaced, so one loop fills the table.
 */
void idt_init(void)
{
	for (unsigned v = 0; v < ARRAY_SIZE(idt); v++)
		set_gate(v);
}

void idt_load(void)
{
	struct {
		uint16_t limit;
		uint64_t base;
	} __attribute__((packed)) ptr = { sizeof(idt) - 1, (uintptr_t)idt };

	asm volatile("lidt %0" : : "m"(ptr) : "memory");
}

void irq_set_handler(unsigned vector, irq_handler_t fn)
{
	if (vector < 32 || vector >= 256)
		return;
	/* Release: a vCPU that sees the handler sees what it uses. */
	__atomic_store_n(&handlers[vector], fn, __ATOMIC_RELEASE);
}

uint64_t irq_unexpected_count(void)
{
	return __atomic_load_n(&unexpected, __ATOMIC_RELAXED);
}

void trap_dispatch(struct trap_frame *f);
void irq_dispatch(uint64_t vector);

void trap_dispatch(struct trap_frame *f)
{
	const char *name = exception_names[f->vector];

	printf("exception %lu (%s) on vcpu %u: error %#lx rip %#lx rsp %#lx",
	       f->vector, name ? name : "?", smp_id(), f->error, f->rip,
	       f->rsp);
	if (f->vector == 14)
		printf(" cr2 %#lx", read_cr2());
	printf("\n");
	rt_exit(EXCEPTION_EXIT_STATUS);
}

/*
 * A vector nobody handles is a bug somewhere (the VMM's or the guest's):
 * count it, and say so once per vector, so that the guest's log names it
 * even if the guest cannot tell what went wrong. The serial lock keeps
 * interrupts off while it is held, so printing here cannot deadlock with
 * the code this interrupt stopped.
 */
static void unexpected_irq(unsigned vector)
{
	uint64_t bit = 1ull << (vector % 64);
	uint64_t seen;

	__atomic_fetch_add(&unexpected, 1, __ATOMIC_RELAXED);
	seen = __atomic_fetch_or(&reported[vector / 64], bit, __ATOMIC_RELAXED);
	if (!(seen & bit))
		printf("irq: unexpected vector %#x on vcpu %u (no handler; reported once per vector)\n",
		       vector, smp_id());
	lapic_ack_stray(vector);
}

void irq_dispatch(uint64_t vector)
{
	irq_handler_t fn = __atomic_load_n(&handlers[vector], __ATOMIC_ACQUIRE);

	if (fn)
		fn((unsigned)vector);
	else
		unexpected_irq((unsigned)vector);
}
