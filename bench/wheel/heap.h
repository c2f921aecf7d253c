/* SPDX-License-Identifier: MIT */
/*
 * The baseline the wheel is measured against: a binary min-heap of timers,
 * the structure most VMMs and event loops use (QEMU's timer lists aside).
 * One heap per kind, so "next hard expiry" is the hard heap's root, as fair
 * a match for the wheel's separate bases as a heap allows.
 */
#ifndef LULL_BENCH_WHEEL_HEAP_H
#define LULL_BENCH_WHEEL_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HEAP_NOT_QUEUED SIZE_MAX

struct heap_timer {
	uint64_t expires;
	uint64_t seq; /* arm order, for equal expiries */
	size_t idx; /* position in its heap, HEAP_NOT_QUEUED if idle */
	void (*fn)(struct heap_timer *t, uint64_t now);
	bool deferrable;
};

struct heap {
	struct heap_timer **node;
	size_t nr, cap;
};

struct heap_timers {
	struct heap kind[2]; /* [0] hard, [1] deferrable */
	uint64_t next_seq;
};

int heap_timers_init(struct heap_timers *h, size_t cap);
void heap_timers_free(struct heap_timers *h);
void heap_timer_init(struct heap_timer *t,
		     void (*fn)(struct heap_timer *t, uint64_t now),
		     bool deferrable);
/* Like wheel_add/wheel_mod/wheel_del: 1 if it was pending, else 0. */
int heap_add(struct heap_timers *h, struct heap_timer *t, uint64_t expires);
int heap_del(struct heap_timers *h, struct heap_timer *t);
uint64_t heap_next_hard_expiry(const struct heap_timers *h);
unsigned heap_advance(struct heap_timers *h, uint64_t now);

#endif /* LULL_BENCH_WHEEL_HEAP_H */
