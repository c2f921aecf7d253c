// SPDX-License-Identifier: MIT
#include "timers/advance.h"

void advance_init(struct advance *a, bool enabled)
{
	*a = (struct advance){ .enabled = enabled,
			       .ns = enabled ? ADVANCE_INIT_NS : 0 };
}

/* Nearer than this, the wake ahead of a target would come at once, or
 * within a quarter of the estimate: not worth a sleep. */
static uint64_t near_ns(const struct advance *a)
{
	return a->ns + a->ns / 4;
}

/* With the advance on, `target` a real expiry no earlier than `now`. */
static bool ahead(const struct advance *a, uint64_t target, uint64_t now)
{
	return a->enabled && target && target != UINT64_MAX && target >= now;
}

uint64_t advance_wake_at(struct advance *a, uint64_t target, uint64_t now)
{
	if (!ahead(a, target, now) || target - now < near_ns(a)) {
		a->target = 0;
		return target;
	}
	a->target = target;
	return target > a->ns ? target - a->ns : 0;
}

bool advance_too_near(const struct advance *a, uint64_t target,
		      uint64_t now)
{
	return ahead(a, target, now) && target > now &&
	       target - now < near_ns(a);
}

bool advance_take_near(struct advance *a, uint64_t target, uint64_t now)
{
	uint64_t budget;

	if (!ahead(a, target, now) || target == now || target - now > a->ns)
		return false;
	/* in ns times the share: it fills by the time itself, no remainder */
	budget = a->near_budget;
	if (now > a->near_budget_at)
		budget += now - a->near_budget_at;
	if (!a->near_budget_at ||
	    budget > ADVANCE_NEAR_BURST_NS * ADVANCE_NEAR_SHARE)
		budget = ADVANCE_NEAR_BURST_NS * ADVANCE_NEAR_SHARE;
	a->near_budget_at = now;
	a->near_budget = budget;
	if (budget < (target - now) * ADVANCE_NEAR_SHARE) {
		a->near_over_budget++;
		return false;
	}
	a->near_budget -= (target - now) * ADVANCE_NEAR_SHARE;
	if (target > a->gate)
		a->gate = target;
	a->took_near++;
	return true;
}

void advance_cancel(struct advance *a)
{
	a->target = 0;
	a->gate = a->aimed = 0;
}

uint64_t advance_catch_up(struct advance *a, uint64_t now)
{
	uint64_t target = a->target;

	a->target = 0;
	if (!target || (now < target && target - now > a->ns))
		return now; /* woken for something else, well before */
	/* at the entry it then reaches, the error is learned, either way */
	a->gate = a->aimed = target;
	if (now >= target)
		return now;
	a->ran_ahead++;
	return target;
}

uint64_t advance_gate(const struct advance *a)
{
	return a->gate;
}

bool advance_hold(struct advance *a, uint64_t t)
{
	if (!a->gate)
		return false;
	if (t <= a->gate)
		return true;
	if (t - a->gate > a->ns)
		return false;
	a->gate = t;
	return true;
}

void advance_entered(struct advance *a, uint64_t arrived)
{
	uint64_t gate = a->gate, aimed = a->aimed;
	uint64_t error;

	if (!gate)
		return;
	a->gate = a->aimed = 0;
	if (arrived < gate) {
		a->waits++;
		a->wait_ns += gate - arrived;
	} else {
		a->late++;
		a->late_ns += arrived - gate;
	}
	/* the estimate answers for the expiry it aimed at, not for a hold */
	if (!aimed)
		return;
	if (arrived < aimed) {
		error = aimed - arrived;
		if (error <= ADVANCE_MAX_NS)
			a->ns -= a->ns < error / 8 ? a->ns : error / 8;
		return;
	}
	error = arrived - aimed;
	if (error <= ADVANCE_MAX_NS) {
		a->ns += error / 8;
		if (a->ns > ADVANCE_MAX_NS)
			a->ns = ADVANCE_MAX_NS;
	}
}
