/* SPDX-License-Identifier: MIT */
/*
 * idt.h: one IDT shared by all vCPUs.
 *
 * Every one of the 256 gates is filled at boot. Vectors 0-31 (exceptions)
 * print the vector, error code, RIP (and CR2 for a page fault) on serial
 * and exit with status 3. Vectors 32-255 call the handler installed with
 * irq_set_handler(); an interrupt on a vector without one is counted as
 * unexpected, printed once per vector ("irq: unexpected vector V on vcpu
 * I") and, if the local APIC has it in service, acknowledged. The handler
 * runs with interrupts off on the interrupted vCPU's stack.
 *
 * A handler must be installed before anything can raise its vector: on
 * another vCPU too (see smp_open_gate() in smp.h). Guests that use
 * interrupts check irq_unexpected_count() before they pass.
 *
 * vCPU 0 calls idt_init() once before releasing the other vCPUs; every
 * vCPU then calls idt_load(). The runtime does both before guest code.
 */
#ifndef GUEST_IDT_H
#define GUEST_IDT_H

#include <stdint.h>

#define EXCEPTION_EXIT_STATUS 3

struct trap_frame {
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
	uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector, error;
	uint64_t rip, cs, rflags, rsp, ss; /* pushed by the CPU */
};

typedef void (*irq_handler_t)(unsigned vector);

void idt_init(void);
void idt_load(void);
void irq_set_handler(unsigned vector, irq_handler_t fn);
/* Interrupts on vectors without a handler, all vCPUs together. */
uint64_t irq_unexpected_count(void);

#endif
