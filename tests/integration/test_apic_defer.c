// SPDX-License-Identifier: MIT
/*
 * --apic-max-defer end to end (docs/abi.md, "The APIC timer of a guest that
 * cannot mark its timers"): the apic-tick guest halts between ticks at HZ,
 * a period that is no multiple of the bound, in each APIC timer mode. Every
 * tick must wait for the next point of the bound's grid (multiples of 15/16
 * of it) on the host's clock and no longer: never early (the guest's own verdict), late by about half the
 * bound at the median, by no more than the bound plus the runner's wake
 * latency at worst; lull counts the waits as deferred and aligned, and the
 * host wakes about once per tick, not more. The period is well over the
 * bound: a tick later than a period is missed, and the nested runner
 * wakes a thread 70 ms late now and then (its hard timers too), and over
 * 200 ms late where CI loads it (the kvm suite beside it, a sanitizer
 * build): a tick may be the bound plus 300 ms late, short of missed.
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "runner.h"

#define LIMIT_S 60.0
#define HZ 2 /* 500 ms: each tick at another phase of the grid */
#define SECONDS 4
#define BOUND_MS 100
#define MS 1000000ll
/* the median tick: the host's usual wake latency; any tick: a stall */
#define WAKE_LATE_NS (50 * MS)
#define WAKE_LATE_ANY_NS (300 * MS)

static void run_deferred(const char *mode)
{
	char cmdline[96], bound[24];
	const char *json, *pass;
	uint64_t ticks, missed, early, fired, deferred, aligned, wakeups;
	int64_t p50, p99, max;
	struct run r;

	require_guest("apic-tick");
	snprintf(cmdline, sizeof(cmdline), "mode=%s hz=%d seconds=%d linger_ms=0",
		 mode, HZ, SECONDS);
	snprintf(bound, sizeof(bound), "%lld", BOUND_MS * MS);
	run_lull(&r, LIMIT_S, "run", "--apic-max-defer", bound, "--stats", "-",
		 "--cmdline", cmdline, guest("apic-tick"), NULL);

	cr_assert_not(r.killed, "apic-tick ran over %.0f s", LIMIT_S);
	cr_assert_eq(r.status, 0, "%s: status %d\nstdout:\n%s\nstderr:\n%s",
		     mode, r.status, r.out, r.err);
	pass = strstr(r.out, "apic-tick: PASS");
	cr_assert_not_null(pass, "%s", r.out);
	pass = strstr(pass, " ticks=");
	cr_assert(pass && sscanf(pass,
				 " ticks=%lu missed=%lu early=%lu spurious=%*u "
				 "late_p50_ns=%ld late_p99_ns=%ld late_max_ns=%ld",
				 &ticks, &missed, &early, &p50, &p99, &max) == 6,
		  "%s", r.out);
	json = find_json(r.out);
	cr_assert_not_null(json, "no stats:\n%s", r.out);
	fired = vcpu_stat(json, 0, "apic_timer_fired");
	deferred = vcpu_stat(json, 0, "apic_timer_deferred");
	aligned = vcpu_stat(json, 0, "apic_timer_aligned");
	wakeups = vcpu_stat(json, 0, "host_wakeups");
	cr_log_info("%s: %lu ticks, late p50 %ld p99 %ld max %ld ns; fired %lu deferred %lu aligned %lu, host wakeups %lu",
		    mode, ticks, p50, p99, max, fired, deferred, aligned,
		    wakeups);

	/* early ticks: the guest's PASS has judged them */
	cr_assert_eq(missed, 0, "%s: %lu missed ticks, bound under the period",
		     mode, missed);
	cr_assert_geq(ticks, HZ * SECONDS - 1, "%s: %lu ticks", mode, ticks);
	/* each period moves the tick by 31.25 ms (mod the 93.75 ms step):
	 * waits spread over the step, a median near half of it */
	cr_assert(p50 >= BOUND_MS * MS / 5 && p50 <= BOUND_MS * MS + WAKE_LATE_NS,
		  "%s: median lateness %ld ns, bound %d ms", mode, p50, BOUND_MS);
	cr_assert_leq(max, BOUND_MS * MS + WAKE_LATE_ANY_NS,
		      "%s: a tick %ld ns late, bound %d ms", mode, max, BOUND_MS);
	cr_assert_geq(deferred, ticks / 2, "%s: %lu of %lu expiries deferred",
		      mode, deferred, ticks);
	cr_assert_geq(aligned, deferred / 2,
		      "%s: %lu of %lu deferred expiries at their multiple",
		      mode, aligned, deferred);
	cr_assert_geq(fired, ticks, "%s", mode);
	/* one wake per tick, a few more for the guest's start and end */
	cr_assert_leq(wakeups, ticks + 8, "%s: %lu host wakeups for %lu ticks",
		      mode, wakeups, ticks);
	run_free(&r);
}

Test(apic_defer, one_shot_ticks_wait_for_the_grid)
{
	run_deferred("oneshot");
}

Test(apic_defer, tsc_deadline_ticks_wait_for_the_grid)
{
	run_deferred("deadline");
}

Test(apic_defer, periodic_ticks_wait_for_the_grid)
{
	run_deferred("periodic");
}
