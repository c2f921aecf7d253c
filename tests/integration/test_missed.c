// SPDX-License-Identifier: MIT
/*
 * --missed-ticks end to end (docs/abi.md "Missed periodic ticks"): the
 * tick guest's deferrable periodic tick on a vCPU that halts through
 * TICKS_PER_WAKE of its periods between two wakes of the hard work timer.
 * Each wake finds the tick TICKS_PER_WAKE - 1 whole periods late, and the
 * policy decides what the guest gets for it:
 *   one  - one late tick, the others merged
 *   all  - every tick, one per interrupt window
 *   none - nothing (all merged), unless the tick was allowed that lateness
 * The shared-page counters and the guest's own handler count come from
 * its "tick: account" line for the tick slot, after it drained everything
 * lull raised. Periods of 20 ms and 200 ms are long enough that a slow
 * emulated host (wake latency of several ms) cannot move a tick from one
 * wake to another.
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "runner.h"

#define LIMIT_S 60.0
#define SECONDS 2
#define TICK_US 20000
#define WORK_MS 200
#define TICKS_PER_WAKE (WORK_MS * 1000 / TICK_US)
/* ticks that come due in the run, and wakes of the work timer */
#define EXPECT_TICKS (SECONDS * 1000000 / TICK_US)
#define EXPECT_WAKES (SECONDS * 1000 / WORK_MS)

struct tick_counts {
	uint64_t handled, delivered, merged; /* the tick slot */
	uint64_t works; /* work timer handler runs */
	/* --stats: periodic expiries a whole period late, and of those the
	 * ones delivered */
	uint64_t late, late_delivered;
};

/* Reads slot's "tick: account" line; false if there is none. */
static bool account(const char *out, unsigned slot, uint64_t *handled,
		    uint64_t *delivered, uint64_t *merged)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), "tick: account vcpu=0 slot=%u ", slot);
	p = strstr(out, key);
	if (!p)
		return false;
	p = strstr(p, " handled=");
	return p && sscanf(p, " handled=%lu delivered=%lu merged=%lu", handled,
			   delivered, merged) == 3;
}

/*
 * Runs tick under policy, with each slot on its own vector: with the
 * upcall, `all`'s owed ticks collapse into one bit (docs/abi.md "Upcall
 * delivery"), and this is about the ticks themselves. extra: more of the
 * guest's command line, or "".
 */
static struct tick_counts run_tick(const char *policy, const char *extra)
{
	struct tick_counts c = { 0 };
	uint64_t d, m;
	char cmdline[160];
	struct run r;

	require_guest("tick");
	snprintf(cmdline, sizeof(cmdline),
		 "seconds=%d tick_us=%d work_ms=%d delivery=vector %s", SECONDS,
		 TICK_US, WORK_MS, extra);
	run_lull(&r, LIMIT_S, "run", "--missed-ticks", policy, "--stats", "-",
		 "--cmdline", cmdline, guest("tick"), NULL);

	cr_assert_not(r.killed, "tick ran over %.0f s", LIMIT_S);
	cr_assert_eq(r.status, 0, "--missed-ticks %s: status %d\nstdout:\n%s\nstderr:\n%s",
		     policy, r.status, r.out, r.err);
	cr_assert(strstr(r.out, "tick: PASS"), "%s", r.out);
	cr_assert(account(r.out, 2, &c.handled, &c.delivered, &c.merged),
		  "no account line for the tick slot:\n%s", r.out);
	cr_assert(account(r.out, 3, &c.works, &d, &m),
		  "no account line for the work slot:\n%s", r.out);
	cr_assert(find_json(r.out), "no --stats:\n%s", r.out);
	c.late = vcpu_stat(find_json(r.out), 0, "ticks_late");
	c.late_delivered = vcpu_stat(find_json(r.out), 0, "ticks_late_delivered");
	cr_log_info("--missed-ticks %s %s: tick handled %lu delivered %lu merged %lu, work %lu, late %lu (delivered %lu)",
		    policy, extra, c.handled, c.delivered, c.merged, c.works,
		    c.late, c.late_delivered);
	/*
	 * Whatever the policy, every period that came due is counted once,
	 * delivered or merged; far fewer means the tick did not run at all
	 * and the assertions below would prove nothing.
	 */
	cr_assert_geq(10 * (c.delivered + c.merged), 8 * EXPECT_TICKS,
		      "%s: only %lu of about %d ticks counted:\n%s", policy,
		      c.delivered + c.merged, EXPECT_TICKS, r.out);
	cr_assert_geq(10 * c.works, 8 * EXPECT_WAKES,
		      "%s: the work timer ran %lu times, want about %d:\n%s",
		      policy, c.works, EXPECT_WAKES, r.out);
	/* every delivery reached the guest's handler */
	cr_assert_eq(c.handled, c.delivered, "%s: handled %lu, delivered %lu",
		     policy, c.handled, c.delivered);
	run_free(&r);
	return c;
}

/* one (the default): each wake brings one late tick, the rest merged. */
Test(missed_ticks, one_delivers_one_late_tick_per_wake)
{
	struct tick_counts c = run_tick("one", "");

	cr_assert_geq(10 * c.late, 8 * c.works,
		      "%lu late ticks for %lu wakes: the tick did not wait",
		      c.late, c.works);
	cr_assert_eq(c.late_delivered, c.late, "delivered %lu of %lu late ticks",
		     c.late_delivered, c.late);
	cr_assert_geq(10 * c.delivered, 8 * c.works,
		      "delivered %lu ticks for %lu wakes", c.delivered, c.works);
	cr_assert_leq(10 * c.delivered, 2 * EXPECT_TICKS,
		      "delivered %lu of %d ticks: more than one per wake",
		      c.delivered, EXPECT_TICKS);
	cr_assert_geq(10 * c.merged, 8 * (EXPECT_TICKS - EXPECT_WAKES),
		      "merged only %lu", c.merged);
}

/* all: each wake brings every tick it missed, one interrupt each. */
Test(missed_ticks, all_delivers_every_missed_tick)
{
	struct tick_counts c = run_tick("all", "");

	cr_assert_geq(10 * c.delivered, 8 * EXPECT_TICKS,
		      "delivered %lu of %d ticks", c.delivered, EXPECT_TICKS);
	cr_assert_leq(10 * c.merged, 2 * EXPECT_TICKS, "merged %lu of %d ticks",
		      c.merged, EXPECT_TICKS);
}

/*
 * none: an unbounded deferrable tick allows no lateness, so the tick a
 * wake finds whole periods late is dropped, every time; lull's own count
 * of late periodic expiries says so exactly. Ticks that come due while
 * the vCPU is running are on time and delivered: how many depends on how
 * long a wake keeps the vCPU running, which a slow host stretches, so
 * the guest's own delivered count is not bounded here.
 */
Test(missed_ticks, none_drops_the_late_tick)
{
	struct tick_counts c = run_tick("none", "");

	cr_assert_geq(10 * c.late, 8 * c.works,
		      "%lu late ticks for %lu wakes: the tick did not wait",
		      c.late, c.works);
	cr_assert_eq(c.late_delivered, 0, "delivered %lu of %lu late ticks",
		     c.late_delivered, c.late);
	cr_assert_geq(10 * c.merged, 8 * EXPECT_TICKS, "merged only %lu of %d",
		      c.merged, EXPECT_TICKS);
}

/*
 * none, with the deferral bounded beyond the 180 ms (plus the wake's own
 * latency) a tick waits for the work timer: that lateness was allowed, so
 * each wake delivers the tick once and merges the boundaries it waited
 * over, as under `one`. 1.5 work periods leave a slow wake 120 ms and
 * keep the bound past the next work wake, so the tick never wakes the
 * vCPU by itself.
 */
Test(missed_ticks, none_delivers_a_tick_within_its_bound)
{
	char extra[32];
	struct tick_counts c;

	snprintf(extra, sizeof(extra), "tick_tol_us=%d", WORK_MS * 1500);
	c = run_tick("none", extra);

	cr_assert_geq(10 * c.delivered, 8 * c.works,
		      "delivered %lu ticks for %lu wakes", c.delivered, c.works);
	cr_assert_leq(10 * c.delivered, 2 * EXPECT_TICKS,
		      "delivered %lu of %d ticks: more than one per wake",
		      c.delivered, EXPECT_TICKS);
}

/*
 * none, with the deferral bounded at 2.5 tick periods, well before the work
 * timer: the tick wakes its halted vCPU at its bound, some 2.5 periods
 * late, about every 3 periods. It runs after the bound by the slop and the
 * host's wake latency, which must not make it a missed tick: each such
 * wake delivers it (about 33 in the run, against 10 work wakes).
 */
Test(missed_ticks, none_delivers_a_tick_woken_by_its_bound)
{
	char extra[32];
	struct tick_counts c;

	snprintf(extra, sizeof(extra), "tick_tol_us=%d", TICK_US * 5 / 2);
	c = run_tick("none", extra);

	cr_assert_geq(c.delivered, 2 * EXPECT_WAKES,
		      "delivered %lu ticks (%lu work wakes): the bound's own wakes delivered nothing",
		      c.delivered, c.works);
}

/*
 * The work timer is hard and, with both slots on the upcall, each of its
 * expiries finds the deferred tick's upcall already owed and only sets its
 * bit: --stats still times every such delivery as the hard timer's
 * (hard_lateness_ns), once per wake.
 */
Test(missed_ticks, a_hard_timer_riding_the_ticks_upcall_is_timed)
{
	uint64_t timed, works = 0, d, m;
	char cmdline[96];
	struct run r;

	require_guest("tick");
	snprintf(cmdline, sizeof(cmdline), "seconds=%d tick_us=%d work_ms=%d",
		 SECONDS, TICK_US, WORK_MS);
	run_lull(&r, LIMIT_S, "run", "--stats", "-", "--cmdline", cmdline,
		 guest("tick"), NULL);
	cr_assert_eq(r.status, 0, "status %d\nstdout:\n%s\nstderr:\n%s",
		     r.status, r.out, r.err);
	cr_assert(strstr(r.out, "tick: PASS backend=lull delivery=upcall"),
		  "%s", r.out);
	cr_assert(account(r.out, 3, &works, &d, &m),
		  "no account line for the work slot:\n%s", r.out);
	cr_assert(find_json(r.out), "no --stats:\n%s", r.out);
	timed = vcpu_stat(find_json(r.out), 0, "hard_lateness_ns.count");
	cr_log_info("work ran %lu times, hard deliveries timed %lu", works,
		    timed);
	cr_assert_geq(10 * timed, 8 * works,
		      "%lu hard deliveries timed for %lu work wakes", timed,
		      works);
	run_free(&r);
}
