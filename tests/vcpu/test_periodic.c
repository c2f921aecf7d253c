// SPDX-License-Identifier: MIT
/* The missed-ticks rule every periodic timer follows (timers/periodic.h). */
#include <criterion/criterion.h>

#include "lull_abi.h"
#include "timers/periodic.h"
#include "vcpu/apic.h"

#define PERIOD 1000000ull
#define DUE 5000000ull

Test(periodic, on_time_delivers_one_in_every_policy)
{
	unsigned policies[] = { LULL_MISSED_ONE, LULL_MISSED_ALL,
				LULL_MISSED_NONE };

	for (unsigned i = 0; i < 3; i++) {
		struct periodic_catch_up c =
			periodic_catch_up(policies[i], DUE, PERIOD, 0, DUE + 10);

		cr_assert_eq(c.deliver, 1, "policy %u", policies[i]);
		cr_assert_eq(c.merged, 0, "policy %u", policies[i]);
		cr_assert_eq(c.next, DUE + PERIOD, "policy %u", policies[i]);
		cr_assert_not(c.late, "policy %u", policies[i]);
	}
}

/* 9.5 periods late: nine whole periods were missed. */
Test(periodic, one_delivers_one_and_merges_the_missed)
{
	struct periodic_catch_up c = periodic_catch_up(
		LULL_MISSED_ONE, DUE, PERIOD, 0, DUE + 9 * PERIOD + PERIOD / 2);

	cr_assert_eq(c.deliver, 1);
	cr_assert_eq(c.merged, 9);
	cr_assert(c.late);
	cr_assert_eq(c.next, DUE + 10 * PERIOD, "the original phase");
}

Test(periodic, all_delivers_every_tick)
{
	struct periodic_catch_up c = periodic_catch_up(
		LULL_MISSED_ALL, DUE, PERIOD, 0, DUE + 9 * PERIOD + PERIOD / 2);

	cr_assert_eq(c.deliver, 10);
	cr_assert_eq(c.merged, 0);
	cr_assert_eq(c.next, DUE + 10 * PERIOD);
}

Test(periodic, all_is_capped_at_what_a_vector_may_owe)
{
	struct periodic_catch_up c = periodic_catch_up(
		LULL_MISSED_ALL, DUE, PERIOD, 0, DUE + 5000 * PERIOD);

	cr_assert_eq(c.deliver, APIC_MAX_OWED);
	cr_assert_eq(c.merged, 5001 - APIC_MAX_OWED);
}

Test(periodic, none_drops_a_late_tick_entirely)
{
	struct periodic_catch_up c = periodic_catch_up(
		LULL_MISSED_NONE, DUE, PERIOD, 0, DUE + 3 * PERIOD + 1);

	cr_assert_eq(c.deliver, 0);
	cr_assert_eq(c.merged, 4, "the three missed and the late one");
	cr_assert(c.late);
	cr_assert_eq(c.next, DUE + 4 * PERIOD);
}

/* A tick deferred within its bound is not late: it ticks, the boundaries
 * it waited over are merged; so is one a little past it, as a tick woken
 * by its bound always is (slop, the host's wake). A whole period past the
 * bound, none drops it. */
Test(periodic, none_delivers_a_tick_within_its_grace)
{
	struct periodic_catch_up c = periodic_catch_up(
		LULL_MISSED_NONE, DUE, PERIOD, 4 * PERIOD, DUE + 4 * PERIOD);

	cr_assert_eq(c.deliver, 1);
	cr_assert_eq(c.merged, 4);
	cr_assert(c.late, "late, and delivered");
	cr_assert_eq(c.next, DUE + 5 * PERIOD);
	c = periodic_catch_up(LULL_MISSED_NONE, DUE, PERIOD, 4 * PERIOD,
			      DUE + 4 * PERIOD + PERIOD / 2);
	cr_assert_eq(c.deliver, 1);
	cr_assert_eq(c.merged, 4);
	c = periodic_catch_up(LULL_MISSED_NONE, DUE, PERIOD, 4 * PERIOD,
			      DUE + 5 * PERIOD + 1);
	cr_assert_eq(c.deliver, 0);
	cr_assert_eq(c.merged, 6);
}

Test(periodic, next_saturates_instead_of_wrapping)
{
	struct periodic_catch_up c = periodic_catch_up(
		LULL_MISSED_ONE, UINT64_MAX - 10, LULL_HORIZON_NS, 0,
		UINT64_MAX);

	cr_assert_eq(c.next, UINT64_MAX);
}
