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
 * TSC-deadline. It is hard, except that with a max deferral B set it is
 * deferrable in every mode: on time while its vCPU runs, and while it is
 * halted at most until the first multiple of B - B/16 on CLOCK_MONOTONIC
 * at or after its expiry (apic_set_timer_policy).
 *
 * PV EOI (KVM's MSR_KVM_PV_EOI_EN, which the VM routes here): the guest
 * names a flag in its memory, and where an EOI would only retire the one
 * vector in service, with nothing waiting behind it, the APIC sets the flag
 * as the guest enters; the guest then clears the flag instead of writing
 * EOI, an exit saved per interrupt, and the APIC finds the EOI done at the
 * next exit. A level-triggered vector in service is never offered: its
 * EOI must reach the I/O APIC at once.
 *
 * Everything here runs on the vCPU's own thread, except apic_accepts(),
 * which other vCPUs call to route their IPIs.
 */
#ifndef LULL_APIC_H
#define LULL_APIC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "apicdef.h"
#include "timers/periodic.h"
#include "timers/wheel.h"

#define APIC_MAX_OWED PERIODIC_MAX_OWED

enum apic_source { APIC_SRC_IPI = 0, APIC_SRC_HARD, APIC_SRC_DEFERRED };

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
	/* CPUID offers no x2APIC (apic_hide_x2apic): EXTD is reserved */
	bool x2apic_hidden;
	/* CPUID offers no PV EOI (apic_hide_pv_eoi): its MSR faults */
	bool pv_eoi_hidden;
	uint64_t timer_fired;
	/* of those, under a max deferral: run on a halted vCPU past expiry
	 * + slop, and of those, run at their grid point (the host woke
	 * for them there, or later) */
	uint64_t timer_deferred, timer_aligned;
	/* TSC deadlines not reached when their timer ran (vcpu/pvclock.h:
	 * where KVM holds the TSC, lull's arming clock only approximates
	 * it): an exit of its own, and of those on a halted vCPU, a host
	 * wakeup of its own */
	uint64_t timer_rearmed, timer_rearmed_halted;

	/* PV EOI: MSR_KVM_PV_EOI_EN as written, the flag byte it names in
	 * guest RAM (NULL while off), whether the flag was set at the last
	 * entry, and the EOIs the guest made through it */
	uint64_t pv_eoi_msr;
	uint8_t *pv_eoi_flag;
	bool pv_eoi_offered;
	uint64_t pv_eois;
};

struct vcpu;

/* Power-on state: xAPIC mode at APIC_DEFAULT_BASE, software-disabled. */
void apic_init(struct vcpu *v, bool bsp);
/* INIT: everything but the ID and the base back to power-on values. */
void apic_init_reset(struct vcpu *v);
/* The vCPU is about to halt (v->halted): its TSC deadline is timed anew. */
void apic_halting(struct vcpu *v);
/* max_defer_ns > 0: the timer, in any mode, may wait while its vCPU is
 * halted, up to the first multiple of max_defer_ns * 15/16 at or after its
 * expiry (the rest is the host's wake latency);
 * late periodic ticks follow `missed_policy` (LULL_MISSED_*). */
void apic_set_timer_policy(struct vcpu *v, uint64_t max_defer_ns,
			   unsigned missed_policy);
/* The vCPU's CPUID offers no x2APIC (--no-x2apic): as on such a CPU,
 * setting IA32_APIC_BASE.EXTD faults, and the APIC stays an xAPIC. */
void apic_hide_x2apic(struct vcpu *v);
/* The vCPU's CPUID offers no PV EOI (--no-pv-eoi): its MSR faults, as on
 * a KVM that holds the guest to its CPUID. */
void apic_hide_pv_eoi(struct vcpu *v);

/* Raises vector `times` times. As an edge (accumulate false) a raise onto
 * a vector still owed merges into it; accumulating, every raise is owed a
 * delivery of its own. Returns how many raises merged or were dropped.
 * The owed delivery is timed (since, src) from its oldest raise, or from
 * the first hard one that joins it, times 0 included: a hard timer's
 * lateness is the delivery it rides. */
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
 * APIC's (IA32_APIC_BASE, IA32_TSC_DEADLINE, 0x800-0x8ff and
 * MSR_KVM_PV_EOI_EN are).
 */
int apic_rdmsr(struct vcpu *v, uint32_t msr, uint64_t *value);
int apic_wrmsr(struct vcpu *v, uint32_t msr, uint64_t value);
/* Just before KVM_RUN: sets the guest's PV EOI flag where its next EOI
 * may skip the exit. */
void apic_pv_eoi_offer(struct vcpu *v);
/* Just after KVM_RUN returns, before anything reads the ISR: a flag the
 * guest cleared is its EOI; one it left set is taken back. */
void apic_pv_eoi_collect(struct vcpu *v);

/* xAPIC MMIO: true if gpa is this vCPU's APIC page in xAPIC mode (then
 * the access is done). */
bool apic_mmio(struct vcpu *v, uint64_t gpa, bool write, unsigned len,
	       uint8_t *data);

/* Whether this APIC is a destination of `ipi` (shorthands excluded). Any
 * thread. */
bool apic_accepts(const struct apic *a, const struct apic_ipi *ipi);

#endif
