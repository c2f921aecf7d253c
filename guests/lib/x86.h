/* SPDX-License-Identifier: MIT */
/*
 * x86.h: one-instruction helpers (port I/O, CPUID, MSRs, TSC, IF, HLT).
 *
 * Everything here is static inline and has no state. "memory" clobbers are
 * on every instruction that talks to the outside world so the compiler does
 * not move loads and stores of shared flags across it.
 */
#ifndef GUEST_X86_H
#define GUEST_X86_H

#include <stdbool.h>
#include <stdint.h>

static inline void outb(uint16_t port, uint8_t v)
{
	asm volatile("outb %0, %1" : : "a"(v), "Nd"(port) : "memory");
}

static inline void outl(uint16_t port, uint32_t v)
{
	asm volatile("outl %0, %1" : : "a"(v), "Nd"(port) : "memory");
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;

	asm volatile("inb %1, %0" : "=a"(v) : "Nd"(port) : "memory");
	return v;
}

struct cpuid_regs {
	uint32_t eax, ebx, ecx, edx;
};

static inline struct cpuid_regs cpuid(uint32_t leaf, uint32_t subleaf)
{
	struct cpuid_regs r;

	asm volatile("cpuid"
		     : "=a"(r.eax), "=b"(r.ebx), "=c"(r.ecx), "=d"(r.edx)
		     : "a"(leaf), "c"(subleaf));
	return r;
}

static inline uint64_t rdmsr(uint32_t msr)
{
	uint32_t lo, hi;

	asm volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
	return ((uint64_t)hi << 32) | lo;
}

static inline void wrmsr(uint32_t msr, uint64_t v)
{
	asm volatile("wrmsr"
		     :
		     : "c"(msr), "a"((uint32_t)v), "d"((uint32_t)(v >> 32))
		     : "memory");
}

/* lfence first: the TSC read must not be hoisted above the pvclock loads. */
static inline uint64_t rdtsc_ordered(void)
{
	uint32_t lo, hi;

	asm volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi) : : "memory");
	return ((uint64_t)hi << 32) | lo;
}

static inline void cli(void)
{
	asm volatile("cli" : : : "memory");
}

static inline void sti(void)
{
	asm volatile("sti" : : : "memory");
}

/*
 * sti; hlt back to back (isr.S): STI delays interrupt recognition by one
 * instruction, so an interrupt that is already pending is taken after the
 * HLT has started and wakes it. A condition checked with IF=0 just before
 * cannot be missed. Where an emulated CPU loses that shadow, the interrupt
 * entry steps over the HLT and counts it in sti_hlt_shadow_lost.
 */
void sti_hlt(void);
extern uint64_t sti_hlt_shadow_lost;

static inline void hlt(void)
{
	asm volatile("hlt" : : : "memory");
}

static inline void cpu_relax(void)
{
	asm volatile("pause" : : : "memory");
}

static inline bool irqs_enabled(void)
{
	uint64_t f;

	asm volatile("pushfq; popq %0" : "=r"(f) : : "memory");
	return f & (1u << 9);
}

/* cli, returning RFLAGS from before it for irq_restore(). */
static inline uint64_t irq_save(void)
{
	uint64_t f;

	asm volatile("pushfq; popq %0; cli" : "=r"(f) : : "memory");
	return f;
}

static inline void irq_restore(uint64_t flags)
{
	if (flags & (1u << 9))
		sti();
}

static inline uint64_t read_cr2(void)
{
	uint64_t v;

	asm volatile("mov %%cr2, %0" : "=r"(v));
	return v;
}

#define barrier() asm volatile("" : : : "memory")
#define READ_ONCE(x) (*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, v) (*(volatile __typeof__(x) *)&(x) = (v))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
