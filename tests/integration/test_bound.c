// SPDX-License-Identifier: MIT
/*
 * A deferrable timer's max deferral (docs/abi.md "Timers", tolerance), end
 * to end with the defer-bound guest: on a vCPU that only halts, a bounded
 * deferrable one-shot wakes it by itself at deadline + bound, one host
 * wakeup each; an unbounded one never does, and waits for a hard timer.
 * Lateness is the guest's (pvclock), the wakeups lull's --stats. The
 * windows are wide: wake latency on the nested runner is several ms.
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "runner.h"

#define LIMIT_S 60.0
#define COUNT 3
/*
 * The guest must reach its halt before the deadline, or the timer fires on
 * time on a vCPU that still runs, as a deferrable timer should: arming is
 * two hypercalls, which a sanitizer build in a loaded nested runner once
 * stretched past 20 ms.
 */
#define AHEAD_MS 200
#define BOUND_MS 100
#define WAKE_MS 400 /* the unbounded rounds' hard one-shot */
#define MS 1000000ull
/*
 * early: the host's slop and clock rounding. late: a wakeup on a slow
 * host, which the nested runner stretches to 70 ms now and then (its hard
 * timers too), so one round gets LATE_ANY_NS; the best round must be
 * within LATE_NS. An ignored bound shows as the guard, a second later.
 */
#define EARLY_NS (1 * MS)
#define LATE_NS (50 * MS)
#define LATE_ANY_NS (250 * MS)

struct bound_run {
	uint64_t late_min, late_max, after_wake; /* the guest's PASS line */
	uint64_t wakeups, fired_hard, fired_deferred; /* vCPU 0's --stats */
};

static struct bound_run run_bound(const char *cmdline)
{
	struct bound_run b = { 0 };
	const char *json, *pass;
	struct run r;

	require_guest("defer-bound");
	run_lull(&r, LIMIT_S, "run", "--stats", "-", "--cmdline", cmdline,
		 guest("defer-bound"), NULL);

	cr_assert_not(r.killed, "defer-bound ran over %.0f s", LIMIT_S);
	cr_assert_eq(r.status, 0, "%s: status %d\nstdout:\n%s\nstderr:\n%s",
		     cmdline, r.status, r.out, r.err);
	pass = strstr(r.out, "defer-bound: PASS");
	cr_assert_not_null(pass, "%s", r.out);
	pass = strstr(pass, " late_min_ns=");
	cr_assert(pass && sscanf(pass, " late_min_ns=%lu late_max_ns=%lu after_wake=%lu",
				 &b.late_min, &b.late_max, &b.after_wake) == 3,
		  "%s", r.out);
	json = find_json(r.out);
	cr_assert_not_null(json, "no stats:\n%s", r.out);
	b.wakeups = vcpu_stat(json, 0, "host_wakeups");
	b.fired_hard = vcpu_stat(json, 0, "timers_fired_hard");
	b.fired_deferred = vcpu_stat(json, 0, "timers_fired_deferred");
	cr_log_info("%s: late %lu..%lu ns, after the hard one %lu, host wakeups %lu, fired hard %lu deferred %lu",
		    cmdline, b.late_min, b.late_max, b.after_wake, b.wakeups,
		    b.fired_hard, b.fired_deferred);
	run_free(&r);
	return b;
}

/*
 * Bounded: fires at deadline + bound, not at the deadline (the vCPU was
 * halted) nor at the hard guard a second later, and each round costs one
 * host wakeup, its own. One spare wakeup for a stray one on a busy host.
 */
Test(defer_bound, bounded_deferrable_wakes_the_vcpu_at_its_bound)
{
	char cmdline[96];
	struct bound_run b;

	snprintf(cmdline, sizeof(cmdline), "count=%d ahead_ms=%d bound_ms=%d",
		 COUNT, AHEAD_MS, BOUND_MS);
	b = run_bound(cmdline);

	cr_assert_geq(b.late_min + EARLY_NS, BOUND_MS * MS,
		      "fired %lu ns after its deadline, before its %d ms bound",
		      b.late_min, BOUND_MS);
	cr_assert_leq(b.late_min, BOUND_MS * MS + LATE_NS,
		      "every round fired %lu ns or more after its deadline, bound %d ms",
		      b.late_min, BOUND_MS);
	cr_assert_leq(b.late_max, BOUND_MS * MS + LATE_ANY_NS,
		      "fired %lu ns after its deadline, bound %d ms", b.late_max,
		      BOUND_MS);
	cr_assert_eq(b.after_wake, 0, "%lu round(s) ended by the hard guard",
		     b.after_wake);
	cr_assert_eq(b.fired_deferred, COUNT, "%lu deferrable expiries",
		     b.fired_deferred);
	cr_assert_eq(b.fired_hard, 0, "%lu hard expiries", b.fired_hard);
	cr_assert_geq(b.wakeups, COUNT, "%lu host wakeups for %d rounds",
		      b.wakeups, COUNT);
	cr_assert_leq(b.wakeups, COUNT + 1, "%lu host wakeups for %d rounds",
		      b.wakeups, COUNT);
}

/*
 * Unbounded (tolerance 0): the halted vCPU sleeps through the deadline;
 * the timer comes only with the hard one-shot WAKE_MS after the arming,
 * at the same host wakeup.
 */
Test(defer_bound, unbounded_deferrable_waits_for_a_hard_wake)
{
	char cmdline[96];
	struct bound_run b;

	snprintf(cmdline, sizeof(cmdline),
		 "count=%d ahead_ms=%d bound_ms=0 wake_ms=%d", COUNT, AHEAD_MS,
		 WAKE_MS);
	b = run_bound(cmdline);

	cr_assert_eq(b.after_wake, COUNT,
		     "only %lu of %d rounds waited for the hard one-shot",
		     b.after_wake, COUNT);
	cr_assert_geq(b.late_min + EARLY_NS, (WAKE_MS - AHEAD_MS) * MS,
		      "fired %lu ns after its deadline, before the hard wake",
		      b.late_min);
	cr_assert_eq(b.fired_deferred, COUNT, "%lu deferrable expiries",
		     b.fired_deferred);
	cr_assert_eq(b.fired_hard, COUNT, "%lu hard expiries", b.fired_hard);
	cr_assert_leq(b.wakeups, COUNT + 1, "%lu host wakeups for %d rounds",
		      b.wakeups, COUNT);
}
