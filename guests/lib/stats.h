/* SPDX-License-Identifier: MIT */
/*
 * stats.h: percentiles of a sample array (sorted in place), and waiting
 * helpers shared by the timer guests.
 */
#ifndef GUEST_STATS_H
#define GUEST_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct percentiles {
	uint64_t p50, p99, max;
};

void sort_u64(uint64_t *a, size_t n);
/* Sorts a; all zero when n == 0. pNN is the nearest-rank percentile. */
struct percentiles percentiles(uint64_t *a, size_t n);

/*
 * Lateness of a periodic timer against its ideal grid first + k * period.
 * Call a ptrack_fire*() from the handler with the handler's clock_ns(); it
 * records now - deadline(k) for the oldest undelivered tick k, then moves
 * k past the ticks this delivery stands for:
 *   ptrack_fire_merged()  under lull: 1 + the growth of the slot's shared
 *                         page "merged" counter since the last delivery
 *                         (exact for every missed-ticks policy);
 *   ptrack_fire()         without counters (LAPIC): to the first grid
 *                         point after now.
 * A delivery before deadline(k) counts in early and records nothing.
 */
struct ptrack {
	uint64_t first, period, k;
	uint64_t merged_seen;
	uint64_t *samples;
	size_t cap, n;
	uint64_t fires, early, skipped;
};

void ptrack_init(struct ptrack *t, uint64_t first, uint64_t period,
		 uint64_t merged_now, uint64_t *buf, size_t cap);
void ptrack_fire(struct ptrack *t, uint64_t now);
void ptrack_fire_merged(struct ptrack *t, uint64_t now, uint64_t merged_now);

/*
 * lull only, interrupts off. Returns once everything raised on this vCPU so
 * far has been handled: a hard one-shot on `vector`, due now, in `slot`;
 * of the vectors owed at once the highest is delivered first, so `vector`
 * must be below the ones drained. *seen is its handler's count.
 */
void lull_drain(unsigned slot, unsigned vector, const uint64_t *seen);

/*
 * One line per timer slot for bench/soak, which reconciles it with lull's
 * --stats (docs/guests.md):
 *   NAME: account vcpu=I slot=S kind=hard|deferrable first_ns=F
 *         period_ns=P lo_ns=L hi_ns=H handled=N delivered=D merged=M
 * delivered and merged are this vCPU's shared-page counters for the slot.
 * A periodic slot (P > 0) must have counted, delivered + merged, every grid
 * point F + k * P up to L (lull ran the wheel at or after L) and none
 * after H (the slot was stopped before H). Call after lull_drain().
 */
struct account {
	const char *guest;
	unsigned slot;
	bool deferrable;
	uint64_t first, period, lo, hi;
	uint64_t handled;
};

void account_print(const struct account *a);

#endif
