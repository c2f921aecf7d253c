/* SPDX-License-Identifier: MIT */
/*
 * The local APIC of one vCPU, in userspace. lull asks KVM for no in-kernel
 * irqchip, so this is the vCPU's whole interrupt controller: every vector
 * the guest receives (timer slots, IPIs, the APIC timer) goes through this
 * IRR, and the run loop injects what apic_deliverable() names.
 *
 * Registers are numbered as x2APIC registers: reg = MSR - 0x800 = xAPIC
 * MMIO offset / 16. The guest reaches them as x2APIC MSRs (user-space MSR
 * exits) or, in xAPIC mode, through the MMIO page at the APIC base; the
 * register semantics are the same, only the access rules differ.
 *
 * Two delivery regimes, chosen by the guest:
 *  - software-disabled (SVR bit 8 clear: the reset state, and where lull's
 *    own ABI guests leave it): a raised vector is an edge on the legacy
 *    INTR line, delivered highest first, with no ISR and no EOI;
 *  - software-enabled: the APIC proper. IRR, ISR, TPR and PPR decide by
 *    priority class what may be delivered, and an EOI retires the highest
 *    vector in service.
 * A vector may owe several deliveries (the "all" missed-ticks policy); the
 * count is capped so that no guest can make it grow without bound.
 *
 * The timer counts at a 1 GHz bus clock (as KVM's in-kernel APIC does) and
 * is a timer on the vCPU's wheel in all three modes: one-shot, periodic and
 * TSC-deadline. It is hard, except that with a max deferral set a periodic
 * timer becomes deferrable up to that bound (apic_set_timer_policy).
 *
 * Everything here runs on the vCPU's own thread, except apic_accepts(),
 * which other vCPUs call to route their IPIs.
 */
#ifndef LULL_APIC_H
#define LULL_APIC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "timers/wheel.h"

#define APIC_MAX_OWED 1024u

#define MSR_IA32_APIC_BASE 0x1b
#define MSR_IA32_TSC_DEADLINE 0x6e0
#define MSR_X2APIC_FIRST 0x800
#define MSR_X2APIC_LAST 0x8ff

#define APIC_DEFAULT_BASE 0xfee00000u
#define APIC_BASE_BSP (1u << 8)
#define APIC_BASE_EXTD (1u << 10) /* x2APIC mode */
#define APIC_BASE_EN (1u << 11)
#define APIC_PAGE_SIZE 4096u

/* Register numbers (x2APIC MSR - 0x800) */
#define APIC_ID 0x02
#define APIC_VERSION 0x03
#define APIC_TPR 0x08
#define APIC_APR 0x09
#define APIC_PPR 0x0a
#define APIC_EOI 0x0b
#define APIC_LDR 0x0d
#define APIC_DFR 0x0e
#define APIC_SVR 0x0f
#define APIC_ISR 0x10 /* 8 registers of 32 vectors each */
#define APIC_TMR 0x18
#define APIC_IRR 0x20
#define APIC_ESR 0x28
#define APIC_ICR 0x30
#define APIC_ICR2 0x31 /* xAPIC: the destination half of the ICR */
#define APIC_LVT_TIMER 0x32
#define APIC_LVT_THERMAL 0x33
#define APIC_LVT_PERF 0x34
#define APIC_LVT_LINT0 0x35
#define APIC_LVT_LINT1 0x36
#define APIC_LVT_ERROR 0x37
#define APIC_TIMER_INITIAL 0x38
#define APIC_TIMER_CURRENT 0x39
#define APIC_TIMER_DIVIDE 0x3e
#define APIC_SELF_IPI 0x3f /* x2APIC only */

#define APIC_NR_LVT 6 /* timer, thermal, perf, LINT0, LINT1, error */
/* Version 0x14 (integrated APIC), highest LVT entry 5: KVM's answer. */
#define APIC_VERSION_VALUE (0x14u | ((APIC_NR_LVT - 1u) << 16))

#define APIC_SVR_ENABLE (1u << 8)
#define APIC_LVT_MASKED (1u << 16)
#define APIC_TIMER_ONESHOT 0u
#define APIC_TIMER_PERIODIC 1u
#define APIC_TIMER_TSC_DEADLINE 2u

/* ESR bits */
#define APIC_ESR_SEND_ILLEGAL (1u << 5)
#define APIC_ESR_RECV_ILLEGAL (1u << 6)
#define APIC_ESR_ILLEGAL_REG (1u << 7)

/* ICR delivery modes and shorthands */
#define APIC_DM_FIXED 0
#define APIC_DM_LOWEST 1
#define APIC_DM_SMI 2
#define APIC_DM_NMI 4
#define APIC_DM_INIT 5
#define APIC_DM_SIPI 6
#define APIC_SH_NONE 0
#define APIC_SH_SELF 1
#define APIC_SH_ALL 2
#define APIC_SH_OTHERS 3

enum apic_source { APIC_SRC_IPI = 0, APIC_SRC_HARD, APIC_SRC_DEFERRED };

/* One ICR write: what the VM must route (vcpu_ops.ipi). */
struct apic_ipi {
	uint32_t dest; /* x2APIC: 32 bits; xAPIC: ICR2[31:24] */
	uint8_t vector;
	uint8_t mode; /* APIC_DM_* */
	uint8_t shorthand; /* APIC_SH_* */
	bool logical;
	bool x2apic; /* the sender's mode: how dest is to be read */
	/* level-triggered (an I/O APIC's level pin): the receiving APIC sets
	 * the vector's TMR bit, and its EOI goes back to the sender
	 * (vcpu_ops.level_eoi). ICR IPIs are edges. */
	bool level;
};

struct apic {
	/* IRR, with the deliveries each pending vector is owed */
	uint64_t irr[4];
	uint32_t owed[256];
	/* expiry of the oldest undelivered timer raise: lateness is from it */
	uint64_t since[256];
	uint8_t source[256];
	uint64_t isr[4];
	/* vectors last accepted level-triggered: their EOI is broadcast */
	uint64_t tmr[4];

	uint32_t id; /* the vCPU index, as CPUID reports it */
	/* read by other vCPUs routing IPIs */
	_Atomic uint64_t base;
	_Atomic uint32_t xapic_ldr, xapic_dfr;
	uint32_t tpr, svr, esr, esr_pending;
	uint64_t icr; /* as last written, for reads */
	uint32_t lvt[APIC_NR_LVT];

	struct wheel_timer timer;
	uint32_t timer_initial, timer_divide_reg;
	uint64_t timer_divisor;
	uint64_t timer_period_ns; /* one-shot and periodic */
	uint64_t tsc_deadline;

	/* the timer policy (apic_set_timer_policy) */
	uint64_t max_defer_ns;
	unsigned missed_policy;
	uint64_t timer_fired;
};

struct vcpu;

/* Power-on state: xAPIC mode at APIC_DEFAULT_BASE, software-disabled. */
void apic_init(struct vcpu *v, bool bsp);
/* INIT: everything but the ID and the base back to power-on values. */
void apic_init_reset(struct vcpu *v);
/* max_defer_ns > 0: periodic timer ticks are deferrable up to that long;
 * late ticks follow `missed_policy` (LULL_MISSED_*). */
void apic_set_timer_policy(struct vcpu *v, uint64_t max_defer_ns,
			   unsigned missed_policy);

/* Raises vector `times` times. As an edge (accumulate false) a raise onto
 * a vector still owed merges into it; accumulating, every raise is owed a
 * delivery of its own. Returns how many raises merged or were dropped. */
uint32_t apic_raise(struct apic *a, uint8_t vector, uint32_t times,
		    bool accumulate, enum apic_source src, uint64_t since);
/* Records how `vector` was last accepted into the IRR: level sets its TMR
 * bit, so that its EOI reaches the I/O APIC; an edge clears it. */
void apic_set_trigger(struct apic *a, uint8_t vector, bool level);
/* The vector the guest may take now, or -1. */
int apic_deliverable(const struct apic *a);
/* The guest took `vector` (one delivery of it). */
void apic_delivered(struct apic *a, uint8_t vector);

/* TPR as CR8 holds it (bits 7:4), both ways: KVM keeps CR8 in kvm_run. */
static inline uint8_t apic_cr8(const struct apic *a)
{
	return (uint8_t)(a->tpr >> 4);
}
void apic_set_cr8(struct apic *a, uint8_t cr8);

/*
 * MSR access: 0 done, -EPERM for a #GP, -ENOENT if the MSR is not the
 * APIC's (IA32_APIC_BASE, IA32_TSC_DEADLINE, 0x800-0x8ff are).
 */
int apic_rdmsr(struct vcpu *v, uint32_t msr, uint64_t *value);
int apic_wrmsr(struct vcpu *v, uint32_t msr, uint64_t value);
/* xAPIC MMIO: true if gpa is this vCPU's APIC page in xAPIC mode (then
 * the access is done). */
bool apic_mmio(struct vcpu *v, uint64_t gpa, bool write, unsigned len,
	       uint8_t *data);

/* Whether this APIC is a destination of `ipi` (shorthands excluded). Any
 * thread. */
bool apic_accepts(const struct apic *a, const struct apic_ipi *ipi);

#endif
