// SPDX-License-Identifier: MIT
/*
 * The timer advance's estimate (timers/advance.h), on laid-out times: the
 * wake moves ahead by the estimate, a wake within it runs ahead to the
 * target behind a gate at the target, the error at the gate corrects the
 * estimate by an eighth, outliers teach nothing, and it never leaves
 * [0, ADVANCE_MAX_NS].
 */
#include <criterion/criterion.h>

#include "timers/advance.h"

#define T 1000000000ull /* a target far from zero */
/* armed this long before: advanced at any estimate */
#define FAR (4 * ADVANCE_MAX_NS)

Test(advance, off_wakes_at_the_target_and_never_gates)
{
	struct advance a;

	advance_init(&a, false);
	cr_assert_eq(advance_wake_at(&a, T, T - FAR), T);
	cr_assert_eq(advance_catch_up(&a, T - 5), T - 5);
	cr_assert_eq(advance_gate(&a), 0);
}

Test(advance, wakes_ahead_runs_to_the_target_and_gates_there)
{
	struct advance a;

	advance_init(&a, true);
	cr_assert_eq(advance_wake_at(&a, T, T - FAR), T - ADVANCE_INIT_NS);
	/* woken 2 us after the early wake: the timers run to T, held at T */
	cr_assert_eq(advance_catch_up(&a, T - ADVANCE_INIT_NS + 2000), T);
	cr_assert_eq(advance_gate(&a), T);
	cr_assert_eq(a.ran_ahead, 1);
}

Test(advance, a_wake_well_before_is_not_the_target_s)
{
	struct advance a;

	advance_init(&a, true);
	advance_wake_at(&a, T, T - FAR);
	/* an IPI woke it 1 ms before: run to now, no gate, target gone */
	cr_assert_eq(advance_catch_up(&a, T - 1000000), T - 1000000);
	cr_assert_eq(advance_gate(&a), 0);
	cr_assert_eq(advance_catch_up(&a, T - 1000), T - 1000);
}

Test(advance, early_arrival_waits_and_shrinks_the_estimate)
{
	struct advance a;

	advance_init(&a, true);
	advance_wake_at(&a, T, T - FAR);
	advance_catch_up(&a, T - ADVANCE_INIT_NS);
	/* at the gate 8 us early: waited 8 us, the estimate loses 1 us */
	advance_entered(&a, T - 8000);
	cr_assert_eq(a.waits, 1);
	cr_assert_eq(a.wait_ns, 8000);
	cr_assert_eq(a.ns, ADVANCE_INIT_NS - 1000);
	cr_assert_eq(advance_gate(&a), 0);
}

Test(advance, late_wake_grows_the_estimate)
{
	struct advance a;

	advance_init(&a, true);
	advance_wake_at(&a, T, T - FAR);
	/* woken 16 us after the target: no run-ahead, but the gate is there
	 * to learn from, and the entry 16 us late adds 2 us */
	cr_assert_eq(advance_catch_up(&a, T + 16000), T + 16000);
	advance_entered(&a, T + 16000);
	cr_assert_eq(a.late, 1);
	cr_assert_eq(a.late_ns, 16000);
	cr_assert_eq(a.ns, ADVANCE_INIT_NS + 2000);
	cr_assert_eq(a.ran_ahead, 0);
}

Test(advance, an_outlier_teaches_nothing)
{
	struct advance a;

	advance_init(&a, true);
	advance_wake_at(&a, T, T - FAR);
	advance_catch_up(&a, T + 10 * ADVANCE_MAX_NS);
	advance_entered(&a, T + 10 * ADVANCE_MAX_NS);
	cr_assert_eq(a.ns, ADVANCE_INIT_NS);
	cr_assert_eq(a.late, 1);
}

/* Converges on a steady way back, and stays inside its bounds. */
Test(advance, converges_and_stays_bounded)
{
	struct advance a;
	uint64_t target = T;

	advance_init(&a, true);
	for (int i = 0; i < 200; i++, target += 1000000) {
		uint64_t woke = advance_wake_at(&a, target, target - FAR) + 15000;

		advance_entered(&a, (advance_catch_up(&a, woke), woke));
	}
	cr_assert(a.ns > 14900 && a.ns <= 15000, "estimate %lu", a.ns);
	for (int i = 0; i < 200; i++, target += 1000000) {
		uint64_t woke = advance_wake_at(&a, target, target - FAR) + ADVANCE_MAX_NS;

		advance_catch_up(&a, woke);
		advance_entered(&a, woke);
		cr_assert_leq(a.ns, ADVANCE_MAX_NS);
	}
	for (int i = 0; i < 200; i++, target += 1000000) {
		uint64_t woke = advance_wake_at(&a, target, target - FAR);

		advance_catch_up(&a, woke);
		advance_entered(&a, woke); /* arrives a whole estimate early */
	}
	cr_assert_lt(a.ns, 1000, "estimate %lu", a.ns);
}

/* A timer due a little past the gate holds it there; further, it may not. */
Test(advance, hold_moves_the_gate_within_the_estimate_only)
{
	struct advance a;

	advance_init(&a, true);
	cr_assert_not(advance_hold(&a, T), "no gate, nothing to hold");
	advance_wake_at(&a, T, T - FAR);
	advance_catch_up(&a, T - 1000);
	cr_assert(advance_hold(&a, T - 500), "before the gate: held already");
	cr_assert_eq(advance_gate(&a), T);
	cr_assert(advance_hold(&a, T + 3000));
	cr_assert_eq(advance_gate(&a), T + 3000);
	cr_assert_not(advance_hold(&a, T + 3000 + ADVANCE_INIT_NS + 1));
	/* arrived at T: on time for the expiry it aimed at, so it learns
	 * nothing, though it waited 3 us for the hold */
	advance_entered(&a, T);
	cr_assert_eq(a.ns, ADVANCE_INIT_NS);
	cr_assert_eq(a.wait_ns, 3000);
}

/* Nearer than 5/4 of the estimate: a storm of timers; not advanced. */
Test(advance, a_near_target_is_not_advanced)
{
	const uint64_t near = ADVANCE_INIT_NS + ADVANCE_INIT_NS / 4;
	struct advance a;

	advance_init(&a, true);
	cr_assert_eq(advance_wake_at(&a, T, T - near + 1), T);
	cr_assert_eq(advance_catch_up(&a, T - 1000), T - 1000);
	cr_assert_eq(advance_gate(&a), 0);
	cr_assert_eq(advance_wake_at(&a, T, T - near), T - ADVANCE_INIT_NS);
}

/* What advance_wake_at leaves alone as near, a halt polls for: exactly
 * that, and only with the advance on. */
Test(advance, too_near_is_what_wake_at_leaves_alone)
{
	const uint64_t near = ADVANCE_INIT_NS + ADVANCE_INIT_NS / 4;
	const uint64_t near_max = ADVANCE_MAX_NS + ADVANCE_MAX_NS / 4;
	struct advance a, off;

	advance_init(&a, true);
	advance_init(&off, false);
	cr_assert(advance_too_near(&a, T, T - near + 1));
	cr_assert(advance_too_near(&a, T, T - 1));
	cr_assert_not(advance_too_near(&a, T, T - near));
	cr_assert_not(advance_too_near(&a, T, T), "due now: nothing to poll");
	cr_assert_not(advance_too_near(&a, T, T + 1), "already past");
	cr_assert_not(advance_too_near(&a, UINT64_MAX, T));
	cr_assert_not(advance_too_near(&a, 0, 0));
	cr_assert_not(advance_too_near(&off, T, T - 1));
	/* it follows the estimate */
	a.ns = ADVANCE_MAX_NS;
	cr_assert(advance_too_near(&a, T, T - ADVANCE_MAX_NS));
	cr_assert_not(advance_too_near(&a, T, T - 2 * ADVANCE_MAX_NS));
	/* and at the bound, a near poll lasts at most 5/4 of it */
	cr_assert(advance_too_near(&a, T, T - near_max + 1));
	cr_assert_not(advance_too_near(&a, T, T - near_max));
}

/* Out of the guest already: an expiry within the estimate is taken now
 * and gated, and teaches the estimate nothing, waited for or not. */
Test(advance, takes_an_expiry_within_the_estimate_at_the_gate)
{
	struct advance a, off;

	advance_init(&a, true);
	advance_init(&off, false);
	cr_assert_not(advance_take_near(&off, T, T - 1));
	cr_assert_not(advance_take_near(&a, T, T - ADVANCE_INIT_NS - 1));
	cr_assert_not(advance_take_near(&a, T, T), "due now: no gate needed");
	cr_assert_not(advance_take_near(&a, UINT64_MAX, T));
	cr_assert_not(advance_take_near(&a, 0, 0));
	cr_assert_eq(advance_gate(&a), 0);

	cr_assert(advance_take_near(&a, T, T - ADVANCE_INIT_NS));
	cr_assert_eq(advance_gate(&a), T);
	cr_assert_eq(a.took_near, 1);
	advance_entered(&a, T - ADVANCE_INIT_NS);
	cr_assert_eq(a.waits, 1);
	cr_assert_eq(a.wait_ns, ADVANCE_INIT_NS);
	cr_assert_eq(a.ns, ADVANCE_INIT_NS, "a hold is no aim");
	cr_assert_eq(advance_gate(&a), 0);

	/* late at the gate: counted, not learned */
	cr_assert(advance_take_near(&a, T, T - 1000));
	advance_entered(&a, T + 5000);
	cr_assert_eq(a.late, 1);
	cr_assert_eq(a.ns, ADVANCE_INIT_NS);

	/* a run-ahead's gate moves later, and still learns its own aim */
	cr_assert_eq(advance_wake_at(&a, T, T - FAR), T - ADVANCE_INIT_NS);
	cr_assert_eq(advance_catch_up(&a, T - ADVANCE_INIT_NS), T);
	cr_assert(advance_take_near(&a, T + 4000, T));
	cr_assert_eq(advance_gate(&a), T + 4000);
	advance_entered(&a, T + 8000);
	cr_assert_eq(a.ns, ADVANCE_INIT_NS + 8000 / 8);
}

/* Near waits have a budget: a burst, then 1/ADVANCE_NEAR_SHARE of the time. */
Test(advance, near_waits_keep_within_their_share_of_the_time)
{
	const uint64_t wait = ADVANCE_MAX_NS;
	const unsigned burst = ADVANCE_NEAR_BURST_NS / ADVANCE_MAX_NS;
	uint64_t now = T;
	struct advance a;

	advance_init(&a, true);
	a.ns = ADVANCE_MAX_NS;
	for (unsigned i = 0; i < burst; i++)
		cr_assert(advance_take_near(&a, now + wait, now), "take %u", i);
	cr_assert_not(advance_take_near(&a, now + wait, now));
	cr_assert_eq(a.near_over_budget, 1);
	/* not yet a whole wait's share later */
	now += ADVANCE_NEAR_SHARE * wait - 1000;
	cr_assert_not(advance_take_near(&a, now + wait, now));
	now += 1000;
	cr_assert(advance_take_near(&a, now + wait, now));
	cr_assert_eq(a.took_near, burst + 1);
	/* a long quiet spell refills it to the burst, no more */
	now += 1000 * ADVANCE_NEAR_BURST_NS;
	for (unsigned i = 0; i < burst; i++)
		cr_assert(advance_take_near(&a, now + wait, now));
	cr_assert_not(advance_take_near(&a, now + wait, now));
}
