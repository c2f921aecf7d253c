// SPDX-License-Identifier: MIT
#include "timers/advance.h"

void advance_init(struct advance *a, bool enabled)
{
	*a = (struct advance){ .enabled = enabled,
			       .ns = enabled ? ADVANCE_INIT_NS : 0 };
}

uint64_t advance_wake_at(struct advance *a, uint64_t target)
{
	if (!a->enabled || !target || target == UINT64_MAX) {
		a->target = 0;
		return target;
	}
	a->target = target;
	return target > a->ns ? target - a->ns : 0;
}

void advance_cancel(struct advance *a)
{
	a->target = 0;
	a->gate = 0;
}

uint64_t advance_catch_up(struct advance *a, uint64_t now)
{
	uint64_t target = a->target;

	a->target = 0;
	if (!target || (now < target && target - now > a->ns))
		return now; /* woken for something else, well before */
	/* at the entry it then reaches, the error is learned, either way */
	a->gate = target;
	if (now >= target)
		return now;
	a->ran_ahead++;
	return target;
}

uint64_t advance_gate(const struct advance *a)
{
	return a->gate;
}

void advance_entered(struct advance *a, uint64_t arrived)
{
	uint64_t gate = a->gate;
	uint64_t error;

	if (!gate)
		return;
	a->gate = 0;
	if (arrived < gate) {
		/* early by `error`: the wait was the estimate's excess */
		error = gate - arrived;
		a->waits++;
		a->wait_ns += error;
		if (error <= ADVANCE_MAX_NS)
			a->ns -= a->ns < error / 8 ? a->ns : error / 8;
		return;
	}
	error = arrived - gate;
	a->late++;
	a->late_ns += error;
	if (error <= ADVANCE_MAX_NS) {
		a->ns += error / 8;
		if (a->ns > ADVANCE_MAX_NS)
			a->ns = ADVANCE_MAX_NS;
	}
}
