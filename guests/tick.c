// SPDX-License-Identifier: MIT
/*
 * tick: a classic guest kernel's timer load on vCPU 0.
 *
 * Under lull: a 1000 Hz periodic DEFERRABLE tick (slot 2) and a HARD
 * 100 ms periodic work timer (slot 3) whose handler does a few µs of
 * arithmetic; the vCPU halts in between. Under QEMU (no lull): a 1000 Hz
 * LAPIC periodic tick, and the work runs from the first tick at or after
 * each 100 ms deadline (there is no deferrable timer there). Runs
 * seconds=N (default 5), work_iters=N (default 20).
 *
 * Measures the work timer's lateness in the guest: handler time from
 * pvclock minus the deadline on the ideal grid start + k * 100 ms.
 * PASS needs every work period accounted for (10 per second, run or
 * merged into a late run; one may be lost at the end) and, under lull,
 * none run before its deadline.
 *   tick: PASS backend=lull seconds=5 ticks=.. work=50 merged=0 early=0
 *         late_p50_ns=.. late_p99_ns=.. late_max_ns=.. (one line)
 */
#include "guest.h"

#define VEC_TICK 0x30
#define VEC_WORK 0x31
#define SLOT_TICK 2
#define SLOT_WORK 3
#define TICK_NS 1000000ull
#define WORK_NS 100000000ull
#define MAX_SAMPLES 8192

static uint64_t ticks, works, end_ns, sink;
static bool done;
static struct ptrack work_track;
static uint64_t samples[MAX_SAMPLES];

static uint64_t work_iters;

/*
 * A little arithmetic the compiler cannot drop. The default is small on
 * purpose: on this host's KVM backend guest code is emulated at about a
 * microsecond per instruction (docs/architecture.md), so 20 iterations
 * already cost tens of microseconds; work_iters=N changes it.
 */
static void do_work(void)
{
	uint64_t x = works + 1;

	for (uint64_t i = 0; i < work_iters; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	WRITE_ONCE(sink, x);
}

static void work(uint64_t now)
{
	if (timer_backend() == TIMER_LULL)
		ptrack_fire_merged(&work_track, now,
				   shared_page()->slot[SLOT_WORK].merged);
	else
		ptrack_fire(&work_track, now);
	works++;
	do_work();
	if (now >= end_ns)
		WRITE_ONCE(done, true);
}

static void on_tick(unsigned vector)
{
	uint64_t now;

	(void)vector;
	ticks++;
	/* The lull tick only counts: a clock read is not free here. */
	if (timer_backend() != TIMER_LAPIC) {
		timer_irq_done();
		return;
	}
	now = clock_ns();
	/*
	 * Without lull the work is a timer of the tick's own wheel: it runs
	 * on the first tick at or after its deadline, as in a tickful kernel
	 * (counting ticks instead would drift: this backend loses ticks).
	 */
	if (now >= work_track.first + work_track.k * work_track.period)
		work(now);
	timer_irq_done();
}

static void on_work(unsigned vector)
{
	(void)vector;
	work(clock_ns());
	timer_irq_done();
}

int guest_main(void)
{
	uint64_t seconds = cmdline_u64("seconds", 5);

	work_iters = cmdline_u64("work_iters", 20);
	enum timer_backend be = timer_init();
	uint64_t t0, want;
	struct percentiles p;
	long r1 = 0, r2 = 0;

	if (be == TIMER_NONE) {
		printf("tick: FAIL no timer backend (hv %s, clock %s)\n",
		       hv_name(rt_boot.hv), clock_name());
		return 1;
	}
	irq_set_handler(VEC_TICK, on_tick);
	irq_set_handler(VEC_WORK, on_work);
	printf("tick: backend=%s clock=%s: 1000 Hz %s tick, 100 ms hard work timer, %lu s\n",
	       timer_backend_name(), clock_name(),
	       be == TIMER_LULL ? "deferrable" : "LAPIC periodic", seconds);
	if (be == TIMER_LAPIC)
		printf("tick: LAPIC (%s) timer measured at %lu Hz against %s\n",
		       lapic_mode_name(), lapic_timer_hz(), clock_name());

	cli();
	t0 = clock_ns();
	end_ns = t0 + seconds * 1000000000ull;
	ptrack_init(&work_track, t0 + WORK_NS, WORK_NS,
		    shared_page()->slot[SLOT_WORK].merged, samples,
		    MAX_SAMPLES);
	if (be == TIMER_LULL) {
		r1 = lull_timer_set(SLOT_TICK, t0 + TICK_NS, VEC_TICK,
				    LULL_TIMER_DEFERRABLE | LULL_TIMER_PERIODIC,
				    TICK_NS, 0);
		r2 = lull_timer_set(SLOT_WORK, t0 + WORK_NS, VEC_WORK,
				    LULL_TIMER_PERIODIC, WORK_NS, 0);
	} else {
		r1 = timer_periodic(SLOT_TICK, TICK_NS, VEC_TICK, 0);
	}
	if (r1 < 0 || r2 < 0) {
		printf("tick: FAIL arming the timers returned %ld, %ld\n", r1, r2);
		return 1;
	}
	while (!READ_ONCE(done)) {
		sti_hlt();
		cli();
	}
	timer_stop(SLOT_TICK);
	if (be == TIMER_LULL)
		timer_stop(SLOT_WORK);

	if (be == TIMER_LULL) {
		struct lull_slot_counters *c = shared_page()->slot;

		printf("tick: tick slot delivered=%lu merged=%lu, work slot delivered=%lu merged=%lu\n",
		       c[SLOT_TICK].delivered, c[SLOT_TICK].merged,
		       c[SLOT_WORK].delivered, c[SLOT_WORK].merged);
	}
	p = percentiles(samples, work_track.n);
	want = seconds * (1000000000ull / WORK_NS);
	/*
	 * Every work period must be accounted for: run, or merged into a late
	 * run (a host too busy to wake us within 100 ms collapses ticks, as
	 * --missed-ticks says). One may be lost at the end.
	 */
	if (works + work_track.skipped + 1 < want) {
		printf("tick: FAIL work ran %lu times and %lu were merged, want %lu\n",
		       works, work_track.skipped, want);
		return 1;
	}
	if (irq_unexpected_count()) {
		printf("tick: FAIL %lu interrupt(s) on vectors without a handler\n",
		       irq_unexpected_count());
		return 1;
	}
	if (be == TIMER_LULL && work_track.early) {
		printf("tick: FAIL %lu work timer(s) fired before their deadline\n",
		       work_track.early);
		return 1;
	}
	printf("tick: PASS backend=%s seconds=%lu ticks=%lu work=%lu merged=%lu early=%lu late_p50_ns=%lu late_p99_ns=%lu late_max_ns=%lu\n",
	       timer_backend_name(), seconds, ticks, works, work_track.skipped,
	       work_track.early,
	       p.p50, p.p99, p.max);
	return 0;
}
