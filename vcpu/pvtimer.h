/* SPDX-License-Identifier: MIT */
/*
 * The PV timer device of one vCPU: LULL_MAX_SLOTS guest timer slots living
 * on the vCPU's wheel, the vCPU's shared page (pvclock + per-slot counters)
 * and the missed-ticks policy.
 *
 * A slot is (deadline, vector, flags, period, tolerance). Hard slots wake a
 * halted vCPU; deferrable ones never do (unless bounded by a max deferral)
 * and run the next time the vCPU runs. In strict mode every slot is hard.
 * A slot bound to the upcall (LULL_TIMER_UPCALL) has no vector of its own:
 * its expiry sets its bit in the shared page's upcall_bits and raises the
 * vCPU's upcall vector only if upcall_pending was 0 (docs/abi.md "Upcall
 * delivery"), so any number of slots due together cost one injection.
 * An upcall-bound slot holds at most one undelivered expiry (its bit); more
 * are counted merged. While the upcall vector is unset (0) its expiries are
 * dropped and counted merged.
 * Arguments arrive validated and clamped (see hypercall.c); everything here
 * runs on the vCPU's own thread.
 */
#ifndef LULL_PVTIMER_H
#define LULL_PVTIMER_H

#include <stdbool.h>
#include <stdint.h>

#include "lull_abi.h"
#include "timers/wheel.h"
#include "vcpu/pvclock.h"

struct vcpu;

struct pvtimer_slot {
	struct wheel_timer timer;
	struct pvtimer *pv;
	uint64_t period; /* 0: one-shot */
	uint64_t tolerance;
	uint8_t vector; /* 0 for an upcall-bound slot */
	bool deferred; /* deferrable and not in strict mode */
	bool upcall; /* LULL_TIMER_UPCALL */
	uint16_t index;
};

struct pvtimer {
	struct vcpu *vcpu;
	unsigned nr_slots;
	bool strict;
	unsigned missed_policy; /* LULL_MISSED_* */
	uint8_t upcall_vector; /* 0: none set */
	struct lull_shared_page *shared; /* NULL until the guest registers it */
	struct pvclock_src clock;
	struct pvtimer_slot slot[LULL_MAX_SLOTS];
};

void pvtimer_init(struct pvtimer *pv, struct vcpu *v, unsigned nr_slots,
		  bool strict, unsigned missed_policy);
/* Arms (or re-arms) a slot; values already validated and clamped. */
void pvtimer_set(struct pvtimer *pv, unsigned slot, uint64_t deadline,
		 uint8_t vector, unsigned flags, uint64_t period,
		 uint64_t tolerance);
/* Returns 1 if the slot was pending, else 0. */
int pvtimer_stop(struct pvtimer *pv, unsigned slot);
/* Sets (or with 0 unsets) the upcall vector; validated by the caller. */
void pvtimer_set_upcall_vector(struct pvtimer *pv, uint8_t vector);
void pvtimer_set_shared(struct pvtimer *pv, struct lull_shared_page *page);
/* Refreshes the guest's pvclock record when it is due, or when a timer
 * of the vCPU's (PV or APIC) is due at `now` and the record lags. Called
 * on every return to the VMM, before the wheel runs. */
void pvtimer_resync(struct pvtimer *pv, uint64_t now);

#endif
