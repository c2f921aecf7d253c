/* SPDX-License-Identifier: MIT */
/*
 * The timer workload that wheel-bench and wheel-ab share, so that a ratio
 * from one and a figure from the other are about the same timers: N timers,
 * the odd ones deferrable, expiries uniform over ~1.07 s from START_NS, and
 * for each one another ns in the same tick and a time FAR_NS later (the two
 * modifies). Also the clock and the allocation both tools use.
 */
#ifndef LULL_BENCH_WHEEL_WORKLOAD_H
#define LULL_BENCH_WHEEL_WORKLOAD_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "timers/wheel.h"

#define START_NS (1ull << 30) /* arbitrary, tick-aligned start */
#define RANGE_NS (1ull << 30) /* expiries spread over ~1.07 s */
#define FAR_NS (RANGE_NS / 2) /* mod_far moves a timer this much later */
#define TIMERS_PER_STEP 16 /* expire: average timers run per advance */

static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* calloc, or exit with "<program>: out of memory". */
static inline void *bench_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p) {
		fprintf(stderr, "%s: out of memory\n",
			program_invocation_short_name);
		exit(1);
	}
	return p;
}

/* splitmix64: the same sequence for every tool and run. */
static inline uint64_t bench_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

#define BENCH_SEED 0x1234567

/* Timer i's expiry and the two it is modified to. */
static inline void bench_expiries(uint64_t *state, uint64_t *expires,
				  uint64_t *same_tick, uint64_t *far)
{
	uint64_t tick = 1ull << WHEEL_DEFAULT_TICK_SHIFT;

	*expires = START_NS + 1 + bench_rand(state) % RANGE_NS;
	/* Another ns inside the same tick: the same wheel slot. */
	*same_tick = (*expires & ~(tick - 1)) + bench_rand(state) % tick;
	*far = *expires + FAR_NS;
}

static const uint64_t *bench_sort_key;

static inline int bench_by_expiry(const void *a, const void *b)
{
	uint64_t x = bench_sort_key[*(const size_t *)a],
		 y = bench_sort_key[*(const size_t *)b];

	return x < y ? -1 : x > y;
}

/* Sort the timer indices @idx[0..n) by @expires, earliest first. */
static inline void bench_sort_by_expiry(size_t *idx, size_t n,
					const uint64_t *expires)
{
	bench_sort_key = expires;
	qsort(idx, n, sizeof(*idx), bench_by_expiry);
}

/* The advance step of the expire row: ~TIMERS_PER_STEP timers a step. */
static inline uint64_t bench_expire_step(size_t n)
{
	size_t steps = n / TIMERS_PER_STEP;

	return RANGE_NS / (steps ? steps : 1);
}

#endif /* LULL_BENCH_WHEEL_WORKLOAD_H */
