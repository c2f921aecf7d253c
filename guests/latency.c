// SPDX-License-Identifier: MIT
/*
 * latency: hard one-shot timers at random deadlines 50 µs - 20 ms ahead
 * (count=N, default 200; seed=S, default from the TSC; ahead_us=U: all U
 * µs ahead instead), halting in between. Lateness = handler time from pvclock - deadline. FAIL if any
 * timer fires before its deadline. Under lull slot 3 is used, under QEMU
 * the LAPIC one-shot timer. How the guest waits for each (wait=):
 *   halt    (default) sti; hlt, as an idle kernel does
 *   spin    busy with interrupts on: the VMM must kick it out to deliver
 *   masked  busy with interrupts off until masked_us past the deadline
 *           (default 20000), then halt: the timer waits for the guest
 *   latency: PASS backend=lull count=200 late_p50_ns=.. late_p99_ns=..
 *            late_max_ns=.. seed=S (one line)
 */
#include "guest.h"
#include "rand.h"

#define VEC_SHOT 0x32
#define SLOT_SHOT 3
#define MIN_AHEAD_NS 50000ull
#define MAX_AHEAD_NS 20000000ull
#define MAX_SAMPLES 100000

enum wait_kind { WAIT_HALT, WAIT_SPIN, WAIT_MASKED };

static uint64_t fired_at;
static bool fired;

/* Interrupts are off on entry and on return. */
static void wait_for_timer(enum wait_kind how, uint64_t deadline,
			   uint64_t masked_ns)
{
	if (how == WAIT_SPIN) {
		sti();
		while (!READ_ONCE(fired))
			cpu_relax();
		cli();
		return;
	}
	if (how == WAIT_MASKED)
		while (clock_ns() < deadline + masked_ns)
			cpu_relax();
	while (!READ_ONCE(fired)) {
		sti_hlt();
		cli();
	}
}
static uint64_t samples[MAX_SAMPLES];

static void on_shot(unsigned vector)
{
	(void)vector;
	fired_at = clock_ns();
	WRITE_ONCE(fired, true);
	timer_irq_done();
}

int guest_main(void)
{
	uint64_t count = cmdline_u64("count", 200);
	uint64_t seed = cmdline_u64("seed", rdtsc_ordered());
	uint64_t masked_ns = cmdline_u64("masked_us", 20000) * 1000;
	enum wait_kind how = cmdline_is("wait", "spin")	  ? WAIT_SPIN :
			     cmdline_is("wait", "masked") ? WAIT_MASKED :
							    WAIT_HALT;
	uint64_t min_ahead = MIN_AHEAD_NS, max_ahead = MAX_AHEAD_NS;
	uint64_t early = 0, worst_early = 0;
	struct percentiles p;
	struct rand r;

	if (timer_init() == TIMER_NONE) {
		printf("latency: FAIL no timer backend (hv %s, clock %s)\n",
		       hv_name(rt_boot.hv), clock_name());
		return 1;
	}
	if (count > MAX_SAMPLES)
		count = MAX_SAMPLES;
	if (cmdline_has("ahead_us"))
		min_ahead = max_ahead = cmdline_u64("ahead_us", 0) * 1000;
	rand_seed(&r, seed);
	irq_set_handler(VEC_SHOT, on_shot);
	printf("latency: backend=%s clock=%s: %lu hard one-shots %lu-%lu us ahead, seed=%lu\n",
	       timer_backend_name(), clock_name(), count, min_ahead / 1000,
	       max_ahead / 1000, seed);

	cli();
	for (uint64_t i = 0; i < count; i++) {
		uint64_t ahead = min_ahead +
				 rand_below(&r, max_ahead - min_ahead + 1);
		uint64_t deadline = clock_ns() + ahead;
		long rc;

		fired = false;
		rc = timer_oneshot(SLOT_SHOT, deadline, VEC_SHOT, 0);
		if (rc < 0) {
			printf("latency: FAIL arming timer %lu returned %ld\n", i, rc);
			return 1;
		}
		wait_for_timer(how, deadline, masked_ns);
		if (fired_at < deadline) {
			if (deadline - fired_at > worst_early)
				worst_early = deadline - fired_at;
			if (early++ < 5)
				printf("latency: timer %lu fired %lu ns early\n",
				       i, deadline - fired_at);
			samples[i] = 0;
		} else {
			samples[i] = fired_at - deadline;
		}
	}
	p = percentiles(samples, count);
	if (irq_unexpected_count()) {
		printf("latency: FAIL %lu interrupt(s) on vectors without a handler\n",
		       irq_unexpected_count());
		return 1;
	}
	if (early) {
		printf("latency: FAIL %lu of %lu timers fired early (worst %lu ns) seed=%lu\n",
		       early, count, worst_early, seed);
		return 1;
	}
	printf("latency: PASS backend=%s count=%lu late_p50_ns=%lu late_p99_ns=%lu late_max_ns=%lu seed=%lu\n",
	       timer_backend_name(), count, p.p50, p.p99, p.max, seed);
	return 0;
}
