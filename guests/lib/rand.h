/* SPDX-License-Identifier: MIT */
/*
 * rand.h: xorshift64* pseudo-random numbers, seeded explicitly so a run
 * can be repeated (guests print their seed and accept seed=N).
 */
#ifndef GUEST_RAND_H
#define GUEST_RAND_H

#include <stdint.h>

struct rand {
	uint64_t s;
};

static inline void rand_seed(struct rand *r, uint64_t seed)
{
	r->s = seed ? seed : 0x9e3779b97f4a7c15ull;
}

static inline uint64_t rand_u64(struct rand *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dull;
}

/* Uniform enough in [0, n) for test purposes; n > 0. */
static inline uint64_t rand_below(struct rand *r, uint64_t n)
{
	return rand_u64(r) % n;
}

#endif
