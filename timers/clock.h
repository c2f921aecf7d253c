/* SPDX-License-Identifier: MIT */
/* Host time: CLOCK_MONOTONIC in ns, the time base of every timer in lull,
 * CLOCK_MONOTONIC_RAW (the clock KVM counts a held guest TSC on, see
 * vcpu/pvclock.h), CPU time for --stats, and the saturating sum every
 * deadline computation uses. */
#ifndef LULL_CLOCK_H
#define LULL_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Any clock in ns; CLOCK_THREAD_CPUTIME_ID and CLOCK_PROCESS_CPUTIME_ID
 * give the scheduler's runtime, exact where /proc's figures are sampled. */
static inline uint64_t clock_ns(clockid_t which)
{
	struct timespec ts;

	clock_gettime(which, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t clock_now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static inline uint64_t clock_raw_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC_RAW);
}

static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

#endif
