// SPDX-License-Identifier: MIT
/*
 * apic-tick: a guest kernel's tick on the local APIC timer, vCPU 0.
 *
 *   mode=oneshot   (default) a one-shot count re-armed from the handler for
 *                  the next point of the grid t0 + k * period, as a tickless
 *                  kernel's hrtimer tick does
 *   mode=periodic  a periodic timer, armed once
 *   mode=deadline  IA32_TSC_DEADLINE re-armed from the handler (needs
 *                  CPUID.1:ECX[24])
 *   hz=N (default 1000), seconds=N (default 5), x2apic=0 to keep the APIC
 *   in the mode it was found in (default: x2APIC where CPUID offers it),
 *   linger_ms=N (default 300) halted after the "stop" line.
 *
 * The vCPU halts between ticks. It always uses the local APIC, never lull's
 * PV timers: it is there to exercise the APIC of whichever VMM runs it
 * (KVM's in-kernel one under QEMU, lull's own). Without an APIC it SKIPs.
 *
 * Lateness of every tick, in the guest: the handler's clock_ns() (lull's
 * pvclock, kvmclock, or the TSC) minus the tick's ideal deadline, the grid
 * point it stands for. One-shot and deadline: the grid point it was armed
 * for; a handler that runs more than a period late re-arms for the first
 * grid point ahead and counts those in between as missed. Periodic: the
 * grid is t_arm + k * (count / timer rate), the period the APIC was given,
 * and each delivery stands for the oldest tick not yet handled; ticks never
 * delivered are missed (on_periodic() tells them from ones still pending).
 * Under lull's --missed-ticks none (from its CPUID leaf) a delivery stands
 * for the newest tick due instead: the older ones were dropped.
 * A tick handled before its deadline is early: FAIL (except on a clock
 * that may lag the timer's: clock_may_lag_timer()). So
 * is a grid point neither handled nor missed (one may be lost at the end).
 * Lateness percentiles are signed: an early tick is a negative sample.
 *
 * "apic-tick: start" is printed just before the timer is armed and
 * "apic-tick: stop" just after it is stopped, for bench/apic/apic_compare.py
 * to take the host's counters around the ticks alone; then the vCPU halts
 * for linger_ms before it prints the summary (linger()).
 *   apic-tick: PASS mode=oneshot apic=x2apic hz=1000 seconds=5 ticks=..
 *              missed=.. early=0 late_p50_ns=.. late_p99_ns=..
 *              late_max_ns=.. (one line)
 */
#include "guest.h"

#define VEC_TICK 0x40
#define VEC_LINGER 0x41
#define MAX_SAMPLES 131072
#define NSEC_PER_SEC 1000000000ull

enum mode { ONESHOT, PERIODIC, DEADLINE };

static const char *const mode_names[] = { "oneshot", "periodic", "deadline" };

static enum mode mode;
static unsigned policy; /* LULL_MISSED_* for periodic deliveries */
static uint64_t first, period, end_ns;
static uint64_t k; /* the oldest grid point neither handled nor missed */
static uint64_t due_before; /* grid points due at the last handler */
static uint64_t ticks, missed, early, worst_early, first_early_at;
static bool done, lingered;
/*
 * Lateness, signed (an early tick is a negative sample, so that a clock
 * that disagrees with the timer shows in the percentiles too), stored
 * with the sign bit flipped: unsigned order is then signed order, and
 * the runtime's sort_u64() sorts them.
 */
static uint64_t samples[MAX_SAMPLES];
static size_t nsamples;
#define SIGN_FLIP (1ull << 63)

static void record(uint64_t now, uint64_t deadline)
{
	if (now < deadline) {
		if (!early++)
			first_early_at = now;
		if (deadline - now > worst_early)
			worst_early = deadline - now;
	}
	if (nsamples < MAX_SAMPLES)
		samples[nsamples++] = (now - deadline) ^ SIGN_FLIP;
}

static int64_t unflip(uint64_t v)
{
	return (int64_t)(v ^ SIGN_FLIP);
}

/*
 * Whether a tick may look early because the clock, not the APIC, is off.
 * A pvclock record with the TSC-stable flag (lull's or kvmclock: a fixed
 * TSC offset to the host clock the VMM's timers run on) keeps a fixed
 * offset to the timer's time base. Without it (the host's TSCs
 * unsynchronized, as in tests/nested/lull-nested) the record is
 * re-anchored as the host catches the guest's TSC up, and was measured
 * there wandering against the VMM's timer by up to ±0.5 ms within a run,
 * kvmclock and lull's pvclock alike, with an occasional reading a
 * millisecond or two ahead of the next (the runtime keeps clock_ns()
 * monotonic, so the next ones stall): periodic ticks against their
 * absolute grid look early all the time, and now and then a one-shot
 * armed from the high reading does. The runtime's own TSC record (no
 * hypervisor clock: TCG) runs at a measured rate, off by its ppm error,
 * which only an absolute grid sees. On those clocks early ticks are
 * reported, not failed (docs/guests.md).
 */
static bool clock_may_lag_timer(void)
{
	if (clock_source() == CLOCK_TSC)
		return mode == PERIODIC;
	return !(shared_page()->clock.flags & LULL_PVCLOCK_TSC_STABLE);
}

/* The next tick: the one register write a tickless kernel makes per tick. */
static void arm(uint64_t deadline)
{
	uint64_t now;

	if (mode == DEADLINE) {
		lapic_set_tsc_deadline(clock_tsc_at(deadline));
		return;
	}
	now = clock_ns();
	lapic_timer_set_count(lapic_ns_to_count(deadline > now ? deadline - now :
								 0));
}

/* Grid points at or before now, from the first: (now - first) / period + 1. */
static uint64_t due_by(uint64_t now)
{
	return now < first ? 0 : (now - first) / period + 1;
}

/*
 * A periodic delivery is charged to the oldest tick not yet charged. Which
 * of the ticks that were due at a handler but not charged then were merged
 * into it, and which are still to come, shows at the next delivery: the
 * APIC holds one interrupt in service and one more in the IRR (and lull's
 * "all" policy owes any number), so one that comes before the next grid
 * point was already pending; one that comes after it means nothing was,
 * and the ticks left uncharged were merged (missed).
 */
static void on_periodic(uint64_t now)
{
	uint64_t due = due_by(now);

	if (policy == LULL_MISSED_NONE && due > k) {
		/* lull drops late ticks: this is the newest */
		missed += due - 1 - k;
		k = due - 1;
	} else if (due > due_before && k < due_before) {
		missed += due_before - k;
		k = due_before;
	}
	record(now, first + k * period);
	k++;
	due_before = due;
}

static void on_tick(unsigned vector)
{
	uint64_t now = clock_ns(), due;

	(void)vector;
	ticks++;
	if (mode == PERIODIC) {
		on_periodic(now);
	} else {
		record(now, first + k * period);
		/* re-armed for the next grid point ahead, as hrtimer_forward() */
		due = due_by(now);
		if (due > k + 1)
			missed += due - k - 1;
		k = due > k + 1 ? due : k + 1;
	}
	if (now >= end_ns)
		WRITE_ONCE(done, true);
	else if (mode != PERIODIC)
		arm(first + k * period);
	lapic_eoi();
}

static void on_linger(unsigned vector)
{
	(void)vector;
	WRITE_ONCE(lingered, true);
	lapic_eoi();
}

/*
 * A harness reads the host's counters when the "stop" line arrives; the
 * vCPU stays halted a while longer, so that its thread is still there to
 * be read and what comes next (the summary's port writes) is outside.
 */
static void linger(uint64_t ms)
{
	if (!ms)
		return;
	lapic_timer_start(VEC_LINGER, lapic_ns_to_count(ms * 1000000), false);
	while (!READ_ONCE(lingered)) {
		sti_hlt();
		cli();
	}
	lapic_timer_stop();
}

int guest_main(void)
{
	uint64_t seconds = cmdline_u64("seconds", 5);
	uint64_t hz = cmdline_u64("hz", 1000);
	bool want_x2apic = cmdline_u64("x2apic", 1) != 0;
	uint64_t linger_ms = cmdline_u64("linger_ms", 300);
	uint64_t t0, want, count = 0;
	int64_t p50 = 0, p99 = 0, max = 0;
	bool ok;

	if (cmdline_has("mode=periodic")) {
		mode = PERIODIC;
	} else if (cmdline_has("mode=deadline")) {
		mode = DEADLINE;
	} else if (cmdline_has("mode") && !cmdline_has("mode=oneshot")) {
		printf("apic-tick: FAIL mode= takes oneshot, periodic or deadline\n");
		return 1;
	}
	if (!hz || hz > 100000 || !seconds) {
		printf("apic-tick: FAIL hz must be 1..100000 and seconds positive\n");
		return 1;
	}
	if (!clock_available()) {
		printf("apic-tick: FAIL no clock (hv %s)\n", hv_name(rt_boot.hv));
		return 1;
	}
	ok = want_x2apic ? lapic_init_x2apic() : lapic_init();
	if (!ok) {
		printf("apic-tick: SKIP needs a local APIC (hv %s, CPUID.1:EDX[9] clear)\n",
		       hv_name(rt_boot.hv));
		return RT_EXIT_SKIP;
	}
	if (mode == DEADLINE && !lapic_has_tsc_deadline()) {
		printf("apic-tick: SKIP mode=deadline needs the TSC-deadline timer (hv %s, CPUID.1:ECX[24] clear)\n",
		       hv_name(rt_boot.hv));
		return RT_EXIT_SKIP;
	}
	policy = rt_boot.hv == HV_LULL ? lull_info.missed_policy :
					 LULL_MISSED_ONE;
	period = NSEC_PER_SEC / hz;
	if (mode == PERIODIC) {
		/*
		 * The grid is the period the APIC was given, count / rate
		 * rounded down (a grid that runs late would hide early ticks;
		 * one that runs early only shows them late).
		 */
		count = lapic_ns_to_count(period);
		period = count * NSEC_PER_SEC / lapic_timer_hz();
	}
	irq_set_handler(VEC_TICK, on_tick);
	irq_set_handler(VEC_LINGER, on_linger);
	printf("apic-tick: hv=%s clock=%s apic=%s timer %lu Hz (%s, measured %lu Hz)\n",
	       hv_name(rt_boot.hv), clock_name(), lapic_mode_name(),
	       lapic_timer_hz(), lapic_timer_hz_source(),
	       lapic_timer_hz_measured());
	printf("apic-tick: mode=%s hz=%lu seconds=%lu period_ns=%lu missed-ticks=%s\n",
	       mode_names[mode], hz, seconds, period,
	       policy == LULL_MISSED_ALL ? "all" :
	       policy == LULL_MISSED_NONE ? "none" : "one");
	printf("apic-tick: start\n");

	cli();
	t0 = clock_ns();
	first = t0 + period;
	end_ns = t0 + seconds * NSEC_PER_SEC;
	switch (mode) {
	case PERIODIC:
		/* t0 is read before the write that starts the count: every
		 * real expiry is at or after its grid point */
		lapic_timer_start(VEC_TICK, (uint32_t)count, true);
		break;
	case DEADLINE:
		lapic_deadline_start(VEC_TICK);
		arm(first);
		break;
	default:
		lapic_timer_start(VEC_TICK, lapic_ns_to_count(period), false);
		break;
	}
	while (!READ_ONCE(done)) {
		sti_hlt();
		cli();
	}
	lapic_timer_stop();
	printf("apic-tick: stop\n");
	linger(linger_ms);
	/* nothing is still to come for the ticks due at the last delivery */
	if (mode == PERIODIC && k < due_before) {
		missed += due_before - k;
		k = due_before;
	}

	sort_u64(samples, nsamples);
	if (nsamples) {
		/* nearest rank, as the runtime's percentiles() */
		p50 = unflip(samples[(nsamples * 50 + 99) / 100 - 1]);
		p99 = unflip(samples[(nsamples * 99 + 99) / 100 - 1]);
		max = unflip(samples[nsamples - 1]);
	}
	want = seconds * hz;
	if (irq_unexpected_count()) {
		printf("apic-tick: FAIL %lu interrupt(s) on vectors without a handler\n",
		       irq_unexpected_count());
		return 1;
	}
	if (early) {
		bool excused = clock_may_lag_timer();

		printf("apic-tick: %s%lu tick(s) before their deadline, the first %lu ms in, by up to %lu ns%s\n",
		       excused ? "" : "FAIL ", early,
		       (first_early_at - t0) / 1000000, worst_early,
		       excused ? " (on a clock that may lag the timer's: not failed)" :
				 "");
		if (!excused)
			return 1;
	}
	if (ticks + missed + 1 < want) {
		printf("apic-tick: FAIL %lu ticks handled and %lu missed, want %lu\n",
		       ticks, missed, want);
		return 1;
	}
	printf("apic-tick: PASS mode=%s apic=%s hz=%lu seconds=%lu ticks=%lu missed=%lu early=%lu spurious=%lu late_p50_ns=%ld late_p99_ns=%ld late_max_ns=%ld\n",
	       mode_names[mode], lapic_mode_name(), hz, seconds, ticks, missed,
	       early, lapic_spurious_count(), p50, p99, max);
	return 0;
}
