// SPDX-License-Identifier: MIT
/* idt.c: see idt.h. */
#include "idt.h"
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
 * Only the exception gates at boot: the rest are filled when a handler is
 * installed, or by the #NP the first interrupt on an empty gate raises (see
 * trap_dispatch). Filling all 256 is ~3000 instructions, milliseconds of
 * boot time where guest code is emulated (docs/guests.md).
 */
void idt_init(void)
{
	for (unsigned v = 0; v < 32; v++)
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
	/* Handler first, then the gate: the gate is what lets the vector in. */
	WRITE_ONCE(handlers[vector], fn);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	set_gate(vector);
}

uint64_t irq_unexpected_count(void)
{
	return __atomic_load_n(&unexpected, __ATOMIC_RELAXED);
}

void trap_dispatch(struct trap_frame *f);
void irq_dispatch(uint64_t vector);

#define VEC_NP 11
#define ERR_IDT (1u << 1) /* the error code names an IDT entry */

void trap_dispatch(struct trap_frame *f)
{
	uint64_t vector = f->vector;

	/*
	 * An interrupt on a vector whose gate is not filled yet arrives as #NP
	 * naming that IDT entry. Fill the gate and handle it as the interrupt
	 * it was: the handler if one is installed by now (another vCPU may be
	 * installing it), else counted as unexpected, as with a filled gate.
	 */
	if (vector == VEC_NP && (f->error & ERR_IDT) && (f->error >> 3) >= 32 &&
	    (f->error >> 3) < 256) {
		vector = f->error >> 3;
		set_gate((unsigned)vector);
	} else if (vector < 32) {
		const char *name = exception_names[f->vector];

		printf("exception %lu (%s) on vcpu %u: error %#lx rip %#lx rsp %#lx",
		       f->vector, name ? name : "?", smp_id(), f->error, f->rip,
		       f->rsp);
		if (f->vector == 14)
			printf(" cr2 %#lx", read_cr2());
		printf("\n");
		rt_exit(EXCEPTION_EXIT_STATUS);
	}
	irq_dispatch(vector);
}

void irq_dispatch(uint64_t vector)
{
	irq_handler_t fn = READ_ONCE(handlers[vector]);

	if (fn)
		fn((unsigned)vector);
	else
		__atomic_fetch_add(&unexpected, 1, __ATOMIC_RELAXED);
}
