/* SPDX-License-Identifier: MIT */
/*
 * The reference model the wheel is checked against: a plain array of timers,
 * searched and sorted the obvious way. It restates the contract of
 * timers/wheel.h in the simplest code possible; it shares no code with it.
 */
#ifndef LULL_TESTS_TIMERS_MODEL_H
#define LULL_TESTS_TIMERS_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct model_timer {
	bool pending;
	bool deferrable;
	uint64_t expires;
	uint64_t tolerance;
	uint64_t seq; /* arm order */
};

struct model {
	unsigned tick_shift;
	uint64_t now;
	uint64_t next_seq;
	unsigned nr;
	struct model_timer *t;
};

void model_init(struct model *m, struct model_timer *t, unsigned nr,
		uint64_t now, unsigned tick_shift);
/* Arms timer @id; returns 1 if it was pending, like wheel_add. */
int model_add(struct model *m, unsigned id, uint64_t expires,
	      uint64_t tolerance);
int model_del(struct model *m, unsigned id);

/* Smallest multiple of the tick >= @ns, saturating at UINT64_MAX. */
uint64_t model_ceil_tick(const struct model *m, uint64_t ns);
/* Whether an advance to @now runs @t (it must be pending). */
bool model_runs_by(const struct model *m, const struct model_timer *t,
		   uint64_t now);
bool model_hard_wakes(const struct model_timer *t);

uint64_t model_next_hard_expiry(const struct model *m);
uint64_t model_next_expiry(const struct model *m);
size_t model_pending(const struct model *m, bool deferrable);

/*
 * The timers an advance to @now runs, in run order, written to @ids (room
 * for m->nr); returns how many. Does not change the model.
 */
unsigned model_due(const struct model *m, uint64_t now, unsigned *ids);

#endif /* LULL_TESTS_TIMERS_MODEL_H */
