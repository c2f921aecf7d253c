/* SPDX-License-Identifier: MIT */
/*
 * A periodic timer that ran late: how many ticks it delivers, how many it
 * merges, and when it runs next. One rule for every periodic timer lull
 * keeps (PV timer slots and the APIC timer), after Xen's vpt:
 *   one  - deliver one tick now, merge the rest (one_missed_tick_pending)
 *   all  - deliver every tick, one per interrupt window, including ticks
 *          that come due while an earlier one is still owed
 *          (no_delay_for_missed_ticks)
 *   none - deliver nothing for a late tick; the next boundary ticks as
 *          usual (no_missed_ticks_pending)
 * A tick is late under `none` only a whole period past its grace, the
 * lateness it was allowed (a hard timer's slack, a bounded deferral).
 * Within that, one tick is delivered and the boundaries it skipped are
 * merged; otherwise a tick deferred by a period or more would never be
 * delivered at all. The period on top is for the host: a tick that wakes
 * its vCPU at its bound runs after the bound by --slop and the host's wake
 * latency, and is not a missed tick for that.
 * The next expiry stays on the timer's original phase in every mode.
 */
#ifndef LULL_PERIODIC_H
#define LULL_PERIODIC_H

#include <stdbool.h>
#include <stdint.h>

/* The most deliveries one vector may owe (the "all" policy): no guest can
 * make the count grow without bound. The APIC's IRR keeps the same cap. */
#define PERIODIC_MAX_OWED 1024u

struct periodic_catch_up {
	uint64_t deliver; /* ticks to raise now, at most PERIODIC_MAX_OWED */
	uint64_t merged; /* ticks that will never be delivered */
	bool late; /* found a whole period or more past its expiry */
	uint64_t next; /* the next expiry, saturated */
};

/* The timer was due at `expiry` (period > 0), runs at `now`; `policy` is
 * LULL_MISSED_*. */
struct periodic_catch_up periodic_catch_up(unsigned policy, uint64_t expiry,
					   uint64_t period, uint64_t grace,
					   uint64_t now);

#endif
