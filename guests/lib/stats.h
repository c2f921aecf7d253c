/* SPDX-License-Identifier: MIT */
/*
 * stats.h: percentiles of a sample array (sorted in place), and waiting
 * helpers shared by the timer guests.
 */
#ifndef GUEST_STATS_H
#define GUEST_STATS_H

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
 * ptrack_fire() is called from the handler with the handler's clock_ns():
 * it records now - deadline(k) for the oldest undelivered tick k, then
 * moves k past now - or by one tick when the VMM delivers every missed
 * tick (LULL_MISSED_ALL), since those catch-up deliveries come back to
 * back. A delivery before deadline(k) is counted in early.
 */
struct ptrack {
	uint64_t first, period, k;
	int catch_up_all;
	uint64_t *samples;
	size_t cap, n;
	uint64_t fires, early, skipped;
};

void ptrack_init(struct ptrack *t, uint64_t first, uint64_t period,
		 int catch_up_all, uint64_t *buf, size_t cap);
void ptrack_fire(struct ptrack *t, uint64_t now);

#endif
