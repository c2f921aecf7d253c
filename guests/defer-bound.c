// SPDX-License-Identifier: MIT
/*
 * defer-bound: a deferrable one-shot's max deferral (docs/abi.md "Timers",
 * tolerance) on a vCPU that does nothing else but halt.
 *
 * Each of count=N (default 3) rounds arms slot 3 DEFERRABLE ahead_ms=D
 * (default 20) ahead with tolerance bound_ms=T (default 100; 0 is
 * unbounded), and halts until it fires. A bounded timer must wake the
 * vCPU by itself at deadline + T. An unbounded one must not wake it at
 * all: the HARD one-shot on slot 4, wake_ms=W ahead (default D + T +
 * 1000, later than any bound), brings it. For a bounded timer that hard
 * one-shot is only a guard, so that a bound lull ignores ends the round
 * late instead of hanging the guest; it is stopped once the round is over.
 *
 * Lateness is the handler's clock_ns() (pvclock) minus the deadline; the
 * guest only fails a timer that fires before its deadline and leaves the
 * window to the caller (tests/integration/test_bound.c), which also
 * reads --stats. Vector 0x33 (the hard one) is above 0x32, so when both
 * are owed at one wake the hard one is handled first. lull only.
 *   defer-bound: round I late_ns=L after_wake=0|1
 *   defer-bound: PASS count=N ahead_ns= bound_ns= wake_ns= late_min_ns=
 *                late_max_ns= after_wake=K (one line)
 */
#include "guest.h"

#define VEC_DEFER 0x32
#define VEC_WAKE 0x33
#define SLOT_DEFER 3
#define SLOT_WAKE 4

static uint64_t defer_at, wake_at;
static bool defer_fired, wake_fired;

static void on_defer(unsigned vector)
{
	(void)vector;
	defer_at = clock_ns();
	WRITE_ONCE(defer_fired, true);
}

static void on_wake(unsigned vector)
{
	(void)vector;
	wake_at = clock_ns();
	WRITE_ONCE(wake_fired, true);
}

int guest_main(void)
{
	uint64_t count = cmdline_u64("count", 3);
	uint64_t ahead = cmdline_u64("ahead_ms", 20) * 1000000ull;
	uint64_t bound = cmdline_u64("bound_ms", 100) * 1000000ull;
	uint64_t wake = cmdline_u64("wake_ms", 0) * 1000000ull;
	uint64_t late_min = UINT64_MAX, late_max = 0, after_wake = 0;

	if (rt_boot.hv != HV_LULL || timer_init() != TIMER_LULL) {
		printf("defer-bound: SKIP needs lull's deferrable timers (hv %s)\n",
		       hv_name(rt_boot.hv));
		return RT_EXIT_SKIP;
	}
	if (!wake)
		wake = ahead + bound + 1000000000ull;
	if (wake <= ahead + bound) {
		printf("defer-bound: FAIL wake_ms must be past ahead_ms + bound_ms\n");
		return 1;
	}
	irq_set_handler(VEC_DEFER, on_defer);
	irq_set_handler(VEC_WAKE, on_wake);
	printf("defer-bound: %lu deferrable one-shot(s) %lu us ahead, bound %lu us, hard one-shot %lu us ahead\n",
	       count, ahead / 1000, bound / 1000, wake / 1000);

	cli();
	for (uint64_t i = 0; i < count; i++) {
		uint64_t now = clock_ns(), deadline = now + ahead, late;
		long r1, r2;

		defer_fired = wake_fired = false;
		r1 = lull_timer_set(SLOT_DEFER, deadline, VEC_DEFER,
				    LULL_TIMER_DEFERRABLE, 0, bound);
		r2 = lull_timer_set(SLOT_WAKE, now + wake, VEC_WAKE, 0, 0, 0);
		if (r1 < 0 || r2 < 0) {
			printf("defer-bound: FAIL arming the timers returned %ld, %ld\n",
			       r1, r2);
			return 1;
		}
		while (!READ_ONCE(defer_fired)) {
			sti_hlt();
			cli();
		}
		/*
		 * The guard must not fire in a later round. Had it fired, it
		 * did so at the wake that brought the deferred timer, and its
		 * higher vector was handled first: nothing of it is owed.
		 */
		lull_timer_stop(SLOT_WAKE);
		if (defer_at < deadline) {
			printf("defer-bound: FAIL round %lu fired %lu ns before its deadline\n",
			       i, deadline - defer_at);
			return 1;
		}
		late = defer_at - deadline;
		if (late < late_min)
			late_min = late;
		if (late > late_max)
			late_max = late;
		after_wake += wake_fired && wake_at <= defer_at;
		printf("defer-bound: round %lu late_ns=%lu after_wake=%d\n", i,
		       late, wake_fired && wake_at <= defer_at);
	}
	if (irq_unexpected_count()) {
		printf("defer-bound: FAIL %lu interrupt(s) on vectors without a handler\n",
		       irq_unexpected_count());
		return 1;
	}
	printf("defer-bound: PASS count=%lu ahead_ns=%lu bound_ns=%lu wake_ns=%lu late_min_ns=%lu late_max_ns=%lu after_wake=%lu\n",
	       count, ahead, bound, wake, late_min, late_max, after_wake);
	return 0;
}
