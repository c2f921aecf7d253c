/* SPDX-License-Identifier: MIT */
/*
 * upcall.h: lull's upcall for timer slots (docs/abi.md "Upcall delivery"),
 * the guest half of Xen's evtchn_upcall_pending / evtchn_pending model.
 *
 * A slot armed with TIMER_UPCALL (timer.h) has no vector of its own: at
 * expiry lull sets the slot's bit in the shared page and raises the vCPU's
 * one upcall vector, UPCALL_VECTOR, unless an upcall is already pending.
 * The handler here acks (upcall_pending = 0), then takes each bit word with
 * an atomic exchange and calls the slot's function once per set bit. Any
 * number of slots due at one wakeup thus cost one interrupt.
 *
 * It does not loop on upcall_pending: a bit set after the ack raised an
 * upcall of its own, which arrives after this one returns (and may find its
 * bit already taken by this scan: an upcall with no bits is normal and
 * counted in upcall_empty()).
 *
 * Under the lapic backend (QEMU) there is no upcall: delivery_choose()
 * falls back to vectors. The handler sends no EOI: it is for lull's APIC
 * left software-disabled, as this runtime leaves it under lull.
 */
#ifndef GUEST_UPCALL_H
#define GUEST_UPCALL_H

#include <stdbool.h>
#include <stdint.h>

#define UPCALL_VECTOR 0xe0

enum delivery { DELIVERY_VECTOR, DELIVERY_UPCALL };

/*
 * The guests' delivery=upcall|vector option: upcall by default where lull
 * offers it (LULL_FEAT_UPCALL), vector elsewhere, whatever was asked.
 * Returns -1 for a value that is neither.
 */
int delivery_choose(void);
const char *delivery_name(int delivery);

typedef void (*upcall_fn)(unsigned slot);

/*
 * Per vCPU, after timer_init() and before binding a slot: installs the
 * handler and registers UPCALL_VECTOR with lull. 0, or negative errno
 * (-ENOSYS without lull's upcall).
 */
long upcall_init(void);
/* Per vCPU: fn(slot) runs, interrupts off, for each delivered expiry. */
void upcall_bind(unsigned slot, upcall_fn fn);

/* This vCPU's upcall interrupts, and those of them that found no bit. */
uint64_t upcall_count(void);
uint64_t upcall_empty(void);
/* Bits found for slots with no function, all vCPUs together. */
uint64_t upcall_unbound(void);

#endif
