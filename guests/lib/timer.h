/* SPDX-License-Identifier: MIT */
/*
 * timer.h: one small timer interface over whichever backend exists.
 *
 *   lull   PV timers: every slot, flags honoured (LULL_TIMER_DEFERRABLE).
 *   lapic  QEMU/KVM without lull: the one LAPIC timer. Only one slot can
 *          be armed at a time (arming another replaces it) and there is
 *          no deferrable concept: the flag is ignored, every timer is hard.
 *
 * TIMER_UPCALL (lull only, after upcall_init(); upcall.h): the slot is
 * delivered through the vCPU's upcall and `vector` is not used. The lapic
 * backend has no upcall: it ignores the flag and uses `vector`.
 *
 * Deadlines are absolute clock_ns() values. Call timer_irq_done() at the
 * end of every timer interrupt handler (the LAPIC needs an EOI, lull
 * does not). Return values: >= 0 ok, negative errno (lull's, or -ENOSYS
 * when there is no backend).
 */
#ifndef GUEST_TIMER_H
#define GUEST_TIMER_H

#include <stdint.h>

#include <lull_abi.h>

enum timer_backend { TIMER_NONE, TIMER_LULL, TIMER_LAPIC };

#define TIMER_UPCALL LULL_TIMER_UPCALL

/* Per vCPU, before using the others; returns the backend. */
enum timer_backend timer_init(void);
enum timer_backend timer_backend(void);
const char *timer_backend_name(void);

long timer_oneshot(unsigned slot, uint64_t deadline_ns, unsigned vector,
		   unsigned flags);
/* First expiry at now + period, then every period. */
long timer_periodic(unsigned slot, uint64_t period_ns, unsigned vector,
		    unsigned flags);
long timer_stop(unsigned slot);
void timer_irq_done(void);

#endif
