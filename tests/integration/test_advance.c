// SPDX-License-Identifier: MIT
/*
 * The timer advance end to end (docs/abi.md, "Timer advance"): the
 * apic-tick guest's TSC-deadline tick at 1 kHz, halting between ticks,
 * with the advance (the default) and without it. With it the wakes for
 * the ticks reach the gate, the estimate stays within its bound, the
 * guest finds no tick early (its own verdict), and the host wakes no more
 * often than without; without it nothing runs ahead. And an idle VM whose
 * timers are all deferrable spends nothing on it, nor on the halt poll,
 * which spins for a hard expiry near a halt rather than sleep.
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "runner.h"

#define LIMIT_S 60.0
#define SECONDS "2"

static uint64_t advance_stat(const char *json, const char *path)
{
	char full[96];
	uint64_t v = 0;

	snprintf(full, sizeof(full), "vcpus[0].timer_advance.%s", path);
	cr_assert(stats_u64(json, full, &v), "no %s in --stats:\n%s", full,
		  json);
	return v;
}

/* apic-tick, mode=deadline at `hz`, with one more lull option (and its
 * value) if given; returns its ticks, the --stats JSON in r. */
static uint64_t run_tick(struct run *r, const char *hz, const char *option,
			 const char *value)
{
	char cmdline[96];
	const char *pass;
	uint64_t ticks = 0;

	require_guest("apic-tick");
	snprintf(cmdline, sizeof(cmdline),
		 "mode=deadline hz=%s seconds=" SECONDS " linger_ms=0", hz);
	run_lull(r, LIMIT_S, "run", "--stats", "-", "--cmdline", cmdline,
		 guest("apic-tick"), option, value, NULL);
	cr_assert_not(r->killed, "apic-tick ran over %.0f s", LIMIT_S);
	cr_assert_eq(r->status, 0, "status %d\nstdout:\n%s\nstderr:\n%s",
		     r->status, r->out, r->err);
	/* early ticks: the guest's PASS has judged them */
	pass = strstr(r->out, "apic-tick: PASS");
	cr_assert(pass && (pass = strstr(pass, " ticks=")) &&
			  sscanf(pass, " ticks=%lu", &ticks) == 1,
		  "%s", r->out);
	cr_assert_not_null(find_json(r->out), "no stats:\n%s", r->out);
	return ticks;
}

Test(advance, hard_ticks_run_ahead_and_wait_for_their_expiry)
{
	struct run r;
	uint64_t ticks = run_tick(&r, "1000", NULL, NULL);
	const char *json = find_json(r.out);
	uint64_t ran_ahead = advance_stat(json, "halted.ran_ahead") +
			     advance_stat(json, "running.ran_ahead");
	uint64_t waits = advance_stat(json, "halted.waits") +
			 advance_stat(json, "running.waits");
	uint64_t wait_ns = advance_stat(json, "halted.wait_ns") +
			   advance_stat(json, "running.wait_ns");
	uint64_t late = advance_stat(json, "halted.late") +
			advance_stat(json, "running.late");
	uint64_t ns = advance_stat(json, "halted.ns");
	uint64_t took_near = advance_stat(json, "running.took_near");
	uint64_t wakeups = vcpu_stat(json, 0, "host_wakeups");

	cr_log_info("%lu ticks: %lu woken ahead, %lu taken near, %lu waits "
		    "(%lu ns), %lu late entries, estimate %lu ns, %lu host "
		    "wakeups", ticks, ran_ahead, took_near, waits, wait_ns,
		    late, ns, wakeups);
	cr_assert(strstr(json, "\"timer_advance\": {\"enabled\": true"),
		  "%s", json);
	/*
	 * Wakes for ticks reach the gate, early (a wait) or late. How many
	 * run ahead depends on the host: where its way back is longer than
	 * the bound (the nested runner), none arrives early.
	 */
	cr_assert_gt(waits + late, 0, "no entry reached the gate");
	cr_assert_leq(ns, 500000, "estimate %lu ns past the bound", ns);
	/* a wait is never longer than the estimate's bound (a TSC-deadline
	 * hold adds at most as much again) */
	cr_assert_leq(wait_ns, waits * 1000000);
	/* one wake per tick, as without the advance */
	cr_assert_leq(wakeups, ticks + 8, "%lu host wakeups for %lu ticks",
		      wakeups, ticks);
	run_free(&r);
}

Test(advance, off_nothing_runs_ahead)
{
	struct run r;
	uint64_t ticks = run_tick(&r, "1000", "--no-timer-advance", NULL);
	const char *json = find_json(r.out);

	cr_assert(strstr(json, "\"timer_advance\": {\"enabled\": false"),
		  "%s", json);
	cr_assert_eq(advance_stat(json, "halted.ran_ahead"), 0);
	cr_assert_eq(advance_stat(json, "running.took_near"), 0);
	cr_assert_eq(advance_stat(json, "halted.waits"), 0);
	cr_assert_eq(advance_stat(json, "running.waits"), 0);
	/* nor polls for an expiry near a halt: no estimate, nothing near */
	cr_assert_eq(vcpu_stat(json, 0, "halt_polls"), 0);
	cr_assert_eq(vcpu_stat(json, 0, "halt_polls_near"), 0);
	cr_assert_leq(vcpu_stat(json, 0, "host_wakeups"), ticks + 8);
	run_free(&r);
}

/* Deferrable timers only, halted: no wake, so no advance and no wait. */
Test(advance, costs_nothing_where_every_timer_is_deferrable)
{
	struct run r;
	const char *json;

	require_guest("idle");
	/* the halt poll on, at its longest: still nothing to spin for */
	run_lull(&r, LIMIT_S, "run", "--stats", "-", "--cmdline", "seconds=1",
		 guest("idle"), "--halt-poll", "1000000", NULL);
	cr_assert_eq(r.status, 0, "status %d\nstdout:\n%s\nstderr:\n%s",
		     r.status, r.out, r.err);
	json = find_json(r.out);
	cr_assert_not_null(json, "no stats:\n%s", r.out);
	/* the one hard one-shot that ends the run may be waited for */
	cr_assert_leq(advance_stat(json, "halted.waits"), 1);
	cr_assert_eq(advance_stat(json, "running.waits"), 0);
	/* nor on the halt poll: no hard expiry is near a halt */
	cr_assert_leq(vcpu_stat(json, 0, "halt_polls"), 1);
	run_free(&r);
}

/*
 * The halt poll: ticks 500 us apart, polled for up to 1 ms, halt with the
 * next tick within the poll on any host where the guest halts at all.
 * Those halts spin instead of sleeping (a poll, no host wakeup), no tick
 * is early by the guest's own check, and with --halt-poll 0 every halt
 * sleeps.
 */
Test(advance, a_halt_near_a_hard_expiry_spins_instead_of_sleeping)
{
	struct run r;
	uint64_t ticks = run_tick(&r, "2000", "--halt-poll", "1000000");
	const char *json = find_json(r.out);
	uint64_t polls = vcpu_stat(json, 0, "halt_polls");
	uint64_t poll_ns = vcpu_stat(json, 0, "halt_poll_ns");
	uint64_t given_way = vcpu_stat(json, 0, "halt_polls_given_way");
	uint64_t halts = vcpu_stat(json, 0, "halts");
	uint64_t wakeups = vcpu_stat(json, 0, "host_wakeups");

	cr_log_info("%lu ticks, %lu halts: %lu polls (%lu ns), %lu host "
		    "wakeups", ticks, halts, polls, poll_ns, wakeups);
	cr_assert_gt(polls, 0, "no halt polled: %lu halts, %lu wakeups",
		     halts, wakeups);
	/*
	 * How long a poll spins is not checked here: the host's clock runs
	 * on while its CPU runs something else (another thread, or in the
	 * nested runner the other emulated CPU), which no switch count
	 * shows. Its bound is the poll's target, which the advance's unit
	 * tests check; its cost is a benchmark's figure.
	 */
	/* a halt sleeps (a wakeup) or polls, seldom both, but for a poll
	 * another thread cut short, after which the halt sleeps */
	cr_assert_leq(wakeups + polls, halts + given_way + halts / 10 + 8,
		      "%lu wakeups and %lu polls (%lu given way) for %lu halts",
		      wakeups, polls, given_way, halts);
	run_free(&r);

	/* without --halt-poll, only a halt nearer its expiry than the
	 * advance's reach polls */
	ticks = run_tick(&r, "2000", "--halt-poll", "0");
	json = find_json(r.out);
	polls = vcpu_stat(json, 0, "halt_polls");
	cr_log_info("--halt-poll 0: %lu ticks, %lu near polls (%lu ns)", ticks,
		    polls, vcpu_stat(json, 0, "halt_poll_ns"));
	cr_assert_eq(polls, vcpu_stat(json, 0, "halt_polls_near"));
	run_free(&r);
}
