// SPDX-License-Identifier: MIT
/*
 * Lateness attribution: a late hard timer's span laid over the phases the
 * vCPU thread marked, each piece charged to its cause.
 */
#include <criterion/criterion.h>

#include "vcpu/lateness.h"

#define MS 1000000ull

static struct lateness l;

static void setup(void)
{
	lateness_init(&l, 1 * MS);
}

TestSuite(lateness, .init = setup, .fini = NULL);

/* One loop of a halted vCPU: catch up, sleep, wake at `wake`. */
static void halt(uint64_t at, uint64_t wake)
{
	lateness_mark(&l, LATE_PHASE_TAKE, at);
	lateness_mark(&l, LATE_PHASE_IDLE, at + 1000);
	lateness_mark(&l, LATE_PHASE_VMM, wake);
}

Test(lateness, on_time_or_within_the_threshold_is_not_counted)
{
	struct late_event e;

	halt(0, 10 * MS);
	lateness_mark(&l, LATE_PHASE_TAKE, 10 * MS + 100);
	cr_assert_not(lateness_delivered(&l, 0xec, 10 * MS, 10 * MS + 500, &e));
	cr_assert_not(lateness_delivered(&l, 0xec, 10 * MS, 11 * MS, &e));
	cr_assert_not(lateness_delivered(&l, 0xec, 10 * MS, 9 * MS, &e));
	cr_assert_eq(l.events, 0);
}

Test(lateness, a_late_wake_is_wake)
{
	struct late_event e;

	/* due at 10 ms, the host woke the halted thread at 60 ms */
	halt(0, 60 * MS);
	lateness_mark(&l, LATE_PHASE_TAKE, 60 * MS + 2000);
	cr_assert(lateness_delivered(&l, 0xec, 10 * MS, 60 * MS + 5000, &e));
	cr_assert_eq(e.late_ns, 50 * MS + 5000);
	cr_assert_eq(e.ns[LATE_WAKE], 50 * MS);
	cr_assert_eq(e.ns[LATE_VMM], 5000);
	cr_assert_eq(e.main_cause, LATE_WAKE);
	cr_assert_eq(l.events, 1);
	cr_assert_eq(l.main_cause_events[LATE_WAKE], 1);
	cr_assert_eq(l.worst[0].late_ns, e.late_ns);
}

Test(lateness, in_the_guest_before_the_catch_up_is_kick_after_it_masked)
{
	struct late_event e;

	/* entered at 0; due at 1 ms; out at 21 ms (late kick); taken at
	 * 21.01; the guest then ran with interrupts off until 51 ms */
	lateness_mark(&l, LATE_PHASE_TAKE, 0);
	lateness_mark(&l, LATE_PHASE_GUEST, 100);
	lateness_mark(&l, LATE_PHASE_VMM, 21 * MS);
	lateness_mark(&l, LATE_PHASE_TAKE, 21 * MS + 10000);
	lateness_mark(&l, LATE_PHASE_GUEST, 21 * MS + 20000);
	lateness_mark(&l, LATE_PHASE_VMM, 51 * MS);
	lateness_mark(&l, LATE_PHASE_TAKE, 51 * MS + 10000);
	cr_assert(lateness_delivered(&l, 0xec, 1 * MS, 51 * MS + 20000, &e));
	cr_assert_eq(e.ns[LATE_KICK], 20 * MS);
	cr_assert_eq(e.ns[LATE_MASKED], 30 * MS - 20000);
	cr_assert_eq(e.ns[LATE_VMM], 40000);
	cr_assert_eq(e.main_cause, LATE_MASKED);
}

Test(lateness, a_halt_after_the_catch_up_is_masked)
{
	struct late_event e;

	/* taken at 5 ms, but the guest halted with interrupts off */
	lateness_mark(&l, LATE_PHASE_GUEST, 0);
	lateness_mark(&l, LATE_PHASE_VMM, 5 * MS);
	halt(5 * MS, 40 * MS);
	lateness_mark(&l, LATE_PHASE_TAKE, 40 * MS);
	cr_assert(lateness_delivered(&l, 0x30, 4 * MS, 40 * MS, &e));
	cr_assert_eq(e.ns[LATE_KICK], 1 * MS);
	cr_assert_eq(e.ns[LATE_MASKED], 35 * MS - 1000);
	cr_assert_eq(e.ns[LATE_VMM], 1000);
}

Test(lateness, before_the_oldest_mark_is_unseen)
{
	struct late_event e;
	uint64_t t = 100 * MS;

	for (unsigned i = 0; i < 2 * LATE_MARKS; i++, t += 10000)
		lateness_mark(&l, i % 2 ? LATE_PHASE_GUEST : LATE_PHASE_TAKE,
			      t);
	cr_assert(lateness_delivered(&l, 0x30, 0, t, &e));
	cr_assert_eq(e.ns[LATE_UNSEEN], 100 * MS + LATE_MARKS * 10000);
	uint64_t sum = 0;
	for (unsigned c = 0; c < LATE_CAUSES; c++)
		sum += e.ns[c];
	cr_assert_eq(sum, e.late_ns);
}

/*
 * Taken at its catch-up, then held off by the guest through far more
 * phases than the marks keep: the running sums charge it all, none unseen.
 */
Test(lateness, a_timer_held_off_for_many_exits_is_charged_in_full)
{
	struct late_event e;
	uint64_t t;

	lateness_mark(&l, LATE_PHASE_GUEST, 0);
	lateness_mark(&l, LATE_PHASE_VMM, 2 * MS);
	lateness_mark(&l, LATE_PHASE_TAKE, 2 * MS + 1000);
	lateness_taken(&l, 0xec, 1 * MS);
	/* 1000 exits: 90 us in the guest (interrupts off), 10 us in lull */
	t = 2 * MS + 1000;
	for (unsigned i = 0; i < 1000; i++) {
		lateness_mark(&l, LATE_PHASE_GUEST, t + 1000);
		lateness_mark(&l, LATE_PHASE_VMM, t + 91000);
		lateness_mark(&l, LATE_PHASE_TAKE, t + 95000);
		t += 100000;
	}
	cr_assert(lateness_delivered(&l, 0xec, 1 * MS, t + 2000, &e));
	cr_assert_eq(e.late_ns, t + 2000 - 1 * MS);
	cr_assert_eq(e.ns[LATE_UNSEEN], 0);
	cr_assert_eq(e.ns[LATE_KICK], 1 * MS);
	cr_assert_eq(e.ns[LATE_MASKED], 1000 * 90000);
	cr_assert_eq(e.ns[LATE_VMM], e.late_ns - 1 * MS - 1000 * 90000);
	cr_assert_eq(e.main_cause, LATE_MASKED);
	/* delivered, it is followed no more: the marks alone see little */
	cr_assert(lateness_delivered(&l, 0xec, 1 * MS, t + 3000, &e));
	cr_assert_gt(e.ns[LATE_UNSEEN], 0);
}

Test(lateness, the_largest_are_kept_largest_first)
{
	struct late_event e;
	const uint64_t late_ms[] = { 3, 9, 2, 7, 5, 8 };

	halt(0, 1);
	for (unsigned i = 0; i < 6; i++)
		cr_assert(lateness_delivered(&l, (uint8_t)i, 1000 * MS,
					     (1000 + late_ms[i]) * MS, &e));
	cr_assert_eq(l.events, 6);
	cr_assert_eq(l.worst[0].late_ns, 9 * MS);
	cr_assert_eq(l.worst[1].late_ns, 8 * MS);
	cr_assert_eq(l.worst[2].late_ns, 7 * MS);
	cr_assert_eq(l.worst[3].late_ns, 5 * MS);
}
