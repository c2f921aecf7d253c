/* SPDX-License-Identifier: MIT */
/*
 * advance: a hard timer's host wake, moved earlier by what the way back
 * to the guest costs, so that its interrupt lands at its expiry.
 *
 * A vCPU woken at a timer's expiry delivers it late by the time from the
 * host's timer to the vCPU being back in KVM_RUN with the vector staged:
 * the host's wake latency and lull's own work. KVM's in-kernel APIC
 * closes the same gap (lapic_timer_advance): it arms its host timer early
 * by an estimate of that time and, at entry, waits out what is left. An
 * advance does the same for one wake path of one vCPU:
 *
 *   advance_wake_at    the host wake for `target` is armed estimate ns
 *                      before it, where it is at least 5/4 of that away;
 *   advance_catch_up   woken within the estimate of the target, the
 *                      catch-up runs the timers up to the target at once,
 *                      so that everything due by then is taken and staged;
 *   advance_gate       just before KVM_RUN the thread waits until the host
 *                      clock reaches the target (advance_gate says until
 *                      when): no vector is seen before its expiry, by
 *                      construction;
 *   advance_entered    the error there (early: the wait; late: what the
 *                      estimate missed) corrects the estimate by 1/8, as
 *                      KVM's does; an error beyond ADVANCE_MAX_NS (a
 *                      preempted thread, a long exit) is not learned from.
 *
 * The estimate starts at ADVANCE_INIT_NS and stays within
 * [0, ADVANCE_MAX_NS]: no wake is ever more than that early, and no wait
 * longer. Pure time: no clock is read here, no vCPU known.
 */
#ifndef LULL_TIMERS_ADVANCE_H
#define LULL_TIMERS_ADVANCE_H

#include <stdbool.h>
#include <stdint.h>

#define ADVANCE_INIT_NS 10000ull
/* A slow host's way back, hundreds of µs, fits, so the advance serves it
 * too; the gate's wait yields, so a long one starves no thread. */
#define ADVANCE_MAX_US 500
#define ADVANCE_MAX_NS (ADVANCE_MAX_US * 1000ull)

struct advance {
	bool enabled;
	uint64_t ns; /* the estimate */
	uint64_t target; /* the armed wake's expiry; 0: none */
	uint64_t gate; /* after a run-ahead: enter not before; 0: none */
	uint64_t aimed; /* the expiry that run-ahead was for (a hold may
			 * take the gate past it) */
	/* what it cost and bought */
	uint64_t ran_ahead; /* catch-ups that ran the timers to a target */
	uint64_t took_near; /* entries held for an expiry nearer than a kick */
	uint64_t near_over_budget; /* ...not held: their budget was spent */
	uint64_t near_budget; /* what near waits may still take, in ns
			       * times ADVANCE_NEAR_SHARE */
	uint64_t near_budget_at; /* when it was last filled */
	uint64_t waits; /* entries that waited for the gate */
	uint64_t wait_ns; /* ...in all */
	uint64_t late; /* entries that found the gate already past */
	uint64_t late_ns; /* ...by this much in all */
};

void advance_init(struct advance *a, bool enabled);
/*
 * The host wake for a hard expiry `target`, at `now`; remembers the
 * target. A target less than 5/4 of the estimate away is not advanced:
 * its thread would wake at once and spin, holding a staged vector, until
 * the target, with no way to give the CPU back to a busy neighbour (a
 * storm of timers faster than the way back, on a host short of CPUs).
 * No wider margin: on a slow host, whose estimate is hundreds of µs, most
 * of a busy guest's halts end within twice it.
 */
uint64_t advance_wake_at(struct advance *a, uint64_t target, uint64_t now);
/*
 * True where the advance is on and `target` is after `now` but nearer
 * than advance_wake_at advances: a sleep until it would come back late by
 * about the estimate, so a halted thread spins for it instead, in a poll
 * that stops (and sleeps) once another thread wants the CPU.
 */
bool advance_too_near(const struct advance *a, uint64_t target,
		      uint64_t now);
/*
 * Out of the guest already, at `now`, with a hard expiry `target` due
 * within the estimate: a kick armed for it would bring the thread back no
 * sooner than the target plus the estimate, and cost the guest the way
 * out and back besides. True where the advance is on and that is so: the
 * caller runs the timers up to the target at once and the gate holds the
 * entry until it (moved later if already set), as after a run-ahead; with
 * no wake aimed, nothing is learned from it.
 *
 * Such waits take at most 1/ADVANCE_NEAR_SHARE of the time, in a budget
 * that fills at that rate up to ADVANCE_NEAR_BURST_NS: past it the thread
 * enters and is kicked. A guest whose timers are due at nearly every exit
 * (a timer stressor) would otherwise spin away a tenth of its thread's
 * time, and on a host short of CPUs that time is its neighbours' latency.
 */
#define ADVANCE_NEAR_SHARE 16
#define ADVANCE_NEAR_BURST_NS (2 * ADVANCE_MAX_NS)
bool advance_take_near(struct advance *a, uint64_t target, uint64_t now);
/* Forgets the armed target and any gate (the thread sleeps instead). */
void advance_cancel(struct advance *a);
/* The time to run the timers to, woken at `now`: the target where it is
 * at most the estimate ahead, else now. Woken for the target, early or
 * late, it sets the gate, where the entry learns the error. */
uint64_t advance_catch_up(struct advance *a, uint64_t now);
/* Enter not before this (0: at once). */
uint64_t advance_gate(const struct advance *a);
/*
 * A timer taken in a run-ahead whose own due time `t` proves a little
 * later than the gate (a TSC deadline the guest's clock reaches only
 * then): holds the gate until t, if t is within the estimate of it.
 * False where there is no gate or t is further: the caller re-arms.
 */
bool advance_hold(struct advance *a, uint64_t t);
/* The thread reached the gate at `arrived` (and then waited for it, if
 * that was before it): count, learn, clear the gate. */
void advance_entered(struct advance *a, uint64_t arrived);

#endif
