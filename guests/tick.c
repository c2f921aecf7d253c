// SPDX-License-Identifier: MIT
/*
 * tick: a classic guest kernel's timer load on vCPU 0.
 *
 * Under lull: a 1000 Hz periodic DEFERRABLE tick (slot 2) and a HARD
 * 100 ms periodic work timer (slot 3) whose handler does a few µs of
 * arithmetic; the vCPU halts in between. Under QEMU (no lull): a 1000 Hz
 * LAPIC periodic tick, and the work runs from the first tick at or after
 * each 100 ms deadline (there is no deferrable timer there). Runs
 * seconds=N (default 5), work_iters=N (default 20); tick_us=N (default
 * 1000) and work_ms=N (default 100) change the two periods;
 * tick_tol_us=N (lull; default 0, unbounded) bounds the tick's deferral,
 * which is its grace under --missed-ticks none.
 * delivery=upcall|vector (lull; default upcall where lull has it): both
 * slots bound to the upcall (upcall.h), so a wake that runs the work and
 * the deferred tick is one interrupt, or each slot on its own vector.
 *
 * Measures the work timer's lateness in the guest: handler time from
 * pvclock minus the deadline on the ideal grid start + k * 100 ms.
 * PASS needs every work period accounted for (10 per second, run or
 * merged into a late run; one may be lost at the end) and, under lull,
 * none run before its deadline. Under lull it then stops both timers, waits
 * until everything raised is handled (lull_drain) and prints one
 * "tick: account" line per slot for bench/soak.
 *   tick: PASS backend=lull delivery=upcall seconds=5 ticks=.. work=50 merged=0 early=0
 *         late_p50_ns=.. late_p99_ns=.. late_max_ns=.. (one line)
 */
#include "guest.h"

#define VEC_FENCE 0x2f /* below the two it drains */
#define VEC_TICK 0x30
#define VEC_WORK 0x31
#define SLOT_TICK 2
#define SLOT_WORK 3
#define SLOT_FENCE 4
#define MAX_SAMPLES 8192

static uint64_t tick_ns, work_ns, tick_tol_ns;
static uint64_t ticks, works, fences, end_ns, sink;
static bool done;
static struct ptrack work_track;
static uint64_t samples[MAX_SAMPLES];

static uint64_t work_iters;
static int delivery;

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

static void tick_slot(unsigned slot)
{
	on_tick(slot);
}

static void work_slot(unsigned slot)
{
	on_work(slot);
}

static void on_fence(unsigned vector)
{
	(void)vector;
	fences++;
}

/*
 * Both timers are stopped, the work timer first. lull ran the wheel at or
 * after the last work deadline with the tick still armed, so every tick up
 * to that deadline is counted; none after `hi`.
 */
static void account(uint64_t t0, uint64_t hi)
{
	struct account a = { .guest = "tick", .hi = hi };

	lull_drain(SLOT_FENCE, VEC_FENCE, &fences);
	a.lo = work_track.first + (work_track.k - 1) * work_ns;
	a.slot = SLOT_TICK;
	a.deferrable = true;
	a.first = t0 + tick_ns;
	a.period = tick_ns;
	a.handled = ticks;
	account_print(&a);
	a.slot = SLOT_WORK;
	a.deferrable = false;
	a.first = work_track.first;
	a.period = work_ns;
	a.handled = works;
	account_print(&a);
	a.slot = SLOT_FENCE;
	a.first = a.period = 0;
	a.handled = fences;
	account_print(&a);
	/* interrupts, as lull counts its injections: upcalls, not slots */
	printf("tick: account vcpu=0 irqs=%lu\n",
	       delivery == DELIVERY_UPCALL ? upcall_count() + fences :
					     ticks + works + fences);
}

int guest_main(void)
{
	uint64_t seconds = cmdline_u64("seconds", 5);

	work_iters = cmdline_u64("work_iters", 20);
	tick_ns = cmdline_u64("tick_us", 1000) * 1000;
	work_ns = cmdline_u64("work_ms", 100) * 1000000;
	tick_tol_ns = cmdline_u64("tick_tol_us", 0) * 1000;
	enum timer_backend be = timer_init();
	uint64_t t0, want;
	struct percentiles p;
	long r1 = 0, r2 = 0;
	unsigned bound = 0, vec_tick = VEC_TICK, vec_work = VEC_WORK;

	if (!tick_ns || !work_ns) {
		printf("tick: FAIL tick_us and work_ms must be positive\n");
		return 1;
	}
	if (be == TIMER_NONE) {
		printf("tick: FAIL no timer backend (hv %s, clock %s)\n",
		       hv_name(rt_boot.hv), clock_name());
		return 1;
	}
	delivery = delivery_choose();
	if (delivery < 0) {
		printf("tick: FAIL delivery= takes upcall or vector\n");
		return 1;
	}
	irq_set_handler(VEC_TICK, on_tick);
	irq_set_handler(VEC_WORK, on_work);
	irq_set_handler(VEC_FENCE, on_fence);
	if (delivery == DELIVERY_UPCALL) {
		long r = upcall_init();

		if (r < 0) {
			printf("tick: FAIL setting the upcall vector returned %ld\n",
			       r);
			return 1;
		}
		upcall_bind(SLOT_TICK, tick_slot);
		upcall_bind(SLOT_WORK, work_slot);
		bound = TIMER_UPCALL;
		vec_tick = vec_work = 0;
	}
	printf("tick: backend=%s clock=%s delivery=%s: %lu Hz %s tick, %lu ms hard work timer, %lu s\n",
	       timer_backend_name(), clock_name(), delivery_name(delivery),
	       1000000000 / tick_ns,
	       be == TIMER_LULL ? "deferrable" : "LAPIC periodic",
	       work_ns / 1000000, seconds);
	if (be == TIMER_LAPIC)
		printf("tick: LAPIC (%s) timer measured at %lu Hz against %s\n",
		       lapic_mode_name(), lapic_timer_hz(), clock_name());

	cli();
	t0 = clock_ns();
	end_ns = t0 + seconds * 1000000000ull;
	ptrack_init(&work_track, t0 + work_ns, work_ns,
		    shared_page()->slot[SLOT_WORK].merged, samples,
		    MAX_SAMPLES);
	if (be == TIMER_LULL) {
		r1 = lull_timer_set(SLOT_TICK, t0 + tick_ns, vec_tick,
				    LULL_TIMER_DEFERRABLE | LULL_TIMER_PERIODIC |
					    bound,
				    tick_ns, tick_tol_ns);
		r2 = lull_timer_set(SLOT_WORK, t0 + work_ns, vec_work,
				    LULL_TIMER_PERIODIC | bound, work_ns, 0);
	} else {
		r1 = timer_periodic(SLOT_TICK, tick_ns, VEC_TICK, 0);
	}
	if (r1 < 0 || r2 < 0) {
		printf("tick: FAIL arming the timers returned %ld, %ld\n", r1, r2);
		return 1;
	}
	while (!READ_ONCE(done)) {
		sti_hlt();
		cli();
	}
	if (be == TIMER_LULL) {
		/* the work timer first: see account() */
		timer_stop(SLOT_WORK);
		timer_stop(SLOT_TICK);
		account(t0, clock_ns());
	} else {
		timer_stop(SLOT_TICK);
	}

	if (be == TIMER_LULL) {
		struct lull_slot_counters *c = shared_page()->slot;

		printf("tick: tick slot delivered=%lu merged=%lu, work slot delivered=%lu merged=%lu\n",
		       c[SLOT_TICK].delivered, c[SLOT_TICK].merged,
		       c[SLOT_WORK].delivered, c[SLOT_WORK].merged);
		if (delivery == DELIVERY_UPCALL)
			printf("tick: upcalls=%lu empty=%lu\n", upcall_count(),
			       upcall_empty());
	}
	p = percentiles(samples, work_track.n);
	want = seconds * 1000000000ull / work_ns;
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
	if (upcall_unbound()) {
		printf("tick: FAIL %lu upcall bit(s) for slots without a function\n",
		       upcall_unbound());
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
	printf("tick: PASS backend=%s delivery=%s seconds=%lu ticks=%lu work=%lu merged=%lu early=%lu late_p50_ns=%lu late_p99_ns=%lu late_max_ns=%lu\n",
	       timer_backend_name(), delivery_name(delivery), seconds, ticks,
	       works, work_track.skipped,
	       work_track.early,
	       p.p50, p.p99, p.max);
	return 0;
}
